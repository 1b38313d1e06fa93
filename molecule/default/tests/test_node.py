"""Verify the node stage's real state on both lab nodes after converge."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _lab import lab_host

sys.path.insert(0, str(Path(__file__).parents[3] / "lab"))
from production import read_vault  # noqa: E402 (lab/production.py)

UID = 1000
JIT = ("triton", "torch_extensions", "vllm", "flashinfer", "tvm-ffi")
# The production-shaped inventory's checkpoint, downloaded from the lab hub.
REPO = "hub/models--gb10-lab--tiny-coder"


def cache(name: str) -> str:
    return f"/var/lib/gb10-lab/{name}/huggingface"


@pytest.fixture(scope="module", params=["node0", "node1"])
def lab_node(request):
    return request.param, lab_host(request.param)


def test_cache_and_six_jit_dirs_belong_to_the_container_uid(lab_node):
    name, host = lab_node
    for sub in ["", "/jitcache"] + [f"/jitcache/{d}" for d in JIT]:
        directory = host.file(cache(name) + sub)
        assert directory.is_directory, sub
        assert (directory.uid, directory.gid) == (UID, UID), sub
        assert directory.mode == 0o755, sub


def test_nothing_in_the_cache_belongs_to_anyone_else(lab_node):
    name, host = lab_node
    strays = host.check_output(f"find {cache(name)} ! -uid {UID} -o ! -gid {UID}")
    assert strays == ""


def test_engine_cache_environment_points_into_the_mounted_cache(lab_node):
    _name, host = lab_node
    env_file = host.file("/etc/gb10-serving/node.env")
    assert env_file.mode == 0o644
    lines = [ln for ln in env_file.content_string.splitlines() if ln and not ln.startswith("#")]
    assert dict(ln.split("=", 1) for ln in lines) == {
        "HF_HOME": "/cache/huggingface",
        "XDG_CACHE_HOME": "/cache/huggingface/jitcache",
        "TRITON_CACHE_DIR": "/cache/huggingface/jitcache/triton",
        "TORCH_EXTENSIONS_DIR": "/cache/huggingface/jitcache/torch_extensions",
        "VLLM_CACHE_DIR": "/cache/huggingface/jitcache/vllm",
        "FLASHINFER_WORKSPACE_BASE": "/cache/huggingface/jitcache/flashinfer",
        "TVM_FFI_CACHE_DIR": "/cache/huggingface/jitcache/tvm-ffi",
    }


def test_both_nodes_hold_the_same_complete_snapshot():
    manifests = {}
    for name in ("node0", "node1"):
        host = lab_host(name)
        repo = f"{cache(name)}/{REPO}"
        commit = host.file(f"{repo}/refs/main").content_string.strip()
        assert len(commit) == 40
        listing = host.check_output(
            f"cd {repo}/snapshots/{commit} && find -L . -type f -printf '%P %s\\n' | sort"
        )
        assert "config.json" in listing
        assert host.check_output(f"find {repo}/blobs -name '*.incomplete'") == ""
        manifests[name] = (commit, listing)
    assert manifests["node0"] == manifests["node1"]


def test_the_vaulted_token_is_for_the_container_uid_only(lab_node):
    """node_hf_token_file: outside the cache the engine mounts, for the container UID only."""
    name, host = lab_node
    token = host.file(f"/var/lib/gb10-lab/{name}/secrets/hf-token")
    assert (token.uid, token.gid, token.mode) == (UID, UID, 0o600)
    assert token.content_string.strip() == read_vault()["vault_hf_token"]
    assert not host.file(f"{cache(name)}/token").exists
