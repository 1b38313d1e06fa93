# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._tree_owner: ownership repair of a tree, on real trees built in tmp_path.

Each tree mimics a Hugging Face cache (blobs, snapshots linking into blobs) plus symlinks
pointing out of the tree, a symlinked directory and a broken symlink. Races with a running
download (entries vanishing, a directory swapped for a symlink) are made real: the
os functions the walk uses are wrapped to change the tree just before they run.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import subprocess
import time

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._tree_owner import (
    TreeOwnerError,
    TreeReport,
    failure_message,
    repair_tree,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")

UID = GID = 1000  # the engine container's default user
OUTSIDE_UID = 4242  # owner of what the tree's symlinks point at; must never change
REPORT_KEYS = {
    "scanned",
    "fixed",
    "fixed_sample",
    "errors",
    "error_count",
    "skipped_mounts",
    "root_fixed",
}

# Relative path -> (uid, gid) made wrong on purpose; everything else in the tree is right.
WRONG = {
    "hub/version.txt": (0, 0),  # both wrong (written by root)
    "hub/models--org--m/blobs/b1": (UID, 0),  # gid only
    "hub/models--org--m/snapshots/rev1": (2000, GID),  # a directory, uid only
    "hub/link_out": (0, 0),  # a symlink pointing out of the tree: fixed itself
    "hub/broken": (3000, 3000),  # a broken symlink
}


def lstat_all(root):
    """{relative path: lstat} of every entry of the tree, '.' for the root."""
    found = {".": os.lstat(root)}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            found[os.path.relpath(path, root)] = os.lstat(path)
    return found


def owners(stats):
    return {rel: (st.st_uid, st.st_gid) for rel, st in stats.items()}


def snapshot(root):
    """{relative path: (uid, gid, ctime_ns)}: any chown, even to the same ids, moves ctime."""
    return {rel: (st.st_uid, st.st_gid, st.st_ctime_ns) for rel, st in lstat_all(root).items()}


@pytest.fixture
def tree(tmp_path):
    """A cache-like tree, all UID:GID except WRONG, plus targets outside it; returns paths."""
    root = tmp_path / "hf-cache"
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "target.txt").write_text("outside\n")
    (outside / "dir" / "inner.txt").write_text("outside\n")

    model = root / "hub" / "models--org--m"
    (model / "blobs").mkdir(parents=True)
    (model / "refs").mkdir()
    (model / "snapshots" / "rev1" / "sub").mkdir(parents=True)
    (root / "hub" / "empty").mkdir()
    (root / "hub" / "version.txt").write_text("1")
    (model / "refs" / "main").write_text("rev1")
    for blob in ("b1", "b2", "b3"):
        (model / "blobs" / blob).write_bytes(b"w" * 10)
    (model / "snapshots" / "rev1" / "config.json").symlink_to("../../blobs/b1")
    (model / "snapshots" / "rev1" / "sub" / "w.safetensors").symlink_to("../../../blobs/b2")
    (root / "hub" / "link_out").symlink_to(outside / "target.txt")
    (root / "hub" / "dirlink_out").symlink_to(outside / "dir")
    (root / "hub" / "broken").symlink_to(root / "hub" / "nowhere")

    for rel in lstat_all(root):
        os.lchown(os.path.join(root, rel), UID, GID)
    for rel, (uid, gid) in WRONG.items():
        os.lchown(root / rel, uid, gid)
    for path in (outside, outside / "target.txt", outside / "dir", outside / "dir" / "inner.txt"):
        os.lchown(path, OUTSIDE_UID, OUTSIDE_UID)
    # ctime has the kernel's coarse clock: let it move on, so that a chown of an entry
    # that was already right would show in its ctime.
    time.sleep(0.05)

    class Tree:
        pass

    Tree.root = str(root)
    Tree.outside = str(outside)
    Tree.count = len(lstat_all(root))  # 19 entries, the root included
    return Tree


def outside_owners(tree):
    return owners(lstat_all(tree.outside))


def abs_paths(tree, rels):
    return {os.path.join(tree.root, rel) for rel in rels}


@pytest.fixture
def chown_calls(monkeypatch):
    """Record every os.chown the walk makes (name or descriptor), then make it."""
    calls = []
    real = os.chown

    def chown(path, uid, gid, **kwargs):
        calls.append(path)
        return real(path, uid, gid, **kwargs)

    monkeypatch.setattr(os, "chown", chown)
    return calls


# --- repairs ----------------------------------------------------------------------------


def test_fixes_only_the_wrong_entries(tree, chown_calls):
    before = snapshot(tree.root)
    report = repair_tree(tree.root, UID, GID)
    after = snapshot(tree.root)

    assert report.scanned == tree.count == 19
    assert report.fixed == len(WRONG) == 5
    assert set(report.fixed_sample) == abs_paths(tree, WRONG)
    assert report.errors == []
    assert report.error_count == 0
    assert report.skipped_mounts == []
    assert report.root_fixed is False
    assert sorted(chown_calls) == sorted(os.path.basename(rel) for rel in WRONG)
    assert {ids[:2] for ids in after.values()} == {(UID, GID)}
    for rel, ids in before.items():
        if rel not in WRONG:
            assert after[rel] == ids, rel
        else:
            assert after[rel][2] != ids[2], rel


def test_symlinks_are_fixed_themselves_never_followed(tree):
    outside_before = outside_owners(tree)
    repair_tree(tree.root, UID, GID)
    assert outside_owners(tree) == outside_before
    assert set(outside_before.values()) == {(OUTSIDE_UID, OUTSIDE_UID)}
    link = os.lstat(os.path.join(tree.root, "hub", "link_out"))
    assert (link.st_uid, link.st_gid) == (UID, GID)


def test_second_run_fixes_nothing(tree, chown_calls):
    first = repair_tree(tree.root, UID, GID)
    chown_calls.clear()
    time.sleep(0.05)
    before = snapshot(tree.root)
    second = repair_tree(tree.root, UID, GID)
    assert first.fixed == 5
    assert second.to_dict() == TreeReport(scanned=tree.count).to_dict()
    assert chown_calls == []
    assert snapshot(tree.root) == before


def test_dry_run_changes_nothing(tree, chown_calls):
    before = snapshot(tree.root)
    report = repair_tree(tree.root, UID, GID, dry_run=True)
    assert chown_calls == []
    assert snapshot(tree.root) == before
    assert report.fixed == 5
    assert set(report.fixed_sample) == abs_paths(tree, WRONG)
    # It reports what the real run then does.
    assert repair_tree(tree.root, UID, GID).to_dict() == report.to_dict()


def test_other_ids_fix_everything(tree):
    report = repair_tree(tree.root, 0, 0)
    assert report.fixed == tree.count - 2  # all but version.txt and link_out, already 0:0
    assert report.root_fixed is True
    assert set(owners(lstat_all(tree.root)).values()) == {(0, 0)}


@pytest.mark.parametrize(("sample", "expected"), [(0, 0), (2, 2), (5, 5), (100, 5)])
def test_sample_bounds_the_paths_not_the_count(tree, sample, expected):
    report = repair_tree(tree.root, UID, GID, sample=sample)
    assert report.fixed == 5
    assert len(report.fixed_sample) == expected


def test_wrong_root_counts_and_comes_first(tree):
    os.chown(tree.root, 0, GID)
    report = repair_tree(tree.root, UID, GID)
    assert report.root_fixed is True
    assert report.fixed == 6
    assert report.fixed_sample[0] == tree.root
    assert (os.stat(tree.root).st_uid, os.stat(tree.root).st_gid) == (UID, GID)


def test_root_symlink_is_followed_once(tree, tmp_path):
    os.chown(tree.root, 0, 0)
    link = tmp_path / "cache-link"
    link.symlink_to(tree.root)
    os.lchown(link, 0, 0)
    report = repair_tree(str(link), UID, GID)
    assert report.root_fixed is True
    assert report.scanned == tree.count
    assert report.fixed_sample[0] == str(link)
    assert os.path.join(str(link), "hub", "version.txt") in report.fixed_sample
    assert set(owners(lstat_all(tree.root)).values()) == {(UID, GID)}
    assert (os.lstat(link).st_uid, os.lstat(link).st_gid) == (0, 0)  # the link itself: not ours
    assert set(outside_owners(tree).values()) == {(OUTSIDE_UID, OUTSIDE_UID)}


@pytest.mark.parametrize("wrong", [True, False], ids=["wrong-file", "right-file"])
def test_root_may_be_a_single_file(tmp_path, wrong):
    path = tmp_path / "one.bin"
    path.write_bytes(b"x")
    os.chown(path, 0 if wrong else UID, GID)
    report = repair_tree(str(path), UID, GID)
    assert (report.scanned, report.fixed, report.root_fixed) == (1, int(wrong), wrong)
    assert (os.stat(path).st_uid, os.stat(path).st_gid) == (UID, GID)


def test_missing_root_raises(tmp_path):
    missing = str(tmp_path / "no-such-cache")
    with pytest.raises(TreeOwnerError, match="no-such-cache does not exist: create it first"):
        repair_tree(missing, UID, GID)
    with pytest.raises(TreeOwnerError, match="does not exist"):
        repair_tree(missing, UID, GID, dry_run=True)


def test_missing_root_error_is_a_value_error():
    assert issubclass(TreeOwnerError, ValueError)


def test_deeper_than_the_recursion_limit(tmp_path):
    depth = 1100  # one open descriptor per level
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = depth + 200
    if soft < needed and (hard == resource.RLIM_INFINITY or hard >= needed):
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    elif soft < needed:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} is below {needed}")
    deep = tmp_path / "deep"
    deep.mkdir()
    try:
        fd = os.open(deep, os.O_RDONLY)
        try:  # relative steps: the full path would pass PATH_MAX long before the end
            for _level in range(depth):
                os.mkdir("d", dir_fd=fd)
                child = os.open("d", os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = child
            os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        finally:
            os.close(fd)
        report = repair_tree(str(deep), UID, GID, sample=0)
        assert (report.scanned, report.fixed, report.error_count) == (depth + 2, depth + 2, 0)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        # pytest's own clean-up of old tmp_path trees (shutil.rmtree, recursive before
        # Python 3.12) would hit the recursion limit on this one: rm copes.
        subprocess.run(["rm", "-rf", "--", str(deep)], check=True)


# --- mount points -----------------------------------------------------------------------


@pytest.fixture
def tmpfs_in_tree(tree):
    """A real tmpfs mounted at hub/mnt, holding a root-owned file; skip when not allowed."""
    mnt = os.path.join(tree.root, "hub", "mnt")
    os.mkdir(mnt)
    os.chown(mnt, UID, GID)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,uid=0,gid=0", "gb10-tree-owner", mnt],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        with open(os.path.join(mnt, "other-fs.txt"), "w") as handle:
            handle.write("x")
        yield mnt
    finally:
        subprocess.run(["umount", mnt], check=True)


def test_mount_points_are_not_crossed(tree, tmpfs_in_tree):
    report = repair_tree(tree.root, UID, GID)
    assert report.skipped_mounts == [tmpfs_in_tree]
    assert report.scanned == tree.count  # neither the mount point nor what is under it
    assert report.fixed == 5
    for path in (tmpfs_in_tree, os.path.join(tmpfs_in_tree, "other-fs.txt")):
        assert (os.lstat(path).st_uid, os.lstat(path).st_gid) == (0, 0)


# --- races with a running download -------------------------------------------------------


def wrap(monkeypatch, name, before):
    """Replace os.<name> by a wrapper calling before(args) and then the real function."""
    real = getattr(os, name)

    def wrapper(*args, **kwargs):
        before(*args)
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, wrapper)


def test_entry_vanishing_after_the_listing_is_skipped(tree, monkeypatch):
    victim = os.path.join(tree.root, "hub", "version.txt")

    class Listing:
        """os.scandir that removes version.txt once listed, before its lstat."""

        def __init__(self, real):
            self.real = real

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.real.close()

        def __iter__(self):
            entries = list(self.real)
            if any(entry.name == "version.txt" for entry in entries) and os.path.exists(victim):
                os.unlink(victim)
            return iter(entries)

    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda target: Listing(real_scandir(target)))
    report = repair_tree(tree.root, UID, GID)
    assert report.errors == []
    assert report.scanned == tree.count - 1
    assert report.fixed == 4
    assert victim not in report.fixed_sample


def test_entry_vanishing_before_its_chown_is_skipped(tree, monkeypatch):
    def before(path, *args):
        if path == "version.txt":
            os.unlink(os.path.join(tree.root, "hub", "version.txt"))

    wrap(monkeypatch, "chown", before)
    report = repair_tree(tree.root, UID, GID)
    assert report.errors == []
    assert report.error_count == 0
    assert report.fixed == 4
    assert report.scanned == tree.count


def test_directory_vanishing_before_it_is_entered_is_skipped(tree, monkeypatch):
    blobs = os.path.join(tree.root, "hub", "models--org--m", "blobs")

    def before(path, *args):
        if path == "blobs" and os.path.exists(blobs):
            shutil.rmtree(blobs)

    wrap(monkeypatch, "open", before)
    report = repair_tree(tree.root, UID, GID)
    assert report.errors == []
    assert report.scanned == tree.count - 3  # b1, b2, b3 never listed
    assert report.fixed == 4  # b1 is gone


def test_directory_swapped_for_a_symlink_is_not_followed(tree, monkeypatch):
    """A user owning the tree replaces a directory by a link to elsewhere mid-walk."""
    sub = os.path.join(tree.root, "hub", "models--org--m", "snapshots", "rev1", "sub")
    for name in ("dir", "dir/inner.txt"):
        os.chown(os.path.join(tree.outside, name), 0, 0)  # what root must not give away

    def before(path, *args):
        if path == "sub" and not os.path.islink(sub):
            os.rename(sub, sub + ".old")
            os.symlink(os.path.join(tree.outside, "dir"), sub)

    wrap(monkeypatch, "open", before)
    report = repair_tree(tree.root, UID, GID)
    assert report.errors == []
    for name in ("dir", "dir/inner.txt"):
        st = os.stat(os.path.join(tree.outside, name))
        assert (st.st_uid, st.st_gid) == (0, 0), name


# --- failures ---------------------------------------------------------------------------


def refuse(monkeypatch, names, code):
    """os.chown raises OSError(code) for these entry names; others are changed."""
    real = os.chown

    def chown(path, uid, gid, **kwargs):
        if path in names:
            raise OSError(code, os.strerror(code))
        return real(path, uid, gid, **kwargs)

    monkeypatch.setattr(os, "chown", chown)


def test_refused_change_is_an_error_and_the_walk_goes_on(tree, monkeypatch):
    refuse(monkeypatch, {"version.txt"}, errno.EPERM)
    report = repair_tree(tree.root, UID, GID)
    victim = os.path.join(tree.root, "hub", "version.txt")
    assert report.errors == [{"path": victim, "error": "EPERM: Operation not permitted"}]
    assert report.error_count == 1
    assert report.fixed == 4
    assert victim not in report.fixed_sample
    assert (os.lstat(victim).st_uid, os.lstat(victim).st_gid) == (0, 0)
    message = failure_message(tree.root, report)
    assert message.startswith("could not read or change the ownership of 1 entries under ")
    assert f"{victim} (EPERM: Operation not permitted)" in message
    assert "chattr -i -a" in message
    assert "root_squash" in message


def test_read_only_filesystem_errors_are_capped(tree, monkeypatch):
    refuse(monkeypatch, {os.path.basename(rel) for rel in WRONG}, errno.EROFS)
    report = repair_tree(tree.root, UID, GID, max_errors=2)
    assert report.fixed == 0
    assert report.error_count == 5
    assert len(report.errors) == 2
    assert all(item["error"] == "EROFS: Read-only file system" for item in report.errors)
    message = failure_message(tree.root, report, limit=1)
    assert "; and 4 more." in message
    assert "mount -o remount,rw" in message


def test_unknown_errno_gets_the_generic_advice(tree, monkeypatch):
    refuse(monkeypatch, {"b1"}, errno.EINVAL)
    report = repair_tree(tree.root, UID, GID)
    assert report.errors[0]["error"] == "EINVAL: Invalid argument"
    assert "findmnt -T" in failure_message(tree.root, report)


def test_unreadable_directory_is_an_error(tree, monkeypatch):
    real_scandir = os.scandir
    seen = []

    def scandir(target):
        seen.append(target)
        if len(seen) == 3:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_scandir(target)

    monkeypatch.setattr(os, "scandir", scandir)
    report = repair_tree(tree.root, UID, GID)
    assert report.error_count == 1
    assert report.errors[0]["error"] == "EACCES: Permission denied"
    assert os.path.isdir(report.errors[0]["path"])


def test_to_dict_keys(tree):
    assert set(repair_tree(tree.root, UID, GID).to_dict()) == REPORT_KEYS
