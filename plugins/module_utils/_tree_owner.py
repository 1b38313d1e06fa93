# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Repair the ownership of a large directory tree, touching only the entries that are wrong.

Pure Python, no Ansible imports, for ``gb10.serving.tree_owner`` and ``benchmarks/``.

The walk is iterative (no recursion limit) and works relative to directory file
descriptors: each directory is opened from its parent's descriptor with ``O_NOFOLLOW``,
listed with ``os.scandir(fd)``, its entries are ``lstat``-ed with ``fstatat`` (what
``DirEntry.stat(follow_symlinks=False)`` does on a descriptor) and fixed with ``fchownat``
and ``AT_SYMLINK_NOFOLLOW`` (``os.chown(name, dir_fd=fd, follow_symlinks=False)``, the
descriptor-relative ``lchown``). So:

* a symlink is fixed itself and never followed, neither as the last component nor as a
  directory swapped for a symlink during the walk. The tree is writable by the container
  UID by design and this runs as root; a path-based ``lchown`` would still follow a
  symlink put in place of a parent directory between the listing and the change;
* no full path is built per entry, only per directory and for reported entries;
* the walk stays on the root's filesystem: entries on another device (mount points,
  bind-mounted files) are neither changed nor entered, and are listed in
  ``skipped_mounts``.

Entries that vanish during the walk (a download renaming its ``.incomplete`` files) are
skipped silently; every other failure is recorded in ``errors`` and the walk goes on.
"""

from __future__ import annotations

import errno
import os
from dataclasses import asdict, dataclass, field
from typing import Dict, List

# Kept in TreeReport.errors; error_count counts them all.
MAX_ERRORS = 100

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_S_IFMT = 0o170000
_S_IFDIR = 0o040000
# Opening a subdirectory failed because it is gone or is no longer a directory (removed,
# or replaced by a file or symlink during the walk): skipped like a vanished entry.
_GONE_ERRNOS = frozenset((errno.ENOENT, errno.ENOTDIR, errno.ELOOP))

# What to do about a failed change, by errno name; see failure_message().
_HINTS = {
    "EROFS": "the filesystem is mounted read-only: remount it read-write"
    " (mount -o remount,rw <mount point>) or point path at a writable copy",
    "EPERM": "the entry is immutable or append-only (lsattr -d <path>; chattr -i -a <path>),"
    " or the filesystem does not let root change owners (NFS with root_squash, a CIFS or"
    " FUSE mount): change the owner on the server, or mount it with matching uid=/gid=",
    "EACCES": "access was denied (NFS root_squash, SELinux/AppArmor, a FUSE mount without"
    " allow_root): fix the ownership where the data is served, or relax the policy",
    "EIO": "an I/O error: check the disk (dmesg) before changing anything else",
}


class TreeOwnerError(ValueError):
    """The root of the tree is missing or cannot be examined at all."""


@dataclass
class TreeReport:
    """What repair_tree() found and did (or, with dry_run, would do)."""

    scanned: int = 0  # entries whose ownership was checked, the root included
    fixed: int = 0  # entries changed (dry run: that would be changed)
    fixed_sample: List[str] = field(default_factory=list)  # first paths of those
    errors: List[Dict[str, str]] = field(default_factory=list)  # first MAX_ERRORS failures
    error_count: int = 0  # every failure, also those beyond the kept ones
    skipped_mounts: List[str] = field(default_factory=list)  # other filesystems, not entered
    root_fixed: bool = False  # the root itself was (would be) changed

    def to_dict(self) -> dict:
        """The report as a plain dict (lists copied)."""
        return asdict(self)


def _describe(exc):
    """'EROFS: Read-only file system' for an OSError."""
    name = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else "error"
    return "%s: %s" % (name, exc.strerror or exc)


def repair_tree(
    root: str,
    uid: int,
    gid: int,
    dry_run: bool = False,
    sample: int = 20,
    max_errors: int = MAX_ERRORS,
) -> TreeReport:
    """Give every entry of the tree at ``root`` the owner ``uid`` and group ``gid``.

    Only entries whose uid or gid differs are changed (both ids are always set). With
    ``dry_run`` nothing is changed and ``fixed`` counts what would be. A ``root`` that is
    itself a symlink is followed (like ``chown -R -H``); no symlink below it is.
    ``fixed_sample`` holds the first ``sample`` paths fixed, ``errors`` the first
    ``max_errors`` failures as ``{path, error}``.

    Raises TreeOwnerError when ``root`` does not exist or cannot be examined.
    """
    # Looked up per call, not at import: tests replace them to simulate races and failures.
    scandir = os.scandir
    chown = os.chown
    os_open = os.open
    close = os.close
    join = os.path.join

    report = TreeReport()
    fixed_sample = report.fixed_sample
    errors = report.errors
    skipped_mounts = report.skipped_mounts
    scanned = fixed = error_count = 0

    def add_error(path, exc):
        nonlocal error_count
        error_count += 1
        if len(errors) < max_errors:
            errors.append({"path": path, "error": _describe(exc)})

    try:
        root_st = os.stat(root)
    except FileNotFoundError as exc:
        raise TreeOwnerError(
            "%s does not exist: create it first (ansible.builtin.file state=directory) or fix"
            " the path" % root
        ) from exc
    except OSError as exc:
        raise TreeOwnerError("cannot examine %s: %s" % (root, _describe(exc))) from exc

    if root_st.st_mode & _S_IFMT != _S_IFDIR:
        # A single file (or a symlink to one): nothing to walk.
        report.scanned = 1
        if root_st.st_uid != uid or root_st.st_gid != gid:
            try:
                if not dry_run:
                    chown(root, uid, gid)
            except OSError as exc:
                add_error(root, exc)
            else:
                report.fixed = 1
                report.root_fixed = True
                if sample > 0:
                    fixed_sample.append(root)
        report.error_count = error_count
        return report

    try:
        root_fd = os_open(root, _DIR_FLAGS)
    except OSError as exc:
        raise TreeOwnerError("cannot open directory %s: %s" % (root, _describe(exc))) from exc

    # Depth-first, one open descriptor per level: [fd, path, names of subdirs not yet entered].
    frames = []
    fd, path = root_fd, root
    try:
        st = os.fstat(fd)
        dev = st.st_dev
        scanned = 1
        if st.st_uid != uid or st.st_gid != gid:
            try:
                if not dry_run:
                    chown(fd, uid, gid)
            except OSError as exc:
                add_error(root, exc)
            else:
                fixed = 1
                report.root_fixed = True
                if sample > 0:
                    fixed_sample.append(root)

        while True:
            if fd is not None:
                # List the directory just opened; fix its entries; remember its subdirs.
                subdirs = []
                try:
                    with scandir(fd) as listing:
                        entries = list(listing)
                except FileNotFoundError:
                    entries = ()
                except OSError as exc:
                    add_error(path, exc)
                    entries = ()
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    except OSError as exc:
                        add_error(join(path, entry.name), exc)
                        continue
                    if st.st_dev != dev:
                        skipped_mounts.append(join(path, entry.name))
                        continue
                    scanned += 1
                    if st.st_uid != uid or st.st_gid != gid:
                        try:
                            if not dry_run:
                                chown(entry.name, uid, gid, dir_fd=fd, follow_symlinks=False)
                        except FileNotFoundError:
                            pass
                        except OSError as exc:
                            add_error(join(path, entry.name), exc)
                        else:
                            fixed += 1
                            if len(fixed_sample) < sample:
                                fixed_sample.append(join(path, entry.name))
                    if st.st_mode & _S_IFMT == _S_IFDIR:
                        subdirs.append(entry.name)
                frames.append((fd, path, subdirs))
                fd = None

            if not frames:
                break
            parent_fd, parent_path, pending = frames[-1]
            if not pending:
                frames.pop()
                close(parent_fd)
                continue
            name = pending.pop()
            child_path = join(parent_path, name)
            try:
                child_fd = os_open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent_fd)
            except OSError as exc:
                if exc.errno not in _GONE_ERRNOS:
                    add_error(child_path, exc)
                continue
            # Checked again on the open descriptor: a mount may appear during the walk.
            if os.fstat(child_fd).st_dev != dev:
                close(child_fd)
                skipped_mounts.append(child_path)
                continue
            fd, path = child_fd, child_path
    finally:
        if fd is not None:
            close(fd)
        for frame in frames:
            close(frame[0])

    report.scanned = scanned
    report.fixed = fixed
    report.error_count = error_count
    return report


def failure_message(root: str, report: TreeReport, limit: int = 10) -> str:
    """Why the repair of ``root`` is incomplete and what to do: up to ``limit`` entries."""
    shown = report.errors[:limit]
    listed = "; ".join("%s (%s)" % (item["path"], item["error"]) for item in shown)
    more = report.error_count - len(shown)
    if more > 0:
        listed += "; and %d more" % more
    names = []
    for item in report.errors:
        name = item["error"].split(":", 1)[0]
        if name not in names:
            names.append(name)
    hints = [_HINTS[name] for name in names if name in _HINTS]
    if not hints or len(hints) < len(names):
        hints.append(
            "check the entries listed (ls -ld, lsattr -d) and the filesystem they are on"
            " (findmnt -T <path>)"
        )
    return (
        "could not read or change the ownership of %d entries under %s (%d fixed, %d"
        " scanned): %s. To fix: %s; then run again."
        % (report.error_count, root, report.fixed, report.scanned, listed, "; ".join(hints))
    )
