# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module gb10.serving.tree_owner: the glue around module_utils._tree_owner.

A fake-exit pattern: exit_json/fail_json raise, carrying the result. Trees are real, built
in tmp_path with some entries given other owners; symlinks point in and out of the tree.
"""

from __future__ import annotations

import errno
import os
import subprocess
import time

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gb10.serving.plugins.modules import tree_owner
from ansible_collections.gb10.serving.tests.unit.plugins.modules.utils import (
    module_exit,
    module_fail,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")

UID = GID = 1000
OUTSIDE_UID = 4242
RESULT_KEYS = {
    "changed",
    "scanned",
    "fixed",
    "fixed_sample",
    "root_fixed",
    "errors",
    "error_count",
    "skipped_mounts",
}
# Entries made wrong on purpose (relative path -> uid, gid).
WRONG = {
    "config.json": (0, 0),
    "blobs/b1": (UID, 0),
    "snapshots/rev1": (2000, GID),
    "link_out": (0, 0),
    "broken": (0, 0),
}
ENTRIES = 13  # in the tree below, the root included


def succeed(args):
    """Run the module with args; it must call exit_json. Return the result."""
    return module_exit(tree_owner.main, args)


def fail(args):
    """Run the module with args; it must call fail_json. Return the result."""
    return module_fail(tree_owner.main, args)


def snapshot(root):
    """{path: (uid, gid, ctime_ns)} of every entry, the root included; never follows links."""
    paths = [str(root)]
    for top, dirs, files in os.walk(root):
        paths += [os.path.join(top, name) for name in dirs + files]
    stats = {path: os.lstat(path) for path in paths}
    return {path: (st.st_uid, st.st_gid, st.st_ctime_ns) for path, st in stats.items()}


@pytest.fixture
def tree(tmp_path):
    """A small cache-like tree owned UID:GID except WRONG; returns (root, outside file)."""
    root = tmp_path / "cache"
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours\n")
    os.chown(outside, OUTSIDE_UID, OUTSIDE_UID)
    (root / "blobs").mkdir(parents=True)
    (root / "snapshots" / "rev1").mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "config.json").write_text("{}")
    (root / "refs" / "main").write_text("rev1")
    for blob in ("b1", "b2"):
        (root / "blobs" / blob).write_bytes(b"w")
    (root / "snapshots" / "rev1" / "model.safetensors").symlink_to("../../blobs/b1")
    (root / "snapshots" / "rev1" / "tokenizer.json").symlink_to("../../blobs/b2")
    (root / "link_out").symlink_to(outside)
    (root / "broken").symlink_to(root / "nowhere")
    for path in snapshot(root):
        os.lchown(path, UID, GID)
    for rel, (uid, gid) in WRONG.items():
        os.lchown(root / rel, uid, gid)
    time.sleep(0.05)  # let the coarse ctime clock move on: a needless chown would show
    assert len(snapshot(root)) == ENTRIES
    return str(root), str(outside)


def args_for(root, **extra):
    return {"path": root, "owner": UID, "group": GID, **extra}


def test_repairs_then_reports_no_change(tree):
    root, outside = tree
    before = snapshot(root)
    result = succeed(args_for(root))
    assert set(result) == RESULT_KEYS
    assert result["changed"] is True
    assert (result["scanned"], result["fixed"], result["error_count"]) == (ENTRIES, 5, 0)
    assert set(result["fixed_sample"]) == {os.path.join(root, rel) for rel in WRONG}
    assert result["errors"] == []
    assert result["skipped_mounts"] == []
    assert result["root_fixed"] is False
    after = snapshot(root)
    assert {ids[:2] for ids in after.values()} == {(UID, GID)}
    right = set(before) - {os.path.join(root, rel) for rel in WRONG}
    assert {path: after[path] for path in right} == {path: before[path] for path in right}
    assert (os.stat(outside).st_uid, os.stat(outside).st_gid) == (OUTSIDE_UID, OUTSIDE_UID)

    again = succeed(args_for(root))
    assert again["changed"] is False
    assert (again["scanned"], again["fixed"], again["fixed_sample"]) == (ENTRIES, 0, [])
    assert snapshot(root) == after
    assert "diff" not in again


def test_check_mode_changes_nothing(tree):
    root, _outside = tree
    before = snapshot(root)
    checked = succeed(args_for(root, _ansible_check_mode=True))
    assert snapshot(root) == before
    assert checked["changed"] is True
    assert checked["fixed"] == 5
    real = succeed(args_for(root))
    assert real == checked
    assert succeed(args_for(root, _ansible_check_mode=True))["changed"] is False


@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check"])
def test_diff_summarizes_counts(tree, check_mode):
    root, _outside = tree
    result = succeed(args_for(root, _ansible_diff=True, _ansible_check_mode=check_mode))
    side = {"path": root, "wanted": "1000:1000", "scanned": ENTRIES}
    assert result["diff"] == {
        "before_header": root + " (ownership)",
        "after_header": root + " (ownership)",
        "before": {**side, "wrong_ownership": 5},
        "after": {**side, "wrong_ownership": 0},
    }


def test_mount_point_is_left_alone_with_a_warning(tree, monkeypatch):
    root, _outside = tree
    mnt = os.path.join(root, "xet")
    os.mkdir(mnt)
    os.chown(mnt, UID, GID)
    mount = ["mount", "-t", "tmpfs", "-o", "size=1m", "gb10-tree-owner", mnt]
    done = subprocess.run(mount, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    warnings = []
    monkeypatch.setattr(AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
    try:
        result = succeed(args_for(root))
        mounted = os.lstat(mnt)
    finally:
        subprocess.run(["umount", mnt], check=True)
    assert result["skipped_mounts"] == [mnt]
    assert (result["scanned"], result["fixed"]) == (ENTRIES, 5)
    assert (mounted.st_uid, mounted.st_gid) == (0, 0)
    assert warnings == [
        f"left 1 mount point(s) under {root} alone, as they are other filesystems: {mnt}. Run"
        " gb10.serving.tree_owner on each one that must be owned by 1000:1000 too."
    ]


def test_sample_limits_the_paths(tree):
    root, _outside = tree
    result = succeed(args_for(root, sample=2))
    assert result["fixed"] == 5
    assert len(result["fixed_sample"]) == 2


def test_wrong_root_is_fixed_and_reported(tree):
    root, _outside = tree
    os.chown(root, 0, 0)
    result = succeed(args_for(root))
    assert result["root_fixed"] is True
    assert result["fixed"] == 6
    assert result["fixed_sample"][0] == root


def test_vanished_entry_is_not_an_error(tree, monkeypatch):
    root, _outside = tree
    real = os.chown

    def chown(path, *args, **kwargs):
        if path == "config.json":  # the download renamed it away meanwhile
            os.unlink(os.path.join(root, "config.json"))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "chown", chown)
    result = succeed(args_for(root))
    assert result["changed"] is True
    assert (result["fixed"], result["errors"], result["error_count"]) == (4, [], 0)


@pytest.mark.parametrize(
    ("code", "advice"),
    [
        pytest.param(errno.EPERM, "chattr -i -a", id="immutable"),
        pytest.param(errno.EROFS, "mount -o remount,rw", id="read-only-fs"),
    ],
)
def test_refused_change_fails_with_the_entries_and_a_fix(tree, monkeypatch, code, advice):
    root, _outside = tree
    real = os.chown

    def chown(path, *args, **kwargs):
        if path == "b1":
            raise OSError(code, os.strerror(code))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "chown", chown)
    result = fail(args_for(root, _ansible_diff=True))
    b1 = os.path.join(root, "blobs", "b1")
    error = f"{errno.errorcode[code]}: {os.strerror(code)}"
    assert result["errors"] == [{"path": b1, "error": error}]
    assert result["error_count"] == 1
    assert f"{b1} ({error})" in result["msg"]
    assert advice in result["msg"]
    assert result["msg"].endswith("then run again.")
    # The other four were fixed before it failed, and say so.
    assert result["changed"] is True
    assert result["fixed"] == 4
    assert result["diff"]["before"]["wrong_ownership"] == 5
    assert result["diff"]["after"]["wrong_ownership"] == 1


def test_many_refusals_list_ten(tree, monkeypatch):
    root, _outside = tree
    for index in range(12):
        path = os.path.join(root, "blobs", f"x{index:02d}")
        with open(path, "w") as handle:
            handle.write("x")
    real = os.chown

    def chown(path, *args, **kwargs):
        if isinstance(path, str) and path.startswith("x"):
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "chown", chown)
    result = fail(args_for(root))
    assert result["error_count"] == 12
    assert len(result["errors"]) == 12
    assert result["msg"].count("(EPERM: Operation not permitted)") == 10
    assert "; and 2 more." in result["msg"]


def test_missing_path_fails(tmp_path):
    missing = str(tmp_path / "hf-cache")
    result = fail(args_for(missing))
    assert result["msg"] == (
        f"{missing} does not exist: create it first (ansible.builtin.file state=directory) or"
        " fix the path"
    )
    assert result["changed"] is False
    assert not os.path.exists(missing)


@pytest.mark.parametrize(
    ("option", "value"),
    [("owner", -1), ("group", -5), ("sample", -1)],
)
def test_negative_numbers_fail(tree, option, value):
    root, _outside = tree
    before = snapshot(root)
    result = fail(args_for(root, **{option: value}))
    assert result["msg"] == f"{option} must be 0 or more, got {value}"
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param({"owner": UID, "group": GID}, "missing required arguments: path", id="path"),
        pytest.param({"path": "/x", "group": GID}, "missing required arguments: owner", id="uid"),
        pytest.param({"path": "/x", "owner": "engine", "group": GID}, "owner", id="uid-name"),
    ],
)
def test_bad_arguments_fail(args, expected):
    assert expected in fail(args)["msg"]
