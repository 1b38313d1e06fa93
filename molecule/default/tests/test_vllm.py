"""Verify the engine stage: two ranks serving, untouched by a re-run, keyed API."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import requests

PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3]))
INVENTORY = PROJECT / "inventory" / "lab"
KEY_FILE = PROJECT / ".cache" / "lab" / "vllm-api-key"
ENGINES = {"node0": "gb10-lab-node0-vllm", "node1": "gb10-lab-node1-vllm"}
MODEL = "gb10-lab/tiny-llama"


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
    return f"http://{address}:8000"


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


def test_the_api_answers_with_the_key_only():
    key = KEY_FILE.read_text().strip()
    models = requests.get(
        f"{head_url()}/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert models.status_code == 200
    assert [model["id"] for model in models.json()["data"]] == [MODEL]
    assert requests.get(f"{head_url()}/v1/models", timeout=30).status_code == 401


def test_site_left_a_bench_report_of_the_running_deployment():
    fingerprint = engine("node0")["Config"]["Labels"]["io.gb10-serving.deployment"]
    reports = sorted((PROJECT / "reports").glob(f"*-{fingerprint[:12]}/bench.json"))
    assert reports, "site.yml measured nothing for the running deployment"
    report = json.loads(reports[-1].read_text())
    assert report["deployment"]["fingerprint"] == fingerprint
    assert [run["concurrency"] for run in report["runs"]] == [1, 4, 8, 16]
    assert all(run["output_throughput"] > 0 for run in report["runs"])
