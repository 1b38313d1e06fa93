"""Faults, as a matrix: each one fails the play with its cause, loses nothing, and the next
run converges. Every case runs in the lab, for real:

| fault                       | how the lab makes it                              | where          |
|-----------------------------|---------------------------------------------------|----------------|
| a node unreachable at start | the node container is paused (its engine runs on) | test_rerun     |
| the engine crashing mid-run | the worker's engine is killed while it boots      | test_lifecycle |
| an interrupted download     | the download container is killed mid-file         | here           |
| the fabric link down        | the host end of node1's cable is set down         | here           |

The first two share runs (a re-run, engine boots) with other tests there.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import (
    NODE_CONTAINERS,
    ROOT,
    SITE,
    PlaybookRun,
    api_key,
    chat,
    engines_state,
    node_sh,
    run_playbook,
)
from test_fabric import FABRIC_IF, cable_end, host_link

NODE = ROOT / "playbooks" / "node.yml"
FABRIC = ROOT / "playbooks" / "fabric.yml"
HUB = ROOT / "lab" / "hub" / "hub.py"
# This machine on the lab's management network (lab/labctl.py MGMT_GATEWAY): the hub listens
# there, where the download container (in its node's network namespace) reaches it.
HUB_ADDRESS = "10.219.0.1"
FAULT_REPO = "gb10-lab/fault-model"
FAULT_DIR = "hub/models--gb10-lab--fault-model"
BIG = "shard-00001.bin"
BIG_SIZE = 16 * 1024 * 1024
PIECE = 10 * 1024 * 1024  # the client writes an unfinished file in pieces of this size


def assert_failed_with(run: PlaybookRun, *fragments: str) -> None:
    assert run.status == "failed"
    joined = "\n".join(run.failure_messages)
    for fragment in fragments:
        assert fragment in joined, joined


def lab_cache(node: str) -> str:
    return f"/var/lib/gb10-lab/{node}/huggingface"


def lay_fault_repo(root):
    """The lab model's files plus one shard big enough to be caught mid-file."""
    repo = root / FAULT_REPO
    repo.mkdir(parents=True)
    snapshot = f"{lab_cache('node0')}/hub/models--gb10-lab--tiny-llama/snapshots"
    tar = subprocess.run(
        [
            "docker",
            "exec",
            NODE_CONTAINERS["node0"],
            "sh",
            "-c",
            f"cd {snapshot}/$(ls {snapshot} | head -n 1) && tar -chf - .",
        ],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-xf", "-", "-C", str(repo)], input=tar, check=True)
    (repo / BIG).write_bytes(os.urandom(BIG_SIZE))
    return repo


@contextlib.contextmanager
def lab_hub(root, log, port=0):
    """lab/hub/hub.py on this machine's management address, paced to 2 MB/s per file."""
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HUB),
            "--root",
            str(root),
            "--bind",
            HUB_ADDRESS,
            "--port",
            str(port),
            "--throttle",
            "2000000",
            "--log",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc.stdout.readline().split()[-1]  # "listening on http://ADDR:PORT"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def partial_size(node: str) -> int:
    blobs = f"{lab_cache(node)}/{FAULT_DIR}/blobs"
    out = node_sh(node, f"stat -c %s {blobs}/*.incomplete 2>/dev/null || true").split()
    return max((int(size) for size in out), default=0)


@pytest.fixture
def fault_model_removed_after(converged, tmp_path):
    yield
    for node in NODE_CONTAINERS:
        node_sh(node, f"rm -rf {lab_cache(node)}/{FAULT_DIR}")
        subprocess.run(
            ["docker", "rm", "-f", f"gb10-lab-{node}-hf-download"], capture_output=True, check=False
        )
    # The lab's own model again (the node's env file names the checkpoint).
    restored = run_playbook(NODE, tmp_path / "restored")
    assert restored.status == "successful", restored.failure_messages


def test_an_interrupted_download_keeps_what_is_complete_and_the_next_run_converges(
    fault_model_removed_after, tmp_path
):
    root, log = tmp_path / "hub", tmp_path / "hub.log"
    lay_fault_repo(root)
    download = {
        "node_model": FAULT_REPO,
        "node_lab_generate_model": False,
        "node_download_poll": 1,
        "node_download_timeout": 300,
    }
    with lab_hub(root, log) as url:
        download["node_download_env"] = {"HF_ENDPOINT": url, "HF_HUB_DISABLE_UPDATE_CHECK": "1"}
        result = {}
        runner = threading.Thread(
            target=lambda: result.setdefault(
                "run", run_playbook(NODE, tmp_path / "cut", extravars=download)
            )
        )
        runner.start()
        # Kill node1's download once a first piece of the big shard is on its disk.
        deadline = time.monotonic() + 240
        while partial_size("node1") < PIECE and time.monotonic() < deadline:
            time.sleep(0.5)
        assert partial_size("node1") >= PIECE, "the download never reached the big shard"
        subprocess.run(["docker", "kill", "gb10-lab-node1-hf-download"], check=True)
        runner.join(timeout=600)
        run = result["run"]
        assert_failed_with(
            run,
            f"The download of {FAULT_REPO}@main on node1 failed (exit code 137)",
            "re-running fetches what is still missing",
        )
        # No ended download container is left behind on either node.
        left = subprocess.run(
            ["docker", "ps", "-aq", "--filter", "name=hf-download"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert left.strip() == ""
        # Nothing lost: node0 finished; node1 keeps every file it had completed.
        complete = node_sh("node1", f"ls {lab_cache('node1')}/{FAULT_DIR}/blobs").split()
        assert [name for name in complete if not name.endswith(".incomplete")]
        first_requests = len(log.read_text().splitlines())

        again = run_playbook(NODE, tmp_path / "again", extravars=download)
        assert again.status == "successful", again.failure_messages
        assert again.stats["changed"].get("node1", 0) > 0
        # Only the unfinished shard crossed the network again, from byte 0 (the client starts
        # an unfinished file over); its killed copy was removed first.
        fetched = [json.loads(line) for line in log.read_text().splitlines()[first_requests:]]
        gets = [
            entry for entry in fetched if entry["method"] == "GET" and "/resolve/" in entry["path"]
        ]
        assert [entry["path"].rsplit("/", 1)[-1] for entry in gets] == [BIG]
        assert partial_size("node1") == 0
        final = run_playbook(NODE, tmp_path / "final", extravars=download)
        assert final.count("changed") == 0


def test_the_fabric_link_down_is_named_and_the_next_run_converges(converged, tmp_path):
    # Pull the cable: the host end of node1's cable goes down, node1's port loses carrier.
    before = engines_state()
    timeout = 4  # fabric_link_timeout: seconds, not the default 30
    with host_link(cable_end("node1"), "down", restore=("up",)):
        run = run_playbook(SITE, tmp_path / "down", extravars={"fabric_link_timeout": timeout})
    assert_failed_with(
        run, f"The fabric link {FABRIC_IF} on node1 is", f"after {timeout} s:", "check the cable"
    )
    # The play stopped at the fabric stage (having applied node1's port configuration again,
    # which networkd dropped with the carrier): the engines were not touched.
    assert engines_state() == before
    # The cable back, the fabric stage (where the run stopped) passes its link checks again;
    # the engines were never touched and still serve. (A whole site.yml after a fabric fix is
    # the re-run that test_rerun.py proves changes nothing.)
    again = run_playbook(FABRIC, tmp_path / "next")
    assert again.status == "successful", again.failure_messages
    assert engines_state() == before
    assert chat(api_key()).status_code == 200
