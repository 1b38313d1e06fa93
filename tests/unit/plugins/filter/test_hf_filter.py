# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.compare_snapshots: the module's results of two nodes, compared.

The inputs are what hf_snapshot_info returns on each node (its inspect() on caches laid
out as huggingface_hub lays them out, see HubCache in the module_utils tests), or bare
manifests from module_utils._hf_cache.
"""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.hf import FilterModule
from ansible_collections.gb10.serving.plugins.module_utils._hf_cache import compare_manifests
from ansible_collections.gb10.serving.plugins.modules.hf_snapshot_info import inspect
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.test_hf_cache import (
    CHECKPOINT,
    COMMIT_MAIN,
    COMMIT_V1,
    REPO_ID,
    complete_cache,
    etag_of,
    manifest_of,
)

NODES = ("node0", "node1")
SHARD = "model-00002-of-00002.safetensors"


def compare_snapshots(value):
    return FilterModule().filters()["compare_snapshots"](value)


@pytest.fixture
def caches(tmp_path):
    """node -> HubCache of identical, complete downloads under <node>/hf_home."""
    return {node: complete_cache(tmp_path / node / "hf_home" / "hub") for node in NODES}


def results(caches, revision="main"):
    """What hf_snapshot_info registers on every node."""
    return {
        node: inspect(str(cache.hub.parent), REPO_ID, revision, "model")
        for node, cache in caches.items()
    }


def test_identical_nodes_have_no_differences(caches):
    registered = results(caches)
    assert all(result["present"] for result in registered.values())
    assert compare_snapshots(registered) == []


def test_uses_the_module_utils_comparison(caches):
    caches["node1"].incomplete(b"another shard")
    registered = results(caches)
    assert compare_snapshots(registered) == compare_manifests(registered)


def test_accepts_bare_manifests(caches):
    assert compare_snapshots({node: manifest_of(cache) for node, cache in caches.items()}) == []


def test_different_revisions(caches):
    registered = results(caches)
    registered["node1"] = results(caches, revision="v1.0")["node1"]
    differences = compare_snapshots(registered)
    assert differences[0] == f"different commits: node0={COMMIT_MAIN}, node1={COMMIT_V1}"
    assert f"{SHARD}: only on node0 (missing on node1)" in differences


def test_interrupted_download_names_the_file(caches):
    node1 = caches["node1"]
    (node1.repo / "snapshots" / COMMIT_MAIN / SHARD).unlink()
    (node1.repo / "blobs" / etag_of(SHARD, CHECKPOINT[SHARD])).unlink()
    etag = node1.incomplete(CHECKPOINT[SHARD])
    registered = results(caches)
    assert registered["node1"]["present"] is False
    assert compare_snapshots(registered) == [
        f"{SHARD}: only on node0 (missing on node1)",
        f"node1: blobs/{etag}.incomplete: download in progress or interrupted ({SHARD} on node0)",
    ]


def test_size_and_broken_differences(caches):
    rel = "tokenizer/vocab.json"
    (caches["node0"].repo / "blobs" / etag_of(rel, CHECKPOINT[rel])).write_bytes(b"{}")
    (caches["node1"].repo / "blobs" / etag_of(SHARD, CHECKPOINT[SHARD])).unlink()
    assert compare_snapshots(results(caches)) == [
        f"{SHARD}: broken symlink on node1 (blob {etag_of(SHARD, CHECKPOINT[SHARD])} is"
        " missing: interrupted download or deleted blob)",
        f"{rel}: sizes differ: node0=2 bytes, node1={len(CHECKPOINT[rel])} bytes",
    ]


def test_node_without_the_model(caches, tmp_path):
    registered = results(caches)
    registered["node2"] = inspect(str(tmp_path / "node2" / "hf_home"), REPO_ID, "main", "model")
    assert compare_snapshots(registered) == ["node2: the revision is not in its cache"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, "expects a mapping of node name .* got NoneType", id="none"),
        pytest.param([{"commit": None, "files": {}}], "got list", id="list"),
        pytest.param({}, "compare_snapshots: compare_manifests needs a mapping", id="empty"),
        pytest.param(
            {"node0": {"failed": True, "msg": "cannot read /srv/hf: Permission denied"}},
            "compare_snapshots: node0: hf_snapshot_info failed there: cannot read /srv/hf",
            id="failed-task",
        ),
        pytest.param(
            {"node0": {"skipped": True, "changed": False}},
            "node0: not a hf_snapshot_info result or manifest: no 'files' key",
            id="skipped-task",
        ),
        pytest.param({"node0": "present"}, "node0: expected a hf_snapshot_info result", id="str"),
    ],
)
def test_raises_ansible_filter_error(value, expected):
    with pytest.raises(AnsibleFilterError, match=expected):
        compare_snapshots(value)
