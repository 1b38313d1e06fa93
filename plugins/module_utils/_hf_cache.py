# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read a Hugging Face hub cache without huggingface_hub: what a snapshot holds, on disk.

The layout, as huggingface_hub writes it (``file_download.py``, ``_cache_manager.py``)::

    <HF_HOME>/hub/                      # HF_HUB_CACHE; its default is $HF_HOME/hub
      models--<org>--<name>/            # datasets--..., spaces--... for the other types
        blobs/<etag>                    # git sha1 (regular file) or sha256 (LFS file)
        blobs/<etag>.incomplete         # a download in progress, or an interrupted one
        refs/<branch-or-tag>            # the commit hash, 40 hex digits, no newline;
                                        # a ref with "/" is a nested path (refs/refs/pr/1)
        snapshots/<commit>/<path>       # relative symlink into ../../blobs/<etag>
                                        # (one more ../ per directory level of <path>)
        .no_exist/<commit>/<path>       # "this file does not exist upstream" markers

huggingface_hub downloads into ``blobs/<etag>.incomplete``, renames it to ``blobs/<etag>``
when complete, and only then creates the snapshot symlink. It writes ``refs/<revision>``
and creates ``snapshots/<commit>/`` *before* downloading, so a resolving ref or an existing
snapshot directory does not mean any file is there. Where symlinks are not supported the
snapshot holds regular files instead, and newer releases may make ``blobs/<etag>`` itself a
symlink into a cache-wide store (``<hub>/blobs/``); both are read here.

Nothing here imports Ansible: the module and the filter share these functions.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

from ansible_collections.gb10.serving.plugins.module_utils._nofollow import (
    NotRegularFile,
    read_regular,
)

REPO_TYPES = ("model", "dataset", "space")
# huggingface_hub's REGEX_COMMIT_HASH: lower-case only.
COMMIT_RE = re.compile(r"^[0-9a-f]{40}\Z")
INCOMPLETE_SUFFIX = ".incomplete"
# Children of a hub directory that hold a repository.
REPO_DIR_RE = re.compile(r"^(?:models|datasets|spaces)--.+")
# "org/name" or a bare legacy "name" (gpt2); huggingface_hub rejects "--" and "..".
_REPO_ID_RE = re.compile(r"^(?:[\w.-]+/)?[\w.-]+$", re.ASCII)
# A ref is read at most this far; a real one is 40 bytes.
_REF_READ_LIMIT = 4096
# stat() errors that mean "the symlink leads nowhere", not "cannot read".
_BROKEN_ERRNOS = frozenset((errno.ENOENT, errno.ENOTDIR, errno.ELOOP))
_PERMISSION_HINT = (
    "run the task as the user who owns the cache (become_user), or make the cache readable"
)


class HfCacheError(ValueError):
    """The cache, or what was asked of it, is not what huggingface_hub would have made."""


class HfCacheReadError(HfCacheError):
    """A path of the cache exists but cannot be read (permissions, I/O)."""

    def __init__(self, path, exc):
        if isinstance(exc, NotRegularFile):
            hint = "remove it and download again"
        else:
            hint = _PERMISSION_HINT
        super().__init__("cannot read %s: %s: %s" % (path, exc.strerror or exc, hint))
        self.path = path
        self.errno = exc.errno


@dataclass
class SnapshotManifest:
    """What one snapshot of a repository holds on disk.

    ``files`` maps the path inside the repository (``/``-separated) to its size in bytes,
    read through the snapshot symlink; ``blobs`` maps the same paths to the blob name the
    symlink points to (the etag: git sha1, or sha256 for LFS files). A file stored as a
    regular file in the snapshot has a size and no blob name. ``broken`` lists symlinks
    whose blob is missing (they are not in ``files``, but are in ``blobs``); ``incomplete``
    lists the repository's ``blobs/*.incomplete`` names, whatever revision they are for.
    """

    commit: str
    files: Dict[str, int] = field(default_factory=dict)
    blobs: Dict[str, str] = field(default_factory=dict)
    broken: List[str] = field(default_factory=list)
    incomplete: List[str] = field(default_factory=list)
    total_bytes: int = 0

    def to_dict(self) -> dict:
        """The manifest as plain data (commit, files, blobs, broken, incomplete, total_bytes)."""
        return asdict(self)


def check_repo_id(repo_id: str) -> None:
    """Raise HfCacheError unless ``repo_id`` is ``org/name`` or a bare ``name``."""
    if (
        not isinstance(repo_id, str)
        or not _REPO_ID_RE.match(repo_id)
        or "--" in repo_id
        or ".." in repo_id
    ):
        raise HfCacheError(
            "repo_id %r is not a Hugging Face repository id: expected 'org/name' (letters,"
            " digits, '-', '_', '.'; no '--' or '..'), for example"
            " 'deepseek-ai/DeepSeek-V4-Flash-DSpark'" % (repo_id,)
        )


def check_revision(revision: str) -> None:
    """Raise HfCacheError unless ``revision`` can name a ref under ``refs/``.

    Branches, tags (which may hold ``/``: ``release/v1``), ``refs/pr/N`` and commit hashes
    all pass; an empty name, an absolute path or ``.``/``..`` components do not.
    """
    if not isinstance(revision, str) or not revision:
        raise HfCacheError("revision must be a non-empty branch, tag or commit hash")
    parts = revision.split("/")
    if "\\" in revision or "\0" in revision or any(part in ("", ".", "..") for part in parts):
        raise HfCacheError(
            "revision %r is not a branch, tag or commit hash: no empty, '.' or '..' path"
            " components, leading or trailing '/', or backslashes" % (revision,)
        )


def repo_dir(hub_dir: str, repo_id: str, repo_type: str = "model") -> str:
    """Path of a repository in a hub cache: ``<hub_dir>/models--<org>--<name>``.

    ``repo_type`` is ``model``, ``dataset`` or ``space`` (folder prefixes ``models--``,
    ``datasets--``, ``spaces--``), as in huggingface_hub's ``repo_folder_name``.
    """
    if repo_type not in REPO_TYPES:
        raise HfCacheError("repo_type %r is not one of %s" % (repo_type, ", ".join(REPO_TYPES)))
    check_repo_id(repo_id)
    return os.path.join(hub_dir, "--".join([repo_type + "s"] + repo_id.split("/")))


def _has_repo_children(path):
    """True when ``path`` holds a ``models--*``/``datasets--*``/``spaces--*`` directory."""
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if REPO_DIR_RE.match(entry.name) and entry.is_dir():
                    return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise HfCacheReadError(path, exc) from exc
    return False


def find_hub_dir(cache_dir: str, repo_folder: Optional[str] = None) -> str:
    """The hub cache for ``cache_dir``, which may be HF_HOME or the hub directory itself.

    In order: the one of ``<cache_dir>/hub`` and ``<cache_dir>`` that holds
    ``repo_folder`` (when given); ``<cache_dir>/hub`` when it is a directory; ``cache_dir``
    when it holds ``models--*``, ``datasets--*`` or ``spaces--*`` directories; otherwise
    ``<cache_dir>/hub``, which may not exist yet (nothing downloaded).
    Raises HfCacheReadError when ``cache_dir`` exists but cannot be listed.
    """
    hub = os.path.join(cache_dir, "hub")
    if repo_folder is not None:
        for candidate in (hub, cache_dir):
            if os.path.isdir(os.path.join(candidate, repo_folder)):
                return candidate
    if os.path.isdir(hub):
        return hub
    if _has_repo_children(cache_dir):
        return cache_dir
    return hub


def _read_ref(path):
    # refs/ belongs to the container UID: a symlink there is refused, never read as root.
    try:
        data = read_regular(path, _REF_READ_LIMIT)
    except OSError as exc:
        raise HfCacheReadError(path, exc) from exc
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        return repr(data)


def resolve_revision(repo_path: str, revision: str) -> Optional[str]:
    """The commit hash ``revision`` names in the repository at ``repo_path``, or None.

    A 40-hex commit is returned as it is when ``snapshots/<commit>`` exists. Otherwise
    ``refs/<revision>`` (a branch or tag; ``/`` in a tag is a nested path under ``refs/``)
    is read; None when there is no such ref. Raises HfCacheError when the ref does not
    hold exactly a 40-hex commit: huggingface_hub reads refs verbatim, so a ref with, say,
    a trailing newline names no snapshot for it. Raises HfCacheReadError when unreadable.
    """
    check_revision(revision)
    if COMMIT_RE.match(revision) and os.path.isdir(os.path.join(repo_path, "snapshots", revision)):
        return revision
    ref_path = os.path.join(repo_path, "refs", *revision.split("/"))
    if not os.path.isfile(ref_path):
        return None
    text = _read_ref(ref_path)
    if not COMMIT_RE.match(text):
        raise HfCacheError(
            "refs/%s holds %r, not a 40-hex commit hash (huggingface_hub writes the hash"
            " alone, with no newline): remove the ref and download again" % (revision, text[:80])
        )
    return text


def _snapshot_entries(root):
    """(relative path, DirEntry) of every non-directory under ``root``, depth first.

    Directories are not followed through symlinks. Raises HfCacheReadError when a
    directory cannot be listed; one removed while walking (a concurrent prune) is skipped.
    """
    stack = [""]
    while stack:
        prefix = stack.pop()
        path = os.path.join(root, *prefix.split("/")) if prefix else root
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    rel = prefix + "/" + entry.name if prefix else entry.name
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(rel)
                    else:
                        yield rel, entry
        except FileNotFoundError as exc:
            if not prefix:  # removed between the caller's check and the walk
                raise HfCacheError("%s disappeared while being read" % root) from exc
        except OSError as exc:
            raise HfCacheReadError(path, exc) from exc


def _incomplete_blobs(blobs_dir):
    names = []
    try:
        with os.scandir(blobs_dir) as entries:
            for entry in entries:
                if entry.name.endswith(INCOMPLETE_SUFFIX) and not entry.is_dir():
                    names.append(entry.name)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise HfCacheReadError(blobs_dir, exc) from exc
    return sorted(names)


def snapshot_manifest(repo_path: str, commit: str) -> SnapshotManifest:
    """Files, sizes, blob names, broken symlinks and incomplete blobs of one snapshot.

    Walks ``snapshots/<commit>`` with os.scandir; ``.no_exist/``, ``refs/`` and blobs no
    snapshot links are not part of a snapshot and are never read. A symlink whose target
    is missing, loops, or is not a regular file is ``broken``. Raises HfCacheError when
    ``commit`` is not a 40-hex hash or ``snapshots/<commit>`` is not a directory, and
    HfCacheReadError when something exists but cannot be read.
    """
    if not isinstance(commit, str) or not COMMIT_RE.match(commit):
        raise HfCacheError("commit %r is not a 40-hex commit hash" % (commit,))
    root = os.path.join(repo_path, "snapshots", commit)
    if not os.path.isdir(root):
        raise HfCacheError(
            "snapshots/%s does not exist in %s: nothing of this revision was downloaded"
            " (huggingface_hub writes refs/ and .no_exist/ entries before, or without,"
            " downloading any file)" % (commit, repo_path)
        )
    sizes = {}
    blobs = {}
    broken = []
    for rel, entry in _snapshot_entries(root):
        if entry.is_symlink():
            try:
                target = os.readlink(entry.path)
            except FileNotFoundError:
                continue  # removed while walking
            except OSError as exc:
                raise HfCacheReadError(entry.path, exc) from exc
            blobs[rel] = os.path.basename(target.rstrip("/\\")) or target
            try:
                info = os.stat(entry.path)
            except OSError as exc:
                if exc.errno in _BROKEN_ERRNOS:
                    broken.append(rel)
                    continue
                raise HfCacheReadError(entry.path, exc) from exc
            if not stat.S_ISREG(info.st_mode):
                broken.append(rel)
                continue
            sizes[rel] = info.st_size
        else:
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while walking
            except OSError as exc:
                raise HfCacheReadError(entry.path, exc) from exc
            if stat.S_ISREG(info.st_mode):
                sizes[rel] = info.st_size
    files = dict(sorted(sizes.items()))
    return SnapshotManifest(
        commit=commit,
        files=files,
        blobs=dict(sorted(blobs.items())),
        broken=sorted(broken),
        incomplete=_incomplete_blobs(os.path.join(repo_path, "blobs")),
        total_bytes=sum(files.values()),
    )


def _as_manifest(node, value):
    """Normalised (commit, files, blobs, broken, incomplete, problem) of one node's input."""
    if not isinstance(value, Mapping):
        raise HfCacheError(
            "%s: expected a hf_snapshot_info result or a manifest dict, got %s"
            % (node, type(value).__name__)
        )
    if value.get("failed"):
        raise HfCacheError(
            "%s: hf_snapshot_info failed there: %s" % (node, value.get("msg", "(no message)"))
        )
    if "files" not in value or "commit" not in value:
        raise HfCacheError(
            "%s: not a hf_snapshot_info result or manifest: no %s key (was the task skipped?)"
            % (node, "'files'" if "files" not in value else "'commit'")
        )
    files = value.get("files") or {}
    blobs = value.get("blobs") or {}
    if not isinstance(files, Mapping) or not isinstance(blobs, Mapping):
        raise HfCacheError("%s: 'files' and 'blobs' must be mappings of path to value" % node)
    return (
        value.get("commit"),
        files,
        blobs,
        list(value.get("broken") or []),
        list(value.get("incomplete") or []),
        value.get("problem"),
    )


def _listing(nodes, values):
    return ", ".join("%s=%s" % (node, values[node]) for node in nodes)


def compare_manifests(manifests: Mapping[str, Mapping]) -> List[str]:
    """Every difference between the nodes' snapshots, each naming the file; [] if none.

    ``manifests`` maps a node name to a :class:`SnapshotManifest` dict or to a
    hf_snapshot_info result. Reported: a node whose revision did not resolve, or whose
    snapshot holds no file; different commits; a file missing on some nodes; the same file
    with different sizes or different blob names (only compared where both have a blob
    name); broken symlinks; ``.incomplete`` blobs (with the file another node links to
    that blob, when one does). Raises HfCacheError for no nodes or input that is not a
    manifest (a failed or skipped task's result, say).
    """
    if not isinstance(manifests, Mapping) or not manifests:
        raise HfCacheError("compare_manifests needs a mapping of node name to manifest")
    nodes = sorted(str(node) for node in manifests)
    data = {str(node): _as_manifest(str(node), value) for node, value in manifests.items()}
    differences = []

    commits = {}
    for node in nodes:
        commit, files, _blobs, broken, _incomplete, problem = data[node]
        why = " (%s)" % problem if problem else ""
        if commit is None:
            differences.append("%s: the revision is not in its cache%s" % (node, why))
        else:
            commits[node] = commit
            if not files and not broken:
                differences.append("%s: snapshot %s holds no files%s" % (node, commit, why))
    if len(set(commits.values())) > 1:
        differences.append("different commits: %s" % _listing(sorted(commits), commits))

    # Nodes holding at least one file take part in the per-file comparison.
    holding = [node for node in nodes if data[node][1] or data[node][3]]
    paths = set()
    for node in holding:
        paths.update(data[node][1])
        paths.update(data[node][3])
    for path in sorted(paths):
        have = [n for n in holding if path in data[n][1] or path in data[n][3]]
        missing = [n for n in holding if n not in have]
        if missing:
            differences.append(
                "%s: only on %s (missing on %s)" % (path, ", ".join(have), ", ".join(missing))
            )
        sized = {n: data[n][1][path] for n in have if path in data[n][1]}
        if len(set(sized.values())) > 1:
            differences.append(
                "%s: sizes differ: %s"
                % (path, ", ".join("%s=%s bytes" % (n, sized[n]) for n in sorted(sized)))
            )
        named = {n: data[n][2][path] for n in have if path in data[n][2]}
        if len(set(named.values())) > 1:
            differences.append("%s: blobs differ: %s" % (path, _listing(sorted(named), named)))
        for node in have:
            if path in data[node][3]:
                differences.append(
                    "%s: broken symlink on %s (blob %s is missing: interrupted download or"
                    " deleted blob)" % (path, node, data[node][2].get(path, "?"))
                )

    for node in nodes:
        for name in sorted(data[node][4]):
            blob = name[: -len(INCOMPLETE_SUFFIX)] if name.endswith(INCOMPLETE_SUFFIX) else name
            linked = sorted(
                "%s on %s" % (path, other)
                for other in nodes
                for path, target in data[other][2].items()
                if target == blob
            )
            where = " (%s)" % ", ".join(linked) if linked else ""
            differences.append(
                "%s: blobs/%s: download in progress or interrupted%s" % (node, name, where)
            )
    return differences
