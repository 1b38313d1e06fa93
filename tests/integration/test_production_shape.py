"""The path a GB10 owner takes, in the lab: inventory/lab-production.

It makes every choice inventory/production documents on the lab's two nodes: the service key
and a user's key vaulted (ansible-vault, a password file), an HF token, a recipe of its own
with `--served-model-name`, the API and master ports moved, and a checkpoint that is not in
the cache, downloaded through the real path (`hf download` as the container UID) from the
lab hub, paced so that following it takes hundreds of polls. site.yml runs in check mode on
the nodes as they are, then for real, then again: nothing changes and no engine restarts.

Marked `own_inventory`: it runs after the fresh-lab tests and before the lab inventory's
converge, which then replaces this deployment (one engine boot in the suite for this shape).
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys

import pytest
import requests
from conftest import (
    NODE_CONTAINERS,
    REPORTS,
    ROOT,
    SITE,
    assert_no_key_in,
    engines_state,
    run_playbook,
)

sys.path.insert(0, str(ROOT / "lab"))
import production  # noqa: E402 (lab/production.py: the vault and the hub of this shape)

pytestmark = pytest.mark.own_inventory

SERVED = "team-coder"
PORT = 8100
MASTER_PORT = 29600
CLIENT_DIR = ROOT / ".cache" / "lab" / "production" / "clients"
UNUSED_KEY_FILE = ROOT / ".cache" / "lab" / "production" / "vllm-api-key"
CACHE_DIR = "hub/models--gb10-lab--tiny-coder"
# Hundreds of polls: far more than a self-including task file (one include per round)
# survives before ansible-core's RecursionError at about 245.
MIN_ROUNDS = 200


def node_sh(node: str, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["docker", "exec", NODE_CONTAINERS[node], "sh", "-c", script],
        capture_output=True,
        text=True,
        check=False,
    )


def head_url() -> str:
    info = json.loads(
        subprocess.run(
            ["docker", "inspect", NODE_CONTAINERS["node0"]],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )[0]
    return "http://" + info["NetworkSettings"]["Networks"]["gb10-lab-mgmt"]["IPAddress"]


def results_of(run, task: str) -> dict[str, dict]:
    """The result a task returned, per host."""
    return {
        event["event_data"]["host"]: event["event_data"]["res"]
        for event in run.events_data
        if event.get("event") == "runner_on_ok" and event["event_data"].get("task") == task
    }


@pytest.fixture(scope="module")
def shape(tmp_path_factory):
    """The three runs of site.yml with the production-shaped inventory, and what they saw."""
    secrets = production.make_vault()
    # A checkpoint no node holds yet: the download must run on both.
    for node in NODE_CONTAINERS:
        node_sh(node, f"rm -rf /var/lib/gb10-lab/{node}/huggingface/{CACHE_DIR}")
    base = tmp_path_factory.mktemp("production-shape")
    hub_log = base / "hub.log"
    hub = subprocess.Popen(production.hub_command(hub_log), stdout=subprocess.PIPE, text=True)
    try:
        assert "listening on" in hub.stdout.readline()
        runs = {}
        for name, check in (("check", True), ("real", False), ("again", False)):
            runs[name] = run_playbook(
                SITE,
                base / name,
                inventories=(production.INVENTORY,),
                check=check,
                vault_password_file=production.VAULT_PASSWORD_FILE,
            )
            assert runs[name].status == "successful", (name, runs[name].failure_messages)
            if name == "real":
                engines = engines_state()
    finally:
        hub.terminate()
        hub.wait(timeout=30)
    requests_seen = [json.loads(line) for line in hub_log.read_text().splitlines()]
    return {"runs": runs, "engines": engines, "secrets": secrets, "hub": requests_seen}


def test_check_mode_first_changes_nothing(shape):
    check = shape["runs"]["check"]
    # Nothing was downloaded or served by the check run: no node asked the hub before the
    # real run (the hub log holds the real run's requests only, from both nodes).
    assert check.count("failures") == 0
    assert not any("GB on disk after" in line for line in check.stdout.splitlines())


def test_the_download_took_hundreds_of_polls_and_printed_progress(shape):
    real = shape["runs"]["real"]
    followed = results_of(real, "Follow the download")
    assert set(followed) == set(NODE_CONTAINERS), followed.keys()
    for node, result in followed.items():
        assert result["finished"], (node, result)
        assert result["exit_code"] == 0, (node, result)
        assert result["rounds"] >= MIN_ROUNDS, (node, result["rounds"])
        assert f"[{node}] gb10-lab/tiny-coder: " in real.stdout
    assert "(downloading)" in real.stdout
    assert "(done)" in real.stdout
    fetched = [
        entry
        for entry in shape["hub"]
        if entry["method"] == "GET" and entry["path"].endswith("/model.safetensors")
    ]
    assert len(fetched) == 2, fetched
    assert all(entry["complete"] for entry in fetched), fetched


def test_the_api_answers_on_its_port_with_the_served_name_and_the_vaulted_keys(shape):
    secrets = shape["secrets"]
    url = f"{head_url()}:{PORT}"
    for key in (secrets["vault_vllm_api_key"], secrets["vault_bob_api_key"]):
        models = requests.get(
            f"{url}/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=30
        )
        assert models.status_code == 200
        assert [model["id"] for model in models.json()["data"]] == [SERVED]
    answer = requests.post(
        f"{url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {secrets['vault_bob_api_key']}"},
        json={"model": SERVED, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4},
        timeout=120,
    )
    assert answer.status_code == 200, answer.text
    assert requests.get(f"{url}/v1/models", timeout=30).status_code == 401
    # The default port is closed: nothing listens there any more.
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{head_url()}:8000/health", timeout=10)


def test_the_engines_use_the_moved_master_port(shape):
    for node in NODE_CONTAINERS:
        info = json.loads(
            subprocess.run(
                ["docker", "inspect", f"gb10-lab-{node}-vllm"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )[0]
        argv = info["Config"]["Cmd"] or []
        assert argv[argv.index("--master-port") + 1] == str(MASTER_PORT), argv


def test_the_bench_and_the_clients_ask_for_the_served_name(shape):
    # The API knows only the served name (above), so every bench request that named the
    # checkpoint would have failed: the warm-up's 404 fails the run, the bench counts errors.
    fingerprint = json.loads(
        subprocess.run(
            ["docker", "inspect", "gb10-lab-node0-vllm"], capture_output=True, text=True, check=True
        ).stdout
    )[0]["Config"]["Labels"]["io.gb10-serving.deployment"][:12]
    (report,) = REPORTS.glob(f"*-{fingerprint}/bench.json")
    runs = json.loads(report.read_text())["runs"]
    assert runs
    assert all(run["successful_requests"] > 0 for run in runs), runs
    assert all(run["failed_requests"] == 0 for run in runs), runs
    for user in ("alice", "bob"):
        client = json.loads((CLIENT_DIR / user / "client.json").read_text())
        assert client["model"] == SERVED
        assert client["base_url"].endswith(f":{PORT}/v1")
    assert (CLIENT_DIR / "bob" / "api-key").read_text().strip() == shape["secrets"][
        "vault_bob_api_key"
    ]


def test_a_given_key_needs_no_key_file(shape):
    assert not UNUSED_KEY_FILE.exists()


def test_the_token_is_for_the_container_uid_only_and_no_secret_is_shown(shape):
    secrets = shape["secrets"]
    for node in NODE_CONTAINERS:
        out = node_sh(node, f"stat -c '%a %u' /var/lib/gb10-lab/{node}/huggingface/token")
        assert out.stdout.split() == ["600", "1000"], out
    for run in shape["runs"].values():
        assert_no_key_in(run, secrets.values())
    assert stat.S_IMODE(production.VAULT_PASSWORD_FILE.stat().st_mode) == 0o600


def test_the_second_run_changes_nothing_and_restarts_nothing(shape):
    again = shape["runs"]["again"]
    assert again.count("changed") == 0, again.stats.get("changed")
    assert engines_state() == shape["engines"]
    assert all(state and state[2] for state in engines_state().values())
