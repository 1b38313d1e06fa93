"""The lab's Hub stand-in (lab/hub/hub.py), against the real ``hf download`` client.

The pure parts (Range parsing, commit id, tree and info answers) are tested in-process; the
server is then started as a real process on a free port, probed over HTTP, and the client of
the lab engine image (huggingface_hub 2.4.0) downloads from it in a container on the host
network. The docker tests are skipped when docker or the engine image is missing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[2] / "lab"
HUB = LAB / "hub" / "hub.py"
REPO = "gb10-lab/hubtest"
STORE = "models--gb10-lab--hubtest"
BIG = "model.safetensors"
# Above the client's 10 MiB read chunk: a partial blob only reaches the disk in such chunks.
MIB = 1024 * 1024
BIG_SIZE = 16 * MIB


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


hub = _load("lab_hub_hub", HUB)


# --- pure parts --------------------------------------------------------------------------

RANGES = [
    # (header, size, expected (first, last) or None for "whole file")
    (None, 100, None),
    ("bytes=0-", 100, (0, 99)),
    ("bytes=40-", 100, (40, 99)),  # what a resuming client sends
    ("bytes=10-19", 100, (10, 19)),
    ("bytes=90-500", 100, (90, 99)),  # last clipped to the end
    ("bytes=-30", 100, (70, 99)),  # suffix
    ("bytes=-500", 100, (0, 99)),
    (" Bytes = 5 - ", 100, (5, 99)),
    ("bytes=0-1,5-6", 100, None),  # several ranges: whole file
    ("items=0-5", 100, None),  # other unit: whole file
    ("bytes=abc-", 100, None),
    ("bytes=5", 100, None),
    ("bytes=9-3", 100, None),
    ("bytes=-", 100, None),
    ("bytes=-5", 0, None),  # empty file: whole (empty) file
]


@pytest.mark.parametrize(("header", "size", "expected"), RANGES)
def test_parse_range(header, size, expected):
    assert hub.parse_range(header, size) == expected


@pytest.mark.parametrize(
    ("header", "size"), [("bytes=100-", 100), ("bytes=0-", 0), ("bytes=-0", 9)]
)
def test_parse_range_past_the_end_is_not_satisfiable(header, size):
    with pytest.raises(hub.RangeNotSatisfiable):
        hub.parse_range(header, size)


def test_commit_id_is_the_tiny_model_generators_revision():
    tiny = _load("lab_engine_tiny_model_hub", LAB / "engine" / "tiny_model.py")
    files = {"config.json": b"{}\n", "model.safetensors": b"\0" * 64, "tokenizer.json": b"[]"}
    shas = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    assert hub.commit_id(shas) == tiny.revision_of(files)
    assert len(hub.commit_id(shas)) == 40


def test_commit_id_follows_content_and_names_not_order():
    base = {"a": "1" * 64, "b/c": "2" * 64}
    assert hub.commit_id(base) == hub.commit_id(dict(reversed(base.items())))
    assert hub.commit_id(base) != hub.commit_id({"a": "1" * 64, "b/c": "3" * 64})
    assert hub.commit_id(base) != hub.commit_id({"a": "1" * 64, "b/d": "2" * 64})


def test_scan_tree_and_info(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "config.json").write_bytes(b"{}")
    (tmp_path / "sub" / "x.txt").write_bytes(b"hello")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_bytes(b"ref")
    repo = hub.scan_repo(tmp_path, "ns/name")
    assert [f.path for f in repo.files] == ["config.json", "sub/x.txt"]
    x = repo.file("sub/x.txt")
    assert x.sha256 == hashlib.sha256(b"hello").hexdigest()
    assert x.git_oid == hashlib.sha1(b"blob 5\0hello", usedforsecurity=False).hexdigest()
    assert repo.commit == hub.commit_id({f.path: f.sha256 for f in repo.files})
    deep = hub.tree_entries(repo, "", recursive=True)
    assert [(e["type"], e["path"]) for e in deep] == [
        ("directory", "sub"),
        ("file", "config.json"),
        ("file", "sub/x.txt"),
    ]
    assert [e["path"] for e in hub.tree_entries(repo, "", recursive=False)] == [
        "sub",
        "config.json",
    ]
    assert [e["path"] for e in hub.tree_entries(repo, "sub", recursive=False)] == ["sub/x.txt"]
    assert hub.tree_entries(repo, "nope", recursive=True) is None
    info = hub.repo_info(repo, with_blobs=True)
    assert info["sha"] == repo.commit
    assert info["siblings"][1] == {
        "rfilename": "sub/x.txt",
        "size": 5,
        "blobId": x.git_oid,
        "lfs": {"sha256": x.sha256, "size": 5, "pointerSize": hub.LFS_POINTER_SIZE},
    }


# --- the server as a process -------------------------------------------------------------


class Hub:
    def __init__(self, proc: subprocess.Popen, url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def transfers(self, name: str) -> list[dict]:
        """The GETs of one repository file, in the order they ended."""
        tail = f"/{name}"
        return [
            r
            for r in self.records()
            if r["method"] == "GET" and "/resolve/" in r["path"] and r["path"].endswith(tail)
        ]


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    big = random.Random(2024).randbytes(BIG_SIZE)  # noqa: S311 - test data, not a secret
    return {
        "config.json": b'{"architectures": ["LlamaForCausalLM"]}\n',
        "tokenizer.json": b'{"model": {"vocab": {}}}\n',
        "sub/extra.txt": b"a file in a folder\n",
        BIG: big,
    }


@pytest.fixture(scope="module")
def hub_root(tmp_path_factory, files) -> Path:
    root = tmp_path_factory.mktemp("hub-root")
    repo = root / REPO
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    return root


@pytest.fixture(scope="module")
def commit(files) -> str:
    return hub.commit_id({n: hashlib.sha256(d).hexdigest() for n, d in files.items()})


@pytest.fixture
def start_hub(hub_root, tmp_path):
    started: list[subprocess.Popen] = []

    def start(*extra: str) -> Hub:
        log = tmp_path / f"hub-{len(started)}.log"
        cmd = [sys.executable, str(HUB), "--root", str(hub_root), "--port", "0"]
        proc = subprocess.Popen(
            [*cmd, "--log", str(log), *extra], stdout=subprocess.PIPE, text=True
        )
        started.append(proc)
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:"), line
        return Hub(proc, line.removeprefix("listening on "), log)

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=10)


def fetch(url: str, method: str = "GET", headers: dict | None = None):
    request = urllib.request.Request(url, method=method, headers=headers or {})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the hub under test
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_http_answers(start_hub, files, commit):
    h = start_hub()
    status, headers, body = fetch(f"{h.url}/api/models/{REPO}/revision/main")
    assert status == 200
    info = json.loads(body)
    assert info["sha"] == commit
    assert sorted(s["rfilename"] for s in info["siblings"]) == sorted(files)
    status, _headers, body = fetch(f"{h.url}/api/models/{REPO}/tree/{commit}?recursive=true")
    assert status == 200
    sizes = {e["path"]: e["size"] for e in json.loads(body) if e["type"] == "file"}
    assert sizes == {name: len(data) for name, data in files.items()}

    url = f"{h.url}/{REPO}/resolve/main/{BIG}"
    status, headers, body = fetch(url, "HEAD")
    sha = hashlib.sha256(files[BIG]).hexdigest()
    assert (status, body) == (200, b"")
    assert headers["X-Repo-Commit"] == commit
    assert headers["ETag"] == headers["X-Linked-Etag"] == f'"{sha}"'
    assert headers["Content-Length"] == headers["X-Linked-Size"] == str(BIG_SIZE)
    status, headers, body = fetch(url, headers={"Range": f"bytes={BIG_SIZE - 10}-"})
    assert (status, body) == (206, files[BIG][-10:])
    assert headers["Content-Range"] == f"bytes {BIG_SIZE - 10}-{BIG_SIZE - 1}/{BIG_SIZE}"
    status, headers, _body = fetch(url, headers={"Range": f"bytes={BIG_SIZE}-"})
    assert (status, headers["Content-Range"]) == (416, f"bytes */{BIG_SIZE}")
    status, _headers, body = fetch(f"{h.url}/{REPO}/resolve/{commit}/sub/extra.txt")
    assert (status, body) == (200, files["sub/extra.txt"])

    for url, code in [
        (f"{h.url}/api/models/gb10-lab/nothing/revision/main", "RepoNotFound"),
        (f"{h.url}/api/models/{REPO}/revision/{'0' * 40}", "RevisionNotFound"),
        (f"{h.url}/{REPO}/resolve/main/missing.bin", "EntryNotFound"),
        (f"{h.url}/{REPO}/resolve/main/../../etc/passwd", "EntryNotFound"),
    ]:
        status, headers, _body = fetch(url)
        assert (status, headers.get("X-Error-Code")) == (404, code), url

    ranged = [r for r in h.records() if r["range"] == f"bytes={BIG_SIZE - 10}-"]
    assert ranged == [
        {
            "complete": True,
            "method": "GET",
            "path": f"/{REPO}/resolve/main/{BIG}",
            "range": f"bytes={BIG_SIZE - 10}-",
            "sent": 10,
            "size": BIG_SIZE,
            "start": BIG_SIZE - 10,
            "status": 206,
            "time": ranged[0]["time"],
        }
    ]


def test_stopping_the_hub_logs_the_transfer_it_cut(start_hub):
    """SIGTERM is how a test makes an outage: the cut transfer is still logged."""
    h = start_hub("--throttle", str(MIB))
    with urllib.request.urlopen(f"{h.url}/{REPO}/resolve/main/{BIG}", timeout=10) as response:  # noqa: S310
        assert len(response.read(100_000)) == 100_000
        h.proc.terminate()
        assert h.proc.wait(timeout=10) == 0
    (cut,) = h.transfers(BIG)
    assert (cut["status"], cut["complete"], cut["stopped"]) == (200, False, True)
    assert 100_000 <= cut["sent"] < BIG_SIZE


# --- the real client -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine_image() -> str:
    if shutil.which("docker") is None:
        pytest.skip("docker is not installed")
    tag = _load("lab_engine_image_hub", LAB / "engine" / "image.py").image_tag()
    probe = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"engine image {tag} is not built here (python3 lab/engine/image.py build)")
    return tag


@pytest.fixture
def cache(tmp_path) -> Path:
    root = tmp_path / "hf-home"
    root.mkdir()
    if os.getuid() == 0:
        os.chown(root, 1000, 1000)
    return root


def hf_download(image: str, h: Hub, cache: Path, name: str, detach: bool = False):
    """``hf download REPO --revision main`` in the engine image, as the role runs it."""
    user = "1000:1000" if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}"
    cmd = ["docker", "run", "--name", name, "--network", "host", f"--user={user}"]
    cmd += ["-e", f"HF_ENDPOINT={h.url}", "-e", "HF_HOME=/cache", "-v", f"{cache}:/cache"]
    # No look-up of the client's own newest version on a package index.
    cmd += ["-e", "HF_HUB_DISABLE_UPDATE_CHECK=1"]
    cmd += ["-d"] if detach else ["--rm"]
    cmd += [image, "hf", "download", REPO, "--revision", "main"]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture
def container_name():
    name = f"gb10-hubtest-{uuid.uuid4().hex[:8]}"
    yield name
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)


def assert_snapshot(cache: Path, files: dict[str, bytes], commit: str) -> Path:
    store = cache / "hub" / STORE
    assert (store / "refs" / "main").read_text() == commit
    snapshot = store / "snapshots" / commit
    for name, data in files.items():
        link = snapshot / name
        assert link.is_symlink(), name
        blob = link.resolve()
        assert blob.parent == (store / "blobs").resolve()
        assert blob.name == hashlib.sha256(data).hexdigest()
        assert blob.read_bytes() == data, name
    return store


def test_full_download_gives_the_cache_layout(
    engine_image, start_hub, cache, files, commit, container_name
):
    h = start_hub()
    proc = hf_download(engine_image, h, cache, container_name)
    assert proc.returncode == 0, proc.stderr
    store = assert_snapshot(cache, files, commit)
    assert sorted(p.name for p in (store / "blobs").iterdir()) == sorted(
        hashlib.sha256(d).hexdigest() for d in files.values()
    )
    for name, data in files.items():
        assert [(r["status"], r["start"], r["sent"]) for r in h.transfers(name)] == [
            (200, 0, len(data))
        ], name


def test_killed_download_keeps_whole_files_and_the_next_run_converges(
    engine_image, start_hub, cache, files, commit, container_name
):
    """What huggingface_hub 2.4.0 really does after its process is killed mid-file.

    Files that were complete stay and are not fetched again; the file in flight is left as an
    orphan ``<sha256>.<8 hex>.incomplete`` (a per-process name, so no later run reuses it) and
    the next run fetches that file again from byte 0. If a newer client starts resuming
    across runs, the assertion on the second transfer's start fails and says so.
    """
    h = start_hub("--throttle", str(4 * MIB))
    proc = hf_download(engine_image, h, cache, container_name, detach=True)
    assert proc.returncode == 0, proc.stderr
    blobs = cache / "hub" / STORE / "blobs"
    # A bound, not a figure: the container's start alone took longer than 30 s on a loaded
    # two-core machine; the loop ends as soon as the file is on disk in part.
    deadline = time.monotonic() + 120
    partial: list[Path] = []
    while time.monotonic() < deadline:
        partial = [p for p in blobs.glob("*.incomplete") if p.stat().st_size > 0]
        if partial:
            break
        time.sleep(0.05)
    subprocess.run(["docker", "kill", container_name], capture_output=True, check=True)
    assert partial, "the big file never reached the disk in part"
    sha = hashlib.sha256(files[BIG]).hexdigest()
    assert [p.name.split(".")[0] for p in partial] == [sha]
    assert 0 < partial[0].stat().st_size < BIG_SIZE
    assert not (blobs / sha).exists()
    first = h.transfers(BIG)
    assert [(r["start"], r["complete"]) for r in first] == [(0, False)]
    small = [name for name in files if name != BIG]
    assert all(len(h.transfers(name)) == 1 for name in small)
    subprocess.run(["docker", "rm", "-f", container_name], capture_output=True, check=True)

    proc = hf_download(engine_image, h, cache, container_name)
    assert proc.returncode == 0, proc.stderr
    assert_snapshot(cache, files, commit)
    second = h.transfers(BIG)[len(first) :]
    assert [(r["status"], r["start"], r["sent"]) for r in second] == [(200, 0, BIG_SIZE)], (
        "huggingface_hub now resumes across runs: update this test and lab/hub/README.md"
    )
    assert all(len(h.transfers(name)) == 1 for name in small)  # not fetched again
    assert partial[0].exists()  # the orphan stays until `hf cache prune` or a clean-up


def test_connection_cut_mid_file_is_resumed_with_a_range_request(
    engine_image, start_hub, cache, files, commit, container_name
):
    """The client's own retry after a dropped connection asks only for the rest (206)."""
    h = start_hub("--drop-after", str(12 * MIB))
    proc = hf_download(engine_image, h, cache, container_name)
    assert proc.returncode == 0, proc.stderr
    assert_snapshot(cache, files, commit)
    cut, rest = h.transfers(BIG)
    assert (cut["status"], cut["start"], cut["sent"], cut["dropped"]) == (200, 0, 12 * MIB, True)
    # The client keeps what it had written in whole 10 MiB chunks and asks for the rest.
    assert rest["status"] == 206
    assert 0 < rest["start"] <= 12 * MIB
    assert rest["range"] == f"bytes={rest['start']}-"
    assert rest["start"] + rest["sent"] == BIG_SIZE
    assert rest["complete"]
