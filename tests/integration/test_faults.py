"""Faults, as a matrix: each one fails the play with its cause, loses nothing, and the next
run converges. Every case runs in the lab, for real:

| fault                        | how the lab makes it                                   |
|------------------------------|--------------------------------------------------------|
| a node unreachable at start  | the node container is paused (its engine runs on)      |
| the engine crashing mid-run  | the worker's engine is killed while the cluster boots  |
| an interrupted download      | the download container is killed mid-file (lab hub)    |
| the fabric link down         | the host end of node1's cable is set down              |
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time

from conftest import NODE_CONTAINERS, ROOT, PlaybookRun, run_playbook
from test_fabric import FABRIC_IF, cable_end, host_link
from test_vllm import ENGINES, LOG_DIR, api_key, chat, engines_state

SITE = ROOT / "site.yml"


def assert_failed_with(run: PlaybookRun, *fragments: str) -> None:
    assert run.status == "failed"
    joined = "\n".join(run.failure_messages)
    for fragment in fragments:
        assert fragment in joined, joined


def assert_converges(tmp_path, *, restarts: bool) -> PlaybookRun:
    """The next site.yml succeeds and the API answers; without restarts, nothing changes."""
    before = engines_state()
    run = run_playbook(SITE, tmp_path / "next")
    assert run.status == "successful", run.failure_messages
    if not restarts:
        assert run.count("changed") == 0
        assert engines_state() == before
    assert chat(api_key()).status_code == 200
    return run


@contextlib.contextmanager
def paused(container: str):
    subprocess.run(["docker", "pause", container], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["docker", "unpause", container], check=True, capture_output=True)


def test_a_node_unreachable_at_the_start_changes_nothing_anywhere(converged, tmp_path):
    before = engines_state()
    with paused(NODE_CONTAINERS["node1"]):
        run = run_playbook(SITE, tmp_path / "unreachable")
    assert_failed_with(run, "node1", "did not answer", "Nothing has been changed")
    assert run.count("changed") == 0
    assert engines_state() == before
    assert_converges(tmp_path, restarts=False)


def started_at(container: str) -> str:
    return subprocess.run(
        ["docker", "inspect", "-f", "{{.State.StartedAt}}", container],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def test_the_engine_crashing_mid_run_fails_with_its_cause_and_stops_the_cluster(
    converged, tmp_path
):
    worker = ENGINES["node1"]
    first_start = started_at(worker)
    existing = set(LOG_DIR.iterdir()) if LOG_DIR.exists() else set()
    result = {}
    # A changed engine environment is a new deployment: site.yml restarts both engines and
    # waits for them to boot. The worker is killed (SIGKILL, as the kernel's OOM killer does)
    # a few seconds into that boot.
    runner = threading.Thread(
        target=lambda: result.setdefault(
            "run",
            run_playbook(
                SITE,
                tmp_path / "crash",
                extravars={"vllm_recipe_overrides": {"env": {"GB10_FAULT_CASE": "crash"}}},
            ),
        )
    )
    runner.start()
    deadline = time.monotonic() + 240
    while started_at(worker) in ("", first_start) and time.monotonic() < deadline:
        time.sleep(1)
    assert started_at(worker) not in ("", first_start), "site.yml did not restart the worker"
    time.sleep(5)
    subprocess.run(["docker", "kill", worker], check=True, capture_output=True)
    runner.join(timeout=600)
    run = result["run"]
    assert_failed_with(run, "The engine did not start", "node1 (exited, exit code 137)")
    # Nothing half-started is left serving, and both logs are kept on the controller.
    assert not any(state and state[2] for state in engines_state().values())
    saved = sorted(set(LOG_DIR.iterdir()) - existing)
    assert len(saved) == 1
    assert {path.name for path in saved[0].iterdir()} == {"node0.log", "node1.log"}
    next_run = assert_converges(tmp_path, restarts=True)
    assert any("node1: the engine is exited" in msg for msg in next_run.debug_messages)
    # Starting containers returns their environment: the key must not reach the output.
    assert api_key() not in json.dumps(next_run.events_data)


def test_the_fabric_link_down_is_named_and_the_next_run_converges(converged, tmp_path):
    # Pull the cable: the host end of node1's cable goes down, node1's port loses carrier.
    with host_link(cable_end("node1"), "down", restore=("up",)):
        run = run_playbook(SITE, tmp_path / "down", extravars={"fabric_link_timeout": 4})
    assert_failed_with(run, f"The fabric link {FABRIC_IF} on node1 is", "check the cable")
    # The play stopped at the fabric stage: the engines were not touched.
    assert run.count("changed") == 0
    assert_converges(tmp_path, restarts=False)
