"""Verify the engine stage as the production-shaped inventory deploys it: two ranks serving
the recipe's served name on the moved ports, vaulted keys, untouched by the re-run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).parents[3] / "lab"))
from production import read_vault  # noqa: E402 (lab/production.py)

PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3]))
ENGINES = {"node0": "gb10-lab-node0-vllm", "node1": "gb10-lab-node1-vllm"}
# inventory/lab-production/group_vars/gb10_cluster/10-production.yml
SERVED = "team-coder"
PORT = 8100
MASTER_PORT = 29600
STATE = PROJECT / ".cache" / "lab" / "production"
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))


def inspect(container: str) -> dict:
    out = subprocess.run(
        ["docker", "inspect", container], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)[0]


def engine(name: str) -> dict:
    """The engine container as the lab's Docker engine reports it."""
    return inspect(ENGINES[name])


def head_url() -> str:
    out = subprocess.run(
        ["docker", "inspect", "gb10-lab-node0"], capture_output=True, text=True, check=True
    ).stdout
    address = json.loads(out)[0]["NetworkSettings"]["Networks"]["gb10-lab-mgmt"]["IPAddress"]
    return f"http://{address}:{PORT}"


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_engine_runs_in_its_node_namespaces_as_the_container_uid(name):
    info = engine(name)
    assert info["State"]["Running"]
    assert info["RestartCount"] == 0
    assert info["Config"]["User"] == "1000:1000"
    # Docker records the namespace's container by its ID.
    node_id = inspect(f"gb10-lab-{name}")["Id"]
    assert info["HostConfig"]["NetworkMode"] == f"container:{node_id}"
    assert info["HostConfig"]["IpcMode"] == f"container:{node_id}"
    assert info["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
    binds = [f"/var/lib/gb10-lab/{name}/huggingface:/cache/huggingface:rw"]
    if name == "node0":
        # The lab has API users: the head reads every key from a file, read-only.
        binds.append(
            "/var/lib/gb10-lab/node0/secrets/vllm-api-keys.yaml"
            ":/etc/gb10-serving/vllm-api-keys.yaml:ro"
        )
    assert info["HostConfig"]["Binds"] == binds


def test_both_engines_carry_the_same_deployment_fingerprint():
    labels = [engine(name)["Config"]["Labels"] for name in sorted(ENGINES)]
    fingerprints = {label["io.gb10-serving.deployment"] for label in labels}
    assert len(fingerprints) == 1
    assert len(fingerprints.pop()) == 64
    assert [label["io.gb10-serving.rank"] for label in labels] == ["0", "1"]


def test_the_engines_were_not_re_created_by_the_idempotence_run():
    recorded = json.loads((EPHEMERAL / "engines.json").read_text())
    assert recorded == {name: engine(name)["Id"] for name in ENGINES}


def test_the_master_port_is_the_inventory_s():
    for name in ENGINES:
        argv = engine(name)["Config"]["Cmd"]
        assert argv[argv.index("--master-port") + 1] == str(MASTER_PORT), argv


@pytest.mark.parametrize("key_name", ["vault_vllm_api_key", "vault_bob_api_key"])
def test_the_api_answers_the_served_name_to_the_vaulted_keys_only(key_name):
    key = read_vault()[key_name]
    models = requests.get(
        f"{head_url()}/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert models.status_code == 200
    assert [model["id"] for model in models.json()["data"]] == [SERVED]
    answer = requests.post(
        f"{head_url()}/v1/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json={"model": SERVED, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4},
        timeout=120,
    )
    assert answer.status_code == 200, answer.text
    assert requests.get(f"{head_url()}/v1/models", timeout=30).status_code == 401


def test_nothing_answers_on_the_default_port_any_more():
    with pytest.raises(requests.ConnectionError):
        requests.get(head_url().replace(f":{PORT}", ":8000") + "/health", timeout=10)


def test_a_given_key_reads_and_writes_no_key_file():
    assert not (STATE / "vllm-api-key").exists()


def test_the_clients_ask_for_the_served_name_on_the_moved_port():
    for user in ("alice", "bob"):
        client = json.loads((STATE / "clients" / user / "client.json").read_text())
        assert client["model"] == SERVED
        assert client["base_url"].endswith(f":{PORT}/v1")
    bob = (STATE / "clients" / "bob" / "api-key").read_text().strip()
    assert bob == read_vault()["vault_bob_api_key"]


def test_site_left_a_bench_report_of_the_running_deployment():
    fingerprint = engine("node0")["Config"]["Labels"]["io.gb10-serving.deployment"]
    reports = sorted((PROJECT / "reports").glob(f"*-{fingerprint[:12]}/bench.json"))
    assert reports, "site.yml measured nothing for the running deployment"
    report = json.loads(reports[-1].read_text())
    assert report["deployment"]["fingerprint"] == fingerprint
    # The bench asked for the served name: a request naming the checkpoint fails.
    assert [run["concurrency"] for run in report["runs"]] == [1]
    assert all(run["output_throughput"] > 0 for run in report["runs"])
    assert all(run["failed_requests"] == 0 for run in report["runs"])
