"""A lab stand-in for the Hugging Face Hub: serves model repositories from a local directory.

Lab shortcut: the lab has no internet, so this server answers the few HTTP calls that
``hf download REPO --revision REV`` (huggingface_hub 2.4.0, the client in the lab engine
image) makes, and nothing else. Point the client at it with ``HF_ENDPOINT``. See README.md.

Layout served: ``ROOT/<namespace>/<name>/<files...>`` is the model repository
``<namespace>/<name>``; its files are plain files (nested folders allowed). The commit id is
derived from the content, so the same files always give the same revision, and ``main``
resolves to it.

    python3 lab/hub/hub.py --root DIR --port P [--bind ADDR] [--throttle BYTES_PER_S]
                           [--drop-after BYTES] [--log FILE]

Standard library only. On start it prints ``listening on http://ADDR:PORT`` (with the real
port when ``--port 0``), then one JSON line per request to ``--log`` (default: stdout).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO
from urllib.parse import parse_qs, unquote, urlsplit

DEFAULT_BRANCH = "main"
CHUNK = 64 * 1024
# A git LFS pointer file is about this long; the tree API reports it for LFS files.
LFS_POINTER_SIZE = 134
COMMIT_RE = re.compile(r"[0-9a-f]{40}")
REPO_PART_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
API_RE = re.compile(
    r"/api/models/(?P<repo>[^/]+/[^/]+)"
    r"(?:/(?P<kind>revision|tree)/(?P<rev>[^/]+)(?P<path>/.*)?)?"
)
RESOLVE_RE = re.compile(r"/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)")
# Fixed, so the info endpoint gives the same answer for the same content.
EPOCH = "2024-01-01T00:00:00.000Z"


class RangeNotSatisfiable(ValueError):
    """A Range header that is well formed but starts past the end of the file."""


@dataclass(frozen=True)
class RepoFile:
    path: str  # POSIX path inside the repository
    size: int
    sha256: str
    git_oid: str  # the git blob id of the content, what the Hub calls the file's oid


@dataclass(frozen=True)
class Repo:
    repo_id: str
    root: Path
    commit: str
    files: tuple[RepoFile, ...]

    def file(self, path: str) -> RepoFile | None:
        for entry in self.files:
            if entry.path == path:
                return entry
        return None


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """Return the inclusive (first, last) byte a single-range ``Range`` header asks for.

    None means "send the whole file": no header, a unit other than bytes, several ranges or a
    malformed value (RFC 9110 lets a server ignore a Range it does not support). A range that
    starts at or past the end of a non-empty file raises RangeNotSatisfiable (HTTP 416).
    """
    if header is None:
        return None
    unit, _sep, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first_text, dash, last_text = spec.strip().partition("-")
    first_text, last_text = first_text.strip(), last_text.strip()
    if (
        not dash
        or not (first_text.isdigit() or first_text == "")
        or not (last_text.isdigit() or last_text == "")
    ):
        return None
    if first_text == "":
        if last_text == "":
            return None
        suffix = int(last_text)
        if suffix == 0:
            raise RangeNotSatisfiable(header)
        return (max(size - suffix, 0), size - 1) if size else None
    first = int(first_text)
    if last_text and int(last_text) < first:
        return None
    if first >= size:
        raise RangeNotSatisfiable(header)
    return first, min(int(last_text), size - 1) if last_text else size - 1


def commit_id(files: dict[str, str]) -> str:
    """The repository's commit id from {path: sha256 of content}.

    sha1 over ``<path>\\0<sha256>\\n`` in path order: the rule the lab's tiny model generator
    (lab/engine/tiny_model.py) uses for its revision, so serving the generator's files gives
    the same revision as generating them.
    """
    digest = hashlib.sha1(usedforsecurity=False)
    for path in sorted(files):
        digest.update(f"{path}\0{files[path]}\n".encode())
    return digest.hexdigest()


def _hash_file(path: Path) -> tuple[int, str, str]:
    size = path.stat().st_size
    sha = hashlib.sha256()
    oid = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
            oid.update(chunk)
    return size, sha.hexdigest(), oid.hexdigest()


def scan_repo(root: Path, repo_id: str) -> Repo:
    """Read a repository directory: every regular file below it, ``.git`` excluded."""
    entries = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if ".git" in rel.parts or not path.is_file():
            continue
        size, sha, oid = _hash_file(path)
        entries.append(RepoFile(rel.as_posix(), size, sha, oid))
    return Repo(repo_id, root, commit_id({e.path: e.sha256 for e in entries}), tuple(entries))


class RepoStore:
    """The repositories under --root, hashed once per (path, size, mtime) of their files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple, Repo]] = {}

    def get(self, repo_id: str) -> Repo | None:
        parts = repo_id.split("/")
        if len(parts) != 2 or not all(REPO_PART_RE.fullmatch(p) for p in parts):
            return None
        repo_dir = self.root / parts[0] / parts[1]
        if not repo_dir.is_dir():
            return None
        stamp = tuple(
            (str(p), p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(repo_dir.rglob("*"))
            if p.is_file()
        )
        with self._lock:
            cached = self._cache.get(repo_id)
            if cached and cached[0] == stamp:
                return cached[1]
        repo = scan_repo(repo_dir, repo_id)
        with self._lock:
            self._cache[repo_id] = (stamp, repo)
        return repo


def tree_entries(repo: Repo, path: str, recursive: bool) -> list[dict] | None:
    """The tree API's answer for a folder: files and folders below it, None if no such folder."""
    prefix = f"{path.strip('/')}/" if path.strip("/") else ""
    folders: set[str] = set()
    files = []
    for entry in repo.files:
        if not entry.path.startswith(prefix):
            continue
        rest = entry.path[len(prefix) :].split("/")
        for depth in range(1, len(rest)):
            if recursive or depth == 1:
                folders.add(prefix + "/".join(rest[:depth]))
        if recursive or len(rest) == 1:
            files.append(entry)
    if prefix and not files and not folders:
        return None
    answer: list[dict] = [
        {"type": "directory", "oid": "0" * 40, "size": 0, "path": folder}
        for folder in sorted(folders)
    ]
    for entry in files:
        answer.append(
            {
                "type": "file",
                "oid": entry.git_oid,
                "size": entry.size,
                "path": entry.path,
                "lfs": {"oid": entry.sha256, "size": entry.size, "pointerSize": LFS_POINTER_SIZE},
            }
        )
    return answer


def repo_info(repo: Repo, with_blobs: bool) -> dict:
    """The model info API's answer: the commit (``sha``) and the file list (``siblings``)."""
    siblings = []
    for entry in repo.files:
        sibling: dict = {"rfilename": entry.path}
        if with_blobs:
            sibling.update(
                size=entry.size,
                blobId=entry.git_oid,
                lfs={"sha256": entry.sha256, "size": entry.size, "pointerSize": LFS_POINTER_SIZE},
            )
        siblings.append(sibling)
    return {
        "_id": repo.commit[:24],
        "id": repo.repo_id,
        "modelId": repo.repo_id,
        "author": repo.repo_id.split("/")[0],
        "sha": repo.commit,
        "lastModified": EPOCH,
        "createdAt": EPOCH,
        "private": False,
        "gated": False,
        "disabled": False,
        "downloads": 0,
        "likes": 0,
        "tags": [],
        "siblings": siblings,
    }


class HubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, store: RepoStore, throttle: int, drop_after: int, log: IO[str]):
        super().__init__(address, HubHandler)
        self.store = store
        self.throttle = throttle
        self.drop_after = drop_after
        self.log = log
        self.log_lock = threading.Lock()
        self.dropped: set[tuple[str, str]] = set()
        self.in_flight: dict[int, dict] = {}

    def write_log(self, record: dict) -> None:
        with self.log_lock:
            self.in_flight.pop(id(record), None)
            self.log.write(json.dumps(record, sort_keys=True) + "\n")
            self.log.flush()

    def log_in_flight(self) -> None:
        """Log the requests still being answered (when the hub is stopped), as incomplete."""
        with self.log_lock:
            records, self.in_flight = list(self.in_flight.values()), {}
        for record in records:
            self.write_log({**record, "stopped": True})


class HubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HubServer

    def log_message(self, format, *args):
        """Silence the default stderr log: every request gets one JSON line instead."""

    def do_HEAD(self) -> None:
        self._handle(send_body=False)

    def do_GET(self) -> None:
        self._handle(send_body=True)

    def _handle(self, send_body: bool) -> None:
        record = {
            "time": round(time.time(), 3),
            "method": self.command,
            "path": self.path,
            "range": self.headers.get("Range"),
            "status": None,
            "start": 0,
            "sent": 0,
            "size": None,
            "complete": False,
        }
        with self.server.log_lock:
            self.server.in_flight[id(record)] = record
        try:
            self._route(record, send_body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            self.server.write_log(record)

    def _route(self, record: dict, send_body: bool) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        query = parse_qs(url.query)
        if match := RESOLVE_RE.fullmatch(path):
            repo = self._repo_at(match["repo"], match["rev"], record)
            if repo is not None:
                self._send_file(repo, match["path"], record, send_body)
            return
        if match := API_RE.fullmatch(path):
            repo = self._repo_at(match["repo"], match["rev"] or DEFAULT_BRANCH, record)
            if repo is None:
                return
            if match["kind"] == "tree":
                recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
                answer = tree_entries(repo, match["path"] or "", recursive)
                if answer is None:
                    self._error(record, 404, "EntryNotFound", "no such folder", repo.commit)
                    return
            else:
                with_blobs = query.get("blobs", ["false"])[0].lower() in ("1", "true")
                answer = repo_info(repo, with_blobs)
            self._send_json(record, answer, repo.commit, send_body)
            return
        self._error(record, 404, None, "not a path this lab hub serves")

    def _repo_at(self, repo_id: str, revision: str, record: dict) -> Repo | None:
        repo = self.server.store.get(repo_id)
        if repo is None:
            self._error(record, 404, "RepoNotFound", f"repository {repo_id} not found")
            return None
        if revision not in (DEFAULT_BRANCH, repo.commit):
            self._error(record, 404, "RevisionNotFound", f"invalid rev id: {revision}")
            return None
        return repo

    def _error(self, record, status, code, message, commit=None) -> None:
        body = json.dumps({"error": message}).encode()
        record["status"] = status
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        record["complete"] = True

    def _send_json(self, record, answer, commit, send_body) -> None:
        body = json.dumps(answer).encode()
        record["status"] = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Repo-Commit", commit)
        self.end_headers()
        if send_body:
            self.wfile.write(body)
            record["sent"] = len(body)
        record["complete"] = True

    def _send_file(self, repo: Repo, path: str, record: dict, send_body: bool) -> None:
        entry = repo.file(path)
        if entry is None:
            self._error(record, 404, "EntryNotFound", f"{path} not in {repo.repo_id}", repo.commit)
            return
        record["size"] = entry.size
        try:
            wanted = parse_range(self.headers.get("Range"), entry.size)
        except RangeNotSatisfiable:
            record["status"] = 416
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{entry.size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            record["complete"] = True
            return
        first, last = wanted if wanted else (0, entry.size - 1)
        length = last - first + 1
        status = HTTPStatus.PARTIAL_CONTENT if wanted else HTTPStatus.OK
        record.update(status=int(status), start=first)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        if wanted:
            self.send_header("Content-Range", f"bytes {first}-{last}/{entry.size}")
        # What the client checks: the commit, the etag it names the blob by, the file size.
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("ETag", f'"{entry.sha256}"')
        self.send_header("X-Linked-Etag", f'"{entry.sha256}"')
        self.send_header("X-Linked-Size", str(entry.size))
        self.end_headers()
        if not send_body:
            record["complete"] = True
            return
        cut = None
        key = (repo.repo_id, path)
        if self.server.drop_after and first == 0 and length > self.server.drop_after:
            with self.server.log_lock:
                if key not in self.server.dropped:
                    self.server.dropped.add(key)
                    cut = self.server.drop_after
        self._stream(repo.root / path, first, length if cut is None else cut, record)
        if cut is None:
            record["complete"] = record["sent"] == length
        else:
            record["dropped"] = True
            self.close_connection = True
            self.wfile.flush()

    def _stream(self, path: Path, first: int, length: int, record: dict) -> None:
        rate = self.server.throttle
        chunk = min(CHUNK, max(rate // 20, 1024)) if rate else CHUNK
        started = time.monotonic()
        with path.open("rb") as handle:
            handle.seek(first)
            while record["sent"] < length:
                data = handle.read(min(chunk, length - record["sent"]))
                if not data:
                    break
                # Counted before the write: a stop logs this record from another thread,
                # and the client may hold bytes of a write that has not returned yet.
                record["sent"] += len(data)
                try:
                    self.wfile.write(data)
                except OSError:
                    record["sent"] -= len(data)
                    raise
                if rate:
                    ahead = started + record["sent"] / rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--root", type=Path, required=True, help="directory of <ns>/<name>/ repos")
    parser.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one")
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--throttle", type=int, default=0, help="bytes per second for each file transfer; 0: none"
    )
    parser.add_argument(
        "--drop-after",
        type=int,
        default=0,
        help="cut the first whole-file transfer of each larger file after this many bytes",
    )
    parser.add_argument("--log", type=Path, help="append the request log here (default stdout)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root} is not a directory")
    if args.throttle < 0 or args.drop_after < 0:
        parser.error("--throttle and --drop-after take a byte count >= 0")
    log = args.log.open("a", encoding="utf-8") if args.log else sys.stdout
    store = RepoStore(args.root)
    server = HubServer((args.bind, args.port), store, args.throttle, args.drop_after, log)
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    # Stopping the hub is how a test makes a network outage: say what was cut, then exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.log_in_flight()
        server.server_close()
        if args.log:
            log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
