"""Node stage on the lab: cache ownership, the secret token, the same snapshot everywhere."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from conftest import (
    NODE_CONTAINERS,
    ROOT,
    run_playbook,
)

NODE = ROOT / "playbooks" / "node.yml"
UID = 1000
# Stands for a real token; it must appear nowhere in any output or readable file.
TOKEN = "hf_gb10TestTokenDoNotPrint7f3a9c"  # noqa: S105 (a fake token for the leak test)


def cache_dir(node: str) -> str:
    return f"/var/lib/gb10-lab/{node}/huggingface"


def node_sh(node: str, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["docker", "exec", NODE_CONTAINERS[node], "sh", "-c", script],
        capture_output=True,
        text=True,
        check=False,
    )


def owner(node: str, path: str) -> tuple[int, int]:
    out = node_sh(node, f"stat -c '%u %g' '{path}'").stdout.split()
    return int(out[0]), int(out[1])


def snapshot_file(node: str, name: str) -> str:
    """Path of a file in the lab model's snapshot (following refs/main)."""
    repo = f"{cache_dir(node)}/hub/models--gb10-lab--tiny-llama"
    commit = node_sh(node, f"cat {repo}/refs/main").stdout.strip()
    return f"{repo}/snapshots/{commit}/{name}"


@pytest.mark.parametrize("node", sorted(NODE_CONTAINERS))
def test_cache_and_jit_dirs_belong_to_the_container_uid(converged, node):
    for sub in (
        "",
        "/jitcache",
        "/jitcache/triton",
        "/jitcache/torch_extensions",
        "/jitcache/vllm",
        "/jitcache/flashinfer",
        "/jitcache/tvm-ffi",
        "/hub",
    ):
        assert owner(node, cache_dir(node) + sub) == (UID, UID), sub


def test_ownership_repair_touches_only_what_is_wrong(converged, tmp_path):
    stray = f"{cache_dir('node1')}/jitcache/vllm/left-by-root"
    assert node_sh("node1", f"touch {stray} && chown 0:0 {stray}").returncode == 0
    run = run_playbook(NODE, tmp_path / "repair")
    assert run.status == "successful", run.failure_messages
    assert run.stats["changed"].get("node1", 0) == 1
    assert run.stats["changed"].get("node0", 0) == 0
    assert owner("node1", stray) == (UID, UID)
    again = run_playbook(NODE, tmp_path / "again")
    assert again.count("changed") == 0


def token_file(node: str) -> str:
    """node_hf_token_file in the lab inventory: outside the cache the engine mounts."""
    return f"/var/lib/gb10-lab/{node}/secrets/hf-token"


def test_token_is_written_for_the_uid_and_never_shown(converged, tmp_path):
    """The token (node_hf_token) goes to node_hf_token_file, for the container UID only and
    outside the cache the engine mounts; none is left in the cache; an emptied token
    removes the file."""
    for node in NODE_CONTAINERS:
        # A token an earlier version (or a hand) left in the cache, which the engine sees.
        assert node_sh(node, f"echo old > {cache_dir(node)}/token").returncode == 0
    run = run_playbook(NODE, tmp_path, extravars={"node_hf_token": TOKEN}, verbosity=4, diff=True)
    assert run.status == "successful", run.failure_messages
    assert TOKEN not in run.stdout
    assert TOKEN not in json.dumps(run.events_data)
    for node in NODE_CONTAINERS:
        assert node_sh(node, f"cat {token_file(node)}").stdout == TOKEN
        assert node_sh(node, f"stat -c '%a %u' {token_file(node)}").stdout.split() == [
            "600",
            str(UID),
        ]
        assert node_sh(node, f"test -e {cache_dir(node)}/token").returncode == 1
    emptied = run_playbook(NODE, tmp_path / "emptied")
    assert emptied.status == "successful", emptied.failure_messages
    for node in NODE_CONTAINERS:
        assert node_sh(node, f"test -e {token_file(node)}").returncode == 1


def test_differing_snapshots_stop_the_play_naming_the_file(converged, tmp_path):
    config = snapshot_file("node1", "config.json")
    assert (
        node_sh(
            "node1",
            f"cp --remove-destination $(readlink -f {config}) {config} && echo ' ' >> {config}",
        ).returncode
        == 0
    )
    run = run_playbook(NODE, tmp_path / "differ")
    assert run.status == "failed"
    joined = "\n".join(run.failure_messages)
    assert "differ" in joined
    assert "config.json" in joined
    # The fix the message gives: delete the wrong node's snapshot folder and re-run.
    assert "delete its snapshot folder" in joined
    assert node_sh("node1", f"rm -rf $(dirname {config})").returncode == 0
    fixed = run_playbook(NODE, tmp_path / "fixed")
    assert fixed.status == "successful", fixed.failure_messages


def test_root_follows_no_link_the_container_uid_planted_in_the_jit_cache(converged, tmp_path):
    """The container UID owns the cache: a link it puts where the JIT root (node1) or a JIT
    dir (node0) belongs stops the node stage, and nothing the links point at changes."""
    planted = {"node1": "jitcache", "node0": "jitcache/triton"}
    for node, entry in planted.items():
        path = f"{cache_dir(node)}/{entry}"
        outside = f"/var/lib/gb10-lab/{node}/outside"
        script = (
            f"mkdir -p {outside} && chown 0:0 {outside} && chmod 0700 {outside}"
            f" && mv {path} {path}.saved && ln -s {outside} {path}"
        )
        assert node_sh(node, script).returncode == 0
    try:
        run = run_playbook(NODE, tmp_path)
        assert run.status == "failed"
        joined = "\n".join(run.failure_messages)
        for node, entry in planted.items():
            assert f"On {node}, {cache_dir(node)}/{entry} is a symlink" in joined, joined
            # Neither given to the UID nor filled with the JIT dirs.
            outside = f"/var/lib/gb10-lab/{node}/outside"
            assert node_sh(node, f"stat -c '%a %u %g' {outside}").stdout.split() == [
                "700",
                "0",
                "0",
            ]
            assert node_sh(node, f"ls -A {outside}").stdout == ""
    finally:
        for node, entry in planted.items():
            path = f"{cache_dir(node)}/{entry}"
            outside = f"/var/lib/gb10-lab/{node}/outside"
            node_sh(node, f"rm -f {path} && mv {path}.saved {path} && rmdir {outside}")


def test_failed_download_follows_progress_and_quotes_the_cli(converged, tmp_path):
    """The real download path (hf in a container as the UID), kept offline: it must fail.
    On node1 the UID has put a link to a root-only file where the download's log goes:
    root reads the log for the failure message and must not quote that file."""
    log = f"{cache_dir('node1')}/.gb10-download.log"
    root_only = "/var/lib/gb10-lab/node1/root-only"
    script = (
        f"printf 'SECRET-{TOKEN}\\n' > {root_only} && chmod 0600 {root_only}"
        f" && rm -f {log} && ln -s {root_only} {log}"
    )
    assert node_sh("node1", script).returncode == 0
    try:
        run = failed_offline_download(tmp_path)
        assert TOKEN not in run.stdout
        assert TOKEN not in "\n".join(run.failure_messages)
        assert f"{log}: a symlink, which is never followed: not read" in "\n".join(
            run.failure_messages
        )
        assert node_sh("node1", f"cat {root_only}").stdout == f"SECRET-{TOKEN}\n"
    finally:
        node_sh("node1", f"rm -f {log} {root_only}")


def failed_offline_download(tmp_path):
    run = run_playbook(
        NODE,
        tmp_path,
        extravars={
            "node_model": "gb10-lab/not-in-the-cache",
            "node_lab_generate_model": False,
            # Offline: the lab must not reach out to a hub; hf then fails at once.
            "node_download_env": {"HF_HUB_OFFLINE": "1"},
            "node_download_poll": 1,
            "node_download_timeout": 10,
        },
    )
    assert run.status == "failed"
    progress = r"not-in-the-cache: 0\.0 GB on disk after \d+ s, \d+ polls \(done\)"
    assert re.search(progress, run.stdout)
    joined = "\n".join(run.failure_messages)
    assert "The download of gb10-lab/not-in-the-cache@main on node0 failed" in joined
    assert "re-running fetches what is still missing" in joined
    assert "Last lines:" in joined
    assert "offline" in joined.lower()
    return run
