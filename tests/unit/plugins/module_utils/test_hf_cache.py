# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._hf_cache: Hugging Face hub caches read from disk, and their comparison.

Caches are laid out in tmp_path the way huggingface_hub (file_download.py) lays them out:
blobs named by their etag (sha256 of the content for LFS files, git blob sha1 otherwise),
snapshot entries as relative symlinks into ../../blobs (one more ../ per directory level),
refs/<name> holding the commit hash with no newline (tags with "/" nested under refs/),
blobs/<etag>.incomplete for a download in progress, and .no_exist/<commit>/<path> markers.
:class:`HubCache` is imported by the module and filter tests too.
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest
from ansible_collections.gb10.serving.plugins.module_utils import _hf_cache
from ansible_collections.gb10.serving.plugins.module_utils._hf_cache import (
    HfCacheError,
    HfCacheReadError,
    SnapshotManifest,
    compare_manifests,
    find_hub_dir,
    repo_dir,
    resolve_revision,
    snapshot_manifest,
)

REPO_ID = "deepseek-ai/DeepSeek-V4-Flash-DSpark"
REPO_FOLDER = "models--deepseek-ai--DeepSeek-V4-Flash-DSpark"
COMMIT_MAIN = hashlib.sha1(b"DeepSeek-V4-Flash-DSpark main", usedforsecurity=False).hexdigest()
COMMIT_V1 = hashlib.sha1(b"DeepSeek-V4-Flash-DSpark v1.0", usedforsecurity=False).hexdigest()
COMMIT_ABSENT = hashlib.sha1(b"never downloaded", usedforsecurity=False).hexdigest()

# The checkpoint at COMMIT_MAIN: LFS shards, small git files, a nested tokenizer file.
CHECKPOINT = {
    "config.json": b'{"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4"}\n',
    "generation_config.json": b'{"do_sample": true, "temperature": 0.6}\n',
    "model-00001-of-00002.safetensors": b"\x08\x00\x00\x00\x00\x00\x00\x00{}shard-1" * 512,
    "model-00002-of-00002.safetensors": b"\x08\x00\x00\x00\x00\x00\x00\x00{}shard-2" * 384,
    "model.safetensors.index.json": b'{"weight_map": {"embed": "model-00001-of-00002"}}\n',
    "tokenizer/vocab.json": b'{"<s>": 0, "</s>": 1, "hello": 2}\n',
}
# The older checkpoint the tag v1.0 points to.
CHECKPOINT_V1 = {
    "config.json": b'{"architectures": ["DeepseekV4ForCausalLM"]}\n',
    "model.safetensors": b"\x08\x00\x00\x00\x00\x00\x00\x00{}v1" * 100,
}
LFS_SUFFIXES = (".safetensors", ".bin", ".gguf")


def etag_of(path, data):
    """The blob name huggingface_hub uses: sha256 for LFS files, git blob sha1 otherwise."""
    if path.endswith(LFS_SUFFIXES):
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class HubCache:
    """One repository in a hub cache under ``hub``, laid out as huggingface_hub does."""

    def __init__(self, hub, repo_id=REPO_ID, repo_type="model"):
        self.hub = Path(hub)
        self.repo = Path(repo_dir(str(hub), repo_id, repo_type))
        (self.repo / "blobs").mkdir(parents=True, exist_ok=True)

    def blob(self, etag, data):
        path = self.repo / "blobs" / etag
        if not path.exists():
            path.write_bytes(data)
        return path

    def link(self, commit, rel, etag):
        """snapshots/<commit>/<rel> -> ../../blobs/<etag> (relative, like _create_symlink)."""
        link = self.repo / "snapshots" / commit / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(self.repo / "blobs" / etag, link.parent))
        return link

    def snapshot(self, commit, files, refs=()):
        """Blobs and symlinks of ``files`` (path -> bytes) at ``commit``; refs point to it."""
        (self.repo / "snapshots" / commit).mkdir(parents=True, exist_ok=True)
        for rel, data in files.items():
            etag = etag_of(rel, data)
            self.blob(etag, data)
            self.link(commit, rel, etag)
        for name in refs:
            self.ref(name, commit)
        return self

    def ref(self, name, text):
        path = self.repo / "refs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def incomplete(self, data):
        """A blob being downloaded: blobs/<sha256>.incomplete holding a part of ``data``."""
        etag = hashlib.sha256(data).hexdigest()
        (self.repo / "blobs" / (etag + ".incomplete")).write_bytes(data[: len(data) // 3])
        return etag

    def no_exist(self, commit, rel):
        path = self.repo / ".no_exist" / commit / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


def complete_cache(hub):
    """The cache after `hf download` of main and of the tag v1.0, plus the usual debris."""
    cache = HubCache(hub)
    cache.snapshot(COMMIT_MAIN, CHECKPOINT, refs=["main"])
    cache.snapshot(COMMIT_V1, CHECKPOINT_V1, refs=["v1.0", "release/v1.0"])
    # transformers probes optional files; huggingface_hub caches their absence.
    cache.no_exist(COMMIT_MAIN, "adapter_config.json")
    cache.no_exist(COMMIT_MAIN, "tokenizer/added_tokens.json")
    lock = Path(hub) / ".locks" / REPO_FOLDER / "0123abcd.lock"
    lock.parent.mkdir(parents=True)
    lock.touch()
    return cache


def expected_manifest(commit, files):
    sizes = {rel: len(data) for rel, data in sorted(files.items())}
    return {
        "commit": commit,
        "files": sizes,
        "blobs": {rel: etag_of(rel, data) for rel, data in sorted(files.items())},
        "broken": [],
        "incomplete": [],
        "total_bytes": sum(sizes.values()),
    }


def manifest_of(cache, commit=COMMIT_MAIN):
    return snapshot_manifest(str(cache.repo), commit).to_dict()


@pytest.fixture
def cache(tmp_path):
    return complete_cache(tmp_path / "hf_home" / "hub")


@pytest.fixture
def two_nodes(tmp_path):
    """Identical complete caches of node0 and node1."""
    return {node: complete_cache(tmp_path / node / "hub") for node in ("node0", "node1")}


def manifests(nodes):
    return {node: manifest_of(cache) for node, cache in nodes.items()}


# --- repo_dir and find_hub_dir ------------------------------------------------------------


@pytest.mark.parametrize(
    ("repo_id", "repo_type", "folder"),
    [
        pytest.param(REPO_ID, "model", REPO_FOLDER, id="model"),
        pytest.param("HuggingFaceFW/fineweb", "dataset", "datasets--HuggingFaceFW--fineweb"),
        pytest.param("gradio/hello_world", "space", "spaces--gradio--hello_world", id="space"),
        pytest.param("gpt2", "model", "models--gpt2", id="legacy-bare-name"),
        pytest.param("org/name.v1_x", "model", "models--org--name.v1_x", id="dots-underscores"),
    ],
)
def test_repo_dir(repo_id, repo_type, folder):
    assert repo_dir("/hf/hub", repo_id, repo_type) == "/hf/hub/" + folder


def test_repo_dir_default_type_is_model():
    assert repo_dir("/hf/hub", REPO_ID) == "/hf/hub/" + REPO_FOLDER


@pytest.mark.parametrize(
    ("repo_id", "repo_type", "expected"),
    [
        pytest.param(REPO_ID, "models", "repo_type 'models' is not one of", id="plural-type"),
        pytest.param("a/b/c", "model", "is not a Hugging Face repository id", id="three-parts"),
        pytest.param("../etc", "model", "is not a Hugging Face repository id", id="dot-dot"),
        pytest.param("org--x/name", "model", "no '--'", id="double-dash"),
        pytest.param("", "model", "is not a Hugging Face repository id", id="empty"),
        pytest.param("org/na me", "model", "is not a Hugging Face repository id", id="space"),
        pytest.param("/abs", "model", "is not a Hugging Face repository id", id="absolute"),
    ],
)
def test_repo_dir_rejects(repo_id, repo_type, expected):
    with pytest.raises(HfCacheError, match=expected):
        repo_dir("/hf/hub", repo_id, repo_type)


def test_find_hub_dir_from_hf_home(cache, tmp_path):
    hf_home = tmp_path / "hf_home"
    assert find_hub_dir(str(hf_home), REPO_FOLDER) == str(hf_home / "hub")
    assert find_hub_dir(str(hf_home)) == str(hf_home / "hub")


def test_find_hub_dir_given_the_hub_itself(cache, tmp_path):
    hub = tmp_path / "hf_home" / "hub"
    assert find_hub_dir(str(hub), REPO_FOLDER) == str(hub)
    # Another repository's folder is enough to recognise a hub directory.
    assert find_hub_dir(str(hub), "models--other--repo") == str(hub)
    assert find_hub_dir(str(hub)) == str(hub)


def test_find_hub_dir_defaults_to_hub_child(tmp_path):
    assert find_hub_dir(str(tmp_path / "absent")) == str(tmp_path / "absent" / "hub")
    (tmp_path / "empty").mkdir()
    assert find_hub_dir(str(tmp_path / "empty"), REPO_FOLDER) == str(tmp_path / "empty" / "hub")


def test_find_hub_dir_prefers_the_directory_holding_the_repo(tmp_path):
    # A hub cache that happens to contain a "hub" entry: the repository decides.
    HubCache(tmp_path / "odd")
    (tmp_path / "odd" / "hub").mkdir()
    assert find_hub_dir(str(tmp_path / "odd"), REPO_FOLDER) == str(tmp_path / "odd")


# --- resolve_revision ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("revision", "commit"),
    [
        pytest.param("main", COMMIT_MAIN, id="branch"),
        pytest.param("v1.0", COMMIT_V1, id="tag"),
        pytest.param("release/v1.0", COMMIT_V1, id="tag-with-slash-nested-under-refs"),
        pytest.param(COMMIT_MAIN, COMMIT_MAIN, id="commit-with-snapshot"),
        pytest.param(COMMIT_V1, COMMIT_V1, id="older-commit-with-snapshot"),
        pytest.param(COMMIT_ABSENT, None, id="commit-without-snapshot"),
        pytest.param("dev", None, id="branch-not-cached"),
        pytest.param("release", None, id="directory-under-refs-is-no-ref"),
        pytest.param("release/v2.0", None, id="nested-tag-not-cached"),
    ],
)
def test_resolve_revision(cache, revision, commit):
    assert resolve_revision(str(cache.repo), revision) == commit


def test_resolve_pr_ref(cache):
    # hf_hub_download(revision="refs/pr/1") stores refs/refs/pr/1.
    cache.snapshot(COMMIT_ABSENT, {"config.json": b"{}"}, refs=["refs/pr/1"])
    assert (cache.repo / "refs" / "refs" / "pr" / "1").read_text() == COMMIT_ABSENT
    assert resolve_revision(str(cache.repo), "refs/pr/1") == COMMIT_ABSENT


def test_resolve_without_refs_dir(tmp_path):
    cache = HubCache(tmp_path / "hub")
    cache.snapshot(COMMIT_MAIN, {"config.json": b"{}"})
    assert resolve_revision(str(cache.repo), "main") is None
    assert resolve_revision(str(cache.repo), COMMIT_MAIN) == COMMIT_MAIN


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(COMMIT_MAIN + "\n", id="trailing-newline"),
        pytest.param(COMMIT_MAIN[:12], id="abbreviated"),
        pytest.param(COMMIT_MAIN.upper(), id="upper-case"),
        pytest.param("", id="empty"),
        pytest.param("ref: refs/heads/main", id="git-symbolic-ref"),
    ],
)
def test_malformed_ref_raises(cache, text):
    cache.ref("main", text)
    with pytest.raises(HfCacheError, match=r"refs/main holds .*not a 40-hex commit hash"):
        resolve_revision(str(cache.repo), "main")


@pytest.mark.parametrize(
    "revision",
    [
        pytest.param("", id="empty"),
        pytest.param("../../etc/passwd", id="parent-traversal"),
        pytest.param("/etc/passwd", id="absolute"),
        pytest.param("v1//x", id="empty-component"),
        pytest.param("main/", id="trailing-slash"),
        pytest.param("a\\b", id="backslash"),
    ],
)
def test_bad_revision_raises(cache, revision):
    with pytest.raises(HfCacheError, match="revision"):
        resolve_revision(str(cache.repo), revision)


# --- snapshot_manifest --------------------------------------------------------------------


def test_manifest_of_complete_snapshot(cache):
    manifest = snapshot_manifest(str(cache.repo), COMMIT_MAIN)
    assert isinstance(manifest, SnapshotManifest)
    assert manifest.to_dict() == expected_manifest(COMMIT_MAIN, CHECKPOINT)
    # Sorted, nested path "/"-separated, .no_exist/ ignored.
    assert list(manifest.files) == sorted(CHECKPOINT)
    assert "adapter_config.json" not in manifest.files
    assert len(manifest.blobs["model-00001-of-00002.safetensors"]) == 64  # LFS: sha256
    assert len(manifest.blobs["config.json"]) == 40  # git blob sha1


def test_nested_symlinks_are_relative_like_huggingface_hub(cache):
    link = cache.repo / "snapshots" / COMMIT_MAIN / "tokenizer" / "vocab.json"
    etag = etag_of("tokenizer/vocab.json", CHECKPOINT["tokenizer/vocab.json"])
    assert os.readlink(link) == "../../../blobs/" + etag
    top = cache.repo / "snapshots" / COMMIT_MAIN / "config.json"
    assert os.readlink(top) == "../../blobs/" + etag_of("config.json", CHECKPOINT["config.json"])


def test_manifest_of_the_tag_snapshot(cache):
    assert manifest_of(cache, COMMIT_V1) == expected_manifest(COMMIT_V1, CHECKPOINT_V1)


def test_shared_blob_is_counted_per_file(tmp_path):
    cache = HubCache(tmp_path / "hub")
    same = b'{"shared": true}\n'
    cache.snapshot(COMMIT_MAIN, {"a.json": same, "sub/b.json": same}, refs=["main"])
    manifest = manifest_of(cache)
    assert manifest["blobs"]["a.json"] == manifest["blobs"]["sub/b.json"]
    assert manifest["total_bytes"] == 2 * len(same)


def test_incomplete_blob_is_listed(cache):
    etag = cache.incomplete(b"\x00" * 9000 + b"shard-3")
    manifest = manifest_of(cache)
    assert manifest["incomplete"] == [etag + ".incomplete"]
    assert manifest["files"] == expected_manifest(COMMIT_MAIN, CHECKPOINT)["files"]


def test_broken_symlink_is_listed_not_sized(cache):
    rel = "model-00002-of-00002.safetensors"
    etag = etag_of(rel, CHECKPOINT[rel])
    (cache.repo / "blobs" / etag).unlink()
    manifest = manifest_of(cache)
    assert manifest["broken"] == [rel]
    assert rel not in manifest["files"]
    assert manifest["blobs"][rel] == etag
    assert manifest["total_bytes"] == sum(len(d) for r, d in CHECKPOINT.items() if r != rel)


def test_regular_file_in_snapshot_has_size_and_no_blob(tmp_path):
    # Where symlinks are not supported, huggingface_hub moves the blob into the snapshot.
    cache = HubCache(tmp_path / "hub")
    cache.snapshot(COMMIT_MAIN, {"config.json": b"{}"}, refs=["main"])
    (cache.repo / "snapshots" / COMMIT_MAIN / "weights.bin").write_bytes(b"w" * 77)
    manifest = manifest_of(cache)
    assert manifest["files"] == {"config.json": 2, "weights.bin": 77}
    assert "weights.bin" not in manifest["blobs"]


@pytest.mark.parametrize(
    ("target", "name"),
    [
        pytest.param("../../blobs", "blobs", id="symlink-to-directory"),
        pytest.param("loop", "loop", id="symlink-loop"),
        pytest.param("/nonexistent/hf/blobs/abc", "abc", id="absolute-missing"),
    ],
)
def test_unusable_symlinks_are_broken(tmp_path, target, name):
    cache = HubCache(tmp_path / "hub")
    cache.snapshot(COMMIT_MAIN, {"config.json": b"{}"}, refs=["main"])
    (cache.repo / "snapshots" / COMMIT_MAIN / "loop").symlink_to(target)
    manifest = manifest_of(cache)
    assert manifest["broken"] == ["loop"]
    assert manifest["blobs"]["loop"] == name
    assert manifest["files"] == {"config.json": 2}


def test_blob_symlinked_into_a_shared_store(tmp_path):
    # Newer huggingface_hub may make blobs/<etag> a symlink into <hub>/blobs/<xx>/<hash>.
    cache = HubCache(tmp_path / "hub")
    data = b"\x08" + b"x" * 500
    store = tmp_path / "hub" / "blobs" / "ab" / ("ab" + "0" * 62)
    store.parent.mkdir(parents=True)
    store.write_bytes(data)
    etag = etag_of("model.safetensors", data)
    (cache.repo / "blobs" / etag).symlink_to(os.path.relpath(store, cache.repo / "blobs"))
    cache.link(COMMIT_MAIN, "model.safetensors", etag)
    manifest = manifest_of(cache)
    assert manifest["files"] == {"model.safetensors": len(data)}
    assert manifest["blobs"] == {"model.safetensors": etag}


def test_empty_snapshot_directory(tmp_path):
    # huggingface_hub creates snapshots/<commit>/ before the first download completes.
    cache = HubCache(tmp_path / "hub")
    (cache.repo / "snapshots" / COMMIT_MAIN).mkdir(parents=True)
    cache.ref("main", COMMIT_MAIN)
    etag = cache.incomplete(b"first shard")
    assert manifest_of(cache) == {
        "commit": COMMIT_MAIN,
        "files": {},
        "blobs": {},
        "broken": [],
        "incomplete": [etag + ".incomplete"],
        "total_bytes": 0,
    }


def test_missing_snapshot_directory_raises(cache):
    with pytest.raises(HfCacheError, match=f"snapshots/{COMMIT_ABSENT} does not exist"):
        snapshot_manifest(str(cache.repo), COMMIT_ABSENT)


@pytest.mark.parametrize("commit", ["main", COMMIT_MAIN[:7], "../" + COMMIT_MAIN[3:], None])
def test_bad_commit_raises(cache, commit):
    with pytest.raises(HfCacheError, match="is not a 40-hex commit hash"):
        snapshot_manifest(str(cache.repo), commit)


@pytest.fixture
def deny(monkeypatch):
    """EACCES for the paths added to the returned set, as a mode-0 directory or blob gives.

    A directory refuses os.scandir (listing it); a snapshot symlink refuses os.stat
    (following it into a blobs/ directory we may not search). Works as root too.
    """
    denied = set()
    real_scandir, real_stat = os.scandir, os.stat

    def refuse(path):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))

    def scandir(path="."):
        if os.fspath(path) in denied:
            refuse(path)
        return real_scandir(path)

    def stat(path, *args, **kwargs):
        if os.fspath(path) in denied and os.path.islink(path):
            refuse(path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(_hf_cache.os, "scandir", scandir)
    monkeypatch.setattr(_hf_cache.os, "stat", stat)
    return denied


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(("snapshots", COMMIT_MAIN), id="snapshot-dir"),
        pytest.param(("snapshots", COMMIT_MAIN, "tokenizer"), id="nested-dir"),
        pytest.param(("snapshots", COMMIT_MAIN, "config.json"), id="blob-stat"),
        pytest.param(("blobs",), id="blobs-dir"),
    ],
)
def test_unreadable_paths_raise_read_error(cache, deny, where):
    path = str(cache.repo.joinpath(*where))
    deny.add(path)
    with pytest.raises(HfCacheReadError, match="cannot read .*Permission denied.*become_user") as e:
        snapshot_manifest(str(cache.repo), COMMIT_MAIN)
    assert e.value.path == path
    assert isinstance(e.value, HfCacheError)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_ref_raises_read_error(cache):
    ref = cache.repo / "refs" / "main"
    ref.chmod(0)
    try:
        with pytest.raises(HfCacheReadError, match="cannot read"):
            resolve_revision(str(cache.repo), "main")
    finally:
        ref.chmod(0o644)


def test_unreadable_ref_raises_read_error_simulated(cache, monkeypatch):
    def refuse(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(_hf_cache, "read_regular", refuse)
    with pytest.raises(HfCacheReadError, match="refs/main: Permission denied"):
        resolve_revision(str(cache.repo), "main")


def test_a_ref_planted_as_a_link_is_refused_unread(cache, tmp_path):
    """refs/ belongs to the container UID; root resolving a revision must not quote what a
    planted link leads to."""
    secret = tmp_path / "root-only"
    secret.write_text("root:SECRET-HASH:19000:0:99999:7:::\n")
    ref = cache.repo / "refs" / "main"
    ref.unlink()
    ref.symlink_to(secret)
    with pytest.raises(HfCacheReadError) as e:
        resolve_revision(str(cache.repo), "main")
    assert "SECRET" not in str(e.value)
    assert "not read" in str(e.value)
    assert "remove it and download again" in str(e.value)


# --- compare_manifests --------------------------------------------------------------------


def test_identical_caches_have_no_differences(two_nodes):
    assert compare_manifests(manifests(two_nodes)) == []


def test_single_complete_node_has_no_differences(cache):
    assert compare_manifests({"node0": manifest_of(cache)}) == []


def test_different_commits(two_nodes):
    result = manifests(two_nodes)
    result["node1"] = manifest_of(two_nodes["node1"], COMMIT_V1)
    differences = compare_manifests(result)
    assert differences[0] == f"different commits: node0={COMMIT_MAIN}, node1={COMMIT_V1}"
    assert "model.safetensors: only on node1 (missing on node0)" in differences
    assert "tokenizer/vocab.json: only on node0 (missing on node1)" in differences


def test_file_only_on_one_node(two_nodes):
    # snapshot_download interrupted between two files: the shard was never linked.
    (two_nodes["node1"].repo / "snapshots" / COMMIT_MAIN / "tokenizer" / "vocab.json").unlink()
    assert compare_manifests(manifests(two_nodes)) == [
        "tokenizer/vocab.json: only on node0 (missing on node1)"
    ]


def test_truncated_blob_sizes_differ(two_nodes):
    # A blob copied between nodes by an interrupted rsync: same name, fewer bytes.
    rel = "model-00001-of-00002.safetensors"
    blob = two_nodes["node0"].repo / "blobs" / etag_of(rel, CHECKPOINT[rel])
    blob.write_bytes(CHECKPOINT[rel][:1000])
    assert compare_manifests(manifests(two_nodes)) == [
        f"{rel}: sizes differ: node0=1000 bytes, node1={len(CHECKPOINT[rel])} bytes"
    ]


def test_same_size_different_content_blobs_differ(tmp_path):
    nodes = {}
    for node, value in (("node0", b"0.6"), ("node1", b"0.7")):
        checkpoint = dict(CHECKPOINT)
        checkpoint["generation_config.json"] = b'{"temperature": %s}\n' % value
        nodes[node] = HubCache(tmp_path / node / "hub").snapshot(COMMIT_MAIN, checkpoint)
    etags = {n: manifest_of(c)["blobs"]["generation_config.json"] for n, c in nodes.items()}
    assert compare_manifests(manifests(nodes)) == [
        f"generation_config.json: blobs differ: node0={etags['node0']}, node1={etags['node1']}"
    ]


def test_different_content_and_size(tmp_path):
    nodes = {}
    for node, extra in (("node0", b""), ("node1", b"  ")):
        checkpoint = dict(CHECKPOINT)
        checkpoint["config.json"] = CHECKPOINT["config.json"] + extra
        nodes[node] = HubCache(tmp_path / node / "hub").snapshot(COMMIT_MAIN, checkpoint)
    differences = compare_manifests(manifests(nodes))
    assert len(differences) == 2
    assert differences[0].startswith("config.json: sizes differ: node0=")
    assert differences[1].startswith("config.json: blobs differ: node0=")


def test_broken_symlink_named(two_nodes):
    rel = "model-00002-of-00002.safetensors"
    etag = etag_of(rel, CHECKPOINT[rel])
    (two_nodes["node1"].repo / "blobs" / etag).unlink()
    assert compare_manifests(manifests(two_nodes)) == [
        f"{rel}: broken symlink on node1 (blob {etag} is missing: interrupted download or deleted"
        " blob)"
    ]


def test_incomplete_blob_named_with_the_file_it_will_be(two_nodes):
    rel = "model-00002-of-00002.safetensors"
    node1 = two_nodes["node1"]
    (node1.repo / "snapshots" / COMMIT_MAIN / rel).unlink()
    (node1.repo / "blobs" / etag_of(rel, CHECKPOINT[rel])).unlink()
    etag = node1.incomplete(CHECKPOINT[rel])
    assert compare_manifests(manifests(two_nodes)) == [
        f"{rel}: only on node0 (missing on node1)",
        f"node1: blobs/{etag}.incomplete: download in progress or interrupted ({rel} on node0)",
    ]


def test_incomplete_blob_no_node_links(two_nodes):
    etag = two_nodes["node0"].incomplete(b"a shard of another revision")
    assert compare_manifests(manifests(two_nodes)) == [
        f"node0: blobs/{etag}.incomplete: download in progress or interrupted"
    ]


def test_node_without_the_revision_and_empty_snapshot(two_nodes):
    result = manifests(two_nodes)
    result["node2"] = {"commit": None, "files": {}, "problem": "refs/main holds 'x'"}
    result["node3"] = dict(result["node0"], files={}, blobs={}, total_bytes=0)
    assert compare_manifests(result) == [
        "node2: the revision is not in its cache (refs/main holds 'x')",
        f"node3: snapshot {COMMIT_MAIN} holds no files",
    ]


def test_accepts_module_results_with_extra_keys(two_nodes):
    result = {
        node: dict(m, changed=False, present=True, problem=None, hub_dir="/x", repo_path="/y")
        for node, m in manifests(two_nodes).items()
    }
    assert compare_manifests(result) == []


def test_every_kind_at_once_is_sorted_by_path(tmp_path):
    node0 = HubCache(tmp_path / "node0" / "hub").snapshot(COMMIT_MAIN, CHECKPOINT)
    node1_files = dict(CHECKPOINT)
    del node1_files["config.json"]
    node1_files["extra.txt"] = b"only here"
    node1 = HubCache(tmp_path / "node1" / "hub").snapshot(COMMIT_MAIN, node1_files)
    differences = compare_manifests({"node1": manifest_of(node1), "node0": manifest_of(node0)})
    assert differences == [
        "config.json: only on node0 (missing on node1)",
        "extra.txt: only on node1 (missing on node0)",
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({}, "needs a mapping of node name to manifest", id="empty"),
        pytest.param([], "needs a mapping of node name to manifest", id="list"),
        pytest.param({"node0": "text"}, "node0: expected a hf_snapshot_info result", id="str"),
        pytest.param(
            {"node0": {"failed": True, "msg": "cannot read /hf: Permission denied"}},
            "node0: hf_snapshot_info failed there: cannot read /hf",
            id="failed-task",
        ),
        pytest.param(
            {"node0": {"changed": False, "skipped": True}},
            "node0: not a hf_snapshot_info result or manifest: no 'files' key",
            id="skipped-task",
        ),
        pytest.param({"node0": {"files": {}}}, "no 'commit' key", id="no-commit"),
        pytest.param(
            {"node0": {"commit": COMMIT_MAIN, "files": ["a"]}},
            "node0: 'files' and 'blobs' must be mappings",
            id="files-list",
        ),
    ],
)
def test_compare_rejects(value, expected):
    with pytest.raises(HfCacheError, match=expected):
        compare_manifests(value)
