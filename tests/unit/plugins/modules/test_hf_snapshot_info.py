# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module gb10.serving.hf_snapshot_info: the glue around module_utils._hf_cache.

A fake-exit pattern: exit_json/fail_json raise, carrying the result. Caches are laid out
in tmp_path as huggingface_hub lays them out (see HubCache in the module_utils tests).
"""

from __future__ import annotations

import errno
import os

import pytest
from ansible_collections.gb10.serving.plugins.module_utils import _hf_cache
from ansible_collections.gb10.serving.plugins.modules import hf_snapshot_info
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.test_hf_cache import (
    CHECKPOINT,
    CHECKPOINT_V1,
    COMMIT_ABSENT,
    COMMIT_MAIN,
    COMMIT_V1,
    REPO_FOLDER,
    REPO_ID,
    HubCache,
    complete_cache,
    etag_of,
    expected_manifest,
)
from ansible_collections.gb10.serving.tests.unit.plugins.modules.utils import (
    module_exit,
    module_fail,
)

RESULT_KEYS = {
    "changed",
    "present",
    "commit",
    "files",
    "blobs",
    "broken",
    "incomplete",
    "total_bytes",
    "hub_dir",
    "repo_path",
    "problem",
}


def succeed(args):
    """Run the module with args; it must call exit_json. Return the result."""
    result = module_exit(hf_snapshot_info.main, args)
    assert set(result) == RESULT_KEYS
    assert result["changed"] is False
    return result


def fail(args):
    """Run the module with args; it must call fail_json. Return the result."""
    return module_fail(hf_snapshot_info.main, args)


@pytest.fixture
def hf_home(tmp_path):
    """HF_HOME of a node that downloaded main and v1.0 completely."""
    home = tmp_path / "hf_home"
    complete_cache(home / "hub")
    return home


@pytest.fixture
def cache(hf_home):
    return HubCache(hf_home / "hub")


def args(home, **extra):
    return {"cache_dir": str(home), "repo_id": REPO_ID, **extra}


def assert_present(result, home, commit, files):
    hub = str(home / "hub")
    assert result["present"] is True
    assert result["problem"] is None
    assert result["hub_dir"] == hub
    assert result["repo_path"] == os.path.join(hub, REPO_FOLDER)
    manifest = {key: result[key] for key in expected_manifest(commit, files)}
    assert manifest == expected_manifest(commit, files)


# --- present ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("revision", "commit", "files"),
    [
        pytest.param(None, COMMIT_MAIN, CHECKPOINT, id="default-main"),
        pytest.param("main", COMMIT_MAIN, CHECKPOINT, id="branch"),
        pytest.param("v1.0", COMMIT_V1, CHECKPOINT_V1, id="tag"),
        pytest.param("release/v1.0", COMMIT_V1, CHECKPOINT_V1, id="nested-tag"),
        pytest.param(COMMIT_V1, COMMIT_V1, CHECKPOINT_V1, id="commit"),
    ],
)
def test_present_revision(hf_home, revision, commit, files):
    extra = {} if revision is None else {"revision": revision}
    assert_present(succeed(args(hf_home, **extra)), hf_home, commit, files)


def test_hub_dir_given_directly_gives_the_same_result(hf_home):
    assert succeed(args(hf_home / "hub")) == succeed(args(hf_home))


def test_dataset_repo(tmp_path):
    hub = tmp_path / "hf_home" / "hub"
    dataset = HubCache(hub, repo_id="org/eval-prompts", repo_type="dataset")
    dataset.snapshot(COMMIT_MAIN, {"data/train.jsonl": b'{"q": 1}\n'}, refs=["main"])
    result = succeed(
        {
            "cache_dir": str(tmp_path / "hf_home"),
            "repo_id": "org/eval-prompts",
            "repo_type": "dataset",
        }
    )
    assert result["present"] is True
    assert result["repo_path"] == str(hub / "datasets--org--eval-prompts")
    assert result["files"] == {"data/train.jsonl": 9}
    # The same id as a model is not in the cache.
    assert (
        succeed({"cache_dir": str(tmp_path / "hf_home"), "repo_id": "org/eval-prompts"})["present"]
        is False
    )


def test_check_mode_reads_and_reports_no_change(hf_home):
    checked = succeed({**args(hf_home), "_ansible_check_mode": True})
    assert checked == succeed(args(hf_home))
    assert checked["present"] is True


# --- not present, not a problem -----------------------------------------------------------


def assert_absent(result):
    assert result["present"] is False
    assert result["problem"] is None
    assert result["commit"] is None
    assert result["files"] == {}
    assert result["blobs"] == {}
    assert result["total_bytes"] == 0


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({"revision": "dev"}, id="branch-not-cached"),
        pytest.param({"revision": "v2.0"}, id="tag-not-cached"),
        pytest.param({"revision": COMMIT_ABSENT}, id="commit-not-cached"),
        pytest.param({"repo_id": "deepseek-ai/other"}, id="repo-not-cached"),
    ],
)
def test_missing_revision_is_not_present(hf_home, extra):
    assert_absent(succeed(args(hf_home, **extra)))


def test_missing_cache_dir_is_not_present(tmp_path):
    result = succeed(args(tmp_path / "nowhere"))
    assert_absent(result)
    assert result["hub_dir"] == str(tmp_path / "nowhere" / "hub")
    assert result["repo_path"] == str(tmp_path / "nowhere" / "hub" / REPO_FOLDER)


def test_only_no_exist_and_ref_is_a_problem_naming_the_snapshot(tmp_path):
    # A probe for a file missing upstream writes .no_exist/<commit>/ and refs/main only.
    cache = HubCache(tmp_path / "hf_home" / "hub")
    cache.no_exist(COMMIT_MAIN, "adapter_config.json")
    cache.ref("main", COMMIT_MAIN)
    result = succeed(args(tmp_path / "hf_home"))
    assert result["present"] is False
    assert result["commit"] == COMMIT_MAIN
    assert f"snapshots/{COMMIT_MAIN} does not exist" in result["problem"]
    assert "nothing of this revision was downloaded" in result["problem"]


# --- not present, with a problem ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(COMMIT_MAIN + "\n", id="trailing-newline"),
        pytest.param("deadbeef", id="abbreviated"),
        pytest.param("", id="empty"),
    ],
)
def test_malformed_ref_is_a_problem(hf_home, cache, text):
    cache.ref("main", text)
    result = succeed(args(hf_home))
    assert result["present"] is False
    assert result["commit"] is None
    assert "refs/main holds" in result["problem"]
    assert "not a 40-hex commit hash" in result["problem"]
    assert "download again" in result["problem"]


def test_incomplete_blob_is_not_present(hf_home, cache):
    etag = cache.incomplete(b"\x08" * 5000 + b"shard-3")
    result = succeed(args(hf_home))
    assert result["present"] is False
    assert result["incomplete"] == [etag + ".incomplete"]
    assert result["files"] == expected_manifest(COMMIT_MAIN, CHECKPOINT)["files"]
    assert result["problem"] == (
        f"1 blob still downloading or interrupted: {etag}.incomplete; download again to resume"
    )


def test_broken_symlinks_are_not_present(hf_home, cache):
    for rel in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        (cache.repo / "blobs" / etag_of(rel, CHECKPOINT[rel])).unlink()
    result = succeed(args(hf_home))
    assert result["present"] is False
    assert result["broken"] == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]
    assert result["problem"] == (
        "2 snapshot symlinks lead to a missing blob (interrupted download or deleted blob):"
        " model-00001-of-00002.safetensors, model-00002-of-00002.safetensors"
    )


def test_many_broken_symlinks_are_summarised(tmp_path):
    cache = HubCache(tmp_path / "hub")
    files = {f"model-{n:05d}-of-00008.safetensors": b"s%d" % n for n in range(1, 9)}
    cache.snapshot(COMMIT_MAIN, files, refs=["main"])
    for rel, data in files.items():
        (cache.repo / "blobs" / etag_of(rel, data)).unlink()
    result = succeed(args(tmp_path / "hub"))
    assert len(result["broken"]) == 8
    assert result["problem"].endswith("model-00005-of-00008.safetensors and 3 more")


def test_empty_snapshot_with_download_in_progress(tmp_path):
    cache = HubCache(tmp_path / "hf_home" / "hub")
    (cache.repo / "snapshots" / COMMIT_MAIN).mkdir(parents=True)
    cache.ref("main", COMMIT_MAIN)
    etag = cache.incomplete(b"first shard of many")
    result = succeed(args(tmp_path / "hf_home"))
    assert result["present"] is False
    assert result["commit"] == COMMIT_MAIN
    assert result["problem"] == (
        f"snapshots/{COMMIT_MAIN} holds no files: its download has not completed a single file;"
        f" 1 blob still downloading or interrupted: {etag}.incomplete; download again to resume"
    )


# --- failures -----------------------------------------------------------------------------


@pytest.fixture
def deny_scandir(monkeypatch):
    """EACCES from os.scandir for the paths added to the returned set (works as root)."""
    denied = set()
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path) in denied:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real(path)

    monkeypatch.setattr(_hf_cache.os, "scandir", scandir)
    return denied


def test_unreadable_snapshot_fails_with_actionable_message(hf_home, cache, deny_scandir):
    path = str(cache.repo / "snapshots" / COMMIT_MAIN)
    deny_scandir.add(path)
    result = fail(args(hf_home))
    assert result["msg"] == (
        f"cannot read {path}: Permission denied: run the task as the user who owns the cache"
        " (become_user), or make the cache readable"
    )
    assert result["path"] == path


def test_unlistable_cache_dir_fails(tmp_path, deny_scandir):
    # Neither <cache_dir>/hub nor the repository is visible: cache_dir must be listed.
    (tmp_path / "locked").mkdir()
    deny_scandir.add(str(tmp_path / "locked"))
    result = fail(args(tmp_path / "locked"))
    assert result["msg"].startswith(f"cannot read {tmp_path / 'locked'}: Permission denied")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param({"repo_id": "a/b/c"}, "is not a Hugging Face repository id", id="repo-id"),
        pytest.param({"repo_id": "../../etc"}, "is not a Hugging Face repository id", id="dotdot"),
        pytest.param({"revision": "../main"}, "revision '../main' is not a branch", id="rev-up"),
        pytest.param({"revision": ""}, "revision must be a non-empty", id="rev-empty"),
        pytest.param({"repo_type": "models"}, "model, dataset, space", id="repo-type"),
    ],
)
def test_bad_options_fail(hf_home, extra, expected):
    assert expected in fail(args(hf_home, **extra))["msg"]


def test_required_options(hf_home):
    assert "missing required arguments: repo_id" in fail({"cache_dir": str(hf_home)})["msg"]
