# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._docker_logs: Docker's log stream, demultiplexed and cut into lines.

The streams are built from the lab's real engine logs (fixtures/vllm), framed the way the
Docker engine frames a container log without a TTY; the client is tested against a real
unix socket speaking the API subset (docker_api.py).
"""

from __future__ import annotations

import os

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._docker_logs import (
    STDERR,
    STDOUT,
    DockerClient,
    DockerError,
    StreamLines,
    container_summary,
    demux,
    log_blocks,
    socket_path,
    started_at_seconds,
)
from ansible_collections.gb10.serving.plugins.module_utils._vllm_log import (
    VllmLogParser,
    parse_text,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import load_raw
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.docker_api import (
    STARTED_AT,
    STARTED_AT_SECONDS,
    Container,
    FakeDockerApi,
    frame,
    inspect_document,
)

HEAD = "vllm_cpu_tiny_tp2_2node_head_v0.32.log"
# Two lines with multi-byte characters (the logo's blocks, an ellipsis): cuts land inside.
UTF8 = (
    "(APIServer pid=4186) INFO 12-02 12:32:18 [api_utils.py:347]  \u2584\u2584 \u2584\u2588"
    " \u2588  version 0.32.0\n(Worker_TP0 pid=4258) INFO 12-02 12:32:52 [x.py:1] caf\u00e9"
    " \u2026 done\n"
).encode("utf-8")


def cut(data, *points):
    """data cut at the given offsets."""
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False)]


def joined(pieces):
    """Consecutive pieces of one stream joined: what a reader of each stream sees."""
    out = []
    for stream, data in pieces:
        if out and out[-1][0] == stream:
            out[-1] = (stream, out[-1][1] + data)
        else:
            out.append((stream, data))
    return out


# --- demux --------------------------------------------------------------------------------


def test_demux_one_chunk():
    stream = frame(STDOUT, b"out 1\n") + frame(STDERR, b"err 1\n") + frame(STDOUT, b"out 2\n")
    assert list(demux([stream])) == [
        (STDOUT, b"out 1\n"),
        (STDERR, b"err 1\n"),
        (STDOUT, b"out 2\n"),
    ]


def test_demux_joins_frames_of_one_stream_in_a_chunk():
    stream = frame(STDOUT, b"a") + frame(STDOUT, b"b\n") + frame(STDERR, b"c\n")
    assert list(demux([stream])) == [(STDOUT, b"ab\n"), (STDERR, b"c\n")]


def test_demux_cut_at_every_offset():
    # Frames of both streams, cutting lines and UTF-8 characters in the middle.
    frames = [
        (STDOUT, UTF8[:7]),
        (STDOUT, UTF8[7:80]),
        (STDERR, "\u2026 stderr line \u00e9\n".encode()),
        (STDOUT, UTF8[80:]),
        (STDERR, b""),  # Docker may send an empty frame
    ]
    stream = b"".join(frame(kind, payload) for kind, payload in frames)
    expected = [(kind, payload) for kind, payload in joined(frames) if payload]
    for point in range(1, len(stream)):
        assert joined(demux(cut(stream, point))) == expected, point
    for size in (1, 2, 3, 5, 8, 9, 13):
        pieces = [stream[start : start + size] for start in range(0, len(stream), size)]
        assert joined(demux(pieces)) == expected, size


def test_demux_tty_is_raw():
    pieces = cut(UTF8, 3, 40, 41)
    assert list(demux(pieces, tty=True)) == [(STDOUT, piece) for piece in pieces]


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        pytest.param(frame(STDOUT, b"abc")[:-1], "1 payload bytes missing", id="short-payload"),
        pytest.param(frame(STDOUT, b"abc")[:5], "ended inside a frame", id="short-header"),
        pytest.param(b"INFO 12-02 12:32:18 [x.py:1] raw\n", "not multiplexed", id="raw-text"),
        pytest.param(b"\x01\x00\x01\x00\x00\x00\x00\x01x", "not multiplexed", id="bad-padding"),
    ],
)
def test_demux_errors(stream, message):
    with pytest.raises(DockerError, match=message):
        list(demux([stream]))


# --- lines --------------------------------------------------------------------------------


def test_stream_lines_keep_each_stream_apart():
    lines = StreamLines()
    assert lines.push(STDOUT, b"out-a") == b""
    assert lines.push(STDERR, b"err 1\nerr-b") == b"err 1\n"
    assert lines.push(STDOUT, b"-end\nout 2\n") == b"out-a-end\nout 2\n"
    assert lines.flush() == [b"err-b\n"]
    assert lines.flush() == []


def test_stream_lines_bound_a_line_without_end():
    lines = StreamLines(max_pending=10)
    assert lines.push(STDOUT, b"0123456") == b""
    assert lines.push(STDOUT, b"789ab") == b"0123456789ab\n"
    assert lines.push(STDOUT, b"c\n") == b"c\n"


@pytest.mark.parametrize("size", [1, 3, 7, 64, 1000])
def test_log_blocks_give_the_parser_the_same_log(size):
    # The lab's head log on stdout, a stderr line now and then, framed per line as the
    # json-file driver does, then cut in pieces of `size` bytes.
    log = load_raw("vllm", HEAD).encode("utf-8")
    frames = []
    for number, line in enumerate(log.splitlines(keepends=True)):
        frames.append(frame(STDOUT, line))
        if number % 50 == 0:
            frames.append(frame(STDERR, "stderr \u2026 %d\n".encode() % number))
    stream = b"".join(frames)
    raw = []
    parser = VllmLogParser()
    pieces = (stream[i : i + size] for i in range(0, len(stream), size))
    for block in log_blocks(pieces, sink=raw.append):
        assert block.endswith(b"\n")
        parser.feed_bytes(block)
    result = parser.result()
    expected = parse_text(log.decode("utf-8"))
    stderr_lines = len(range(0, log.count(b"\n"), 50))
    assert result == dict(expected, lines=expected["lines"] + stderr_lines)
    # The sink got every payload byte, headers removed, in arrival order.
    assert b"".join(raw) == b"".join(f[8:] for f in frames)


def test_log_blocks_tty():
    log = load_raw("vllm", HEAD).encode("utf-8")
    blocks = list(log_blocks(cut(log, 1, 500, 501, 9000), tty=True))
    assert b"".join(blocks) == log


# --- small parts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (STARTED_AT, STARTED_AT_SECONDS),
        ("2026-12-02T12:32:17Z", STARTED_AT_SECONDS),
        ("2026-12-02T14:32:17.5+02:00", STARTED_AT_SECONDS),
        ("2026-12-02T10:32:17-02:00", STARTED_AT_SECONDS),
        ("2026-12-02T12:32:17-02:00", STARTED_AT_SECONDS + 2 * 3600),
        ("0001-01-01T00:00:00Z", None),
        ("", None),
        (None, None),
    ],
)
def test_started_at_seconds(text, seconds):
    assert started_at_seconds(text) == seconds


def test_started_at_unreadable():
    with pytest.raises(DockerError, match="start time"):
        started_at_seconds("yesterday")


@pytest.mark.parametrize(
    ("host", "path"),
    [
        ("unix:///var/run/docker.sock", "/var/run/docker.sock"),
        ("unix:///run/d.sock", "/run/d.sock"),
    ],
)
def test_socket_path(host, path):
    assert socket_path(host) == path


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("tcp://127.0.0.1:2375", "only a local unix socket"),
        ("ssh://node0", "only a local unix socket"),
        ("/var/run/docker.sock", "only a local unix socket"),
        ("unix://docker.sock", "absolute"),
    ],
)
def test_socket_path_refuses(host, message):
    with pytest.raises(DockerError, match=message):
        socket_path(host)


def test_container_summary():
    summary = container_summary(inspect_document("gb10-vllm", tty=True, running=True))
    assert summary == {
        "id": "4a08136414ffa8d5789ad3eaf55910bc891833b88b80c92b3444a1bcff424780",
        "name": "gb10-vllm",
        "status": "running",
        "running": True,
        "restarting": False,
        "exit_code": 0,
        "oom_killed": False,
        "restart_count": 0,
        "started_at": STARTED_AT,
        "finished_at": "0001-01-01T00:00:00Z",
        "image": "gb10-lab-engine:lab",
        "labels": {"gb10.serving/role": "engine"},
        "tty": True,
    }


# --- the client, over a real unix socket --------------------------------------------------


@pytest.fixture
def api(tmp_path):
    with FakeDockerApi(tmp_path) as fake:
        yield fake


def test_client_inspect_and_logs(api):
    body = frame(STDOUT, b"one\n") + frame(STDERR, b"two\n")
    api.add(Container("gb10 vllm/x", cut(body, 3, 12)))
    client = DockerClient(api.docker_host, timeout=10)
    assert client.inspect("gb10 vllm/x")["Name"] == "/gb10 vllm/x"
    assert b"".join(client.logs("gb10 vllm/x", since=STARTED_AT_SECONDS)) == body
    assert api.requests == [
        ("/containers/gb10%20vllm%2Fx/json", {}),
        (
            "/containers/gb10%20vllm%2Fx/logs",
            {"stdout": ["1"], "stderr": ["1"], "since": [str(STARTED_AT_SECONDS)]},
        ),
    ]


def test_client_no_such_container(api):
    assert DockerClient(api.docker_host).inspect("absent") is None


def test_client_logs_without_since(api):
    api.add(Container("c", [frame(STDOUT, b"x\n")]))
    list(DockerClient(api.docker_host).logs("c"))
    assert api.requests[-1][1] == {"stdout": ["1"], "stderr": ["1"]}


def test_client_engine_error(api):
    api.status = 500
    with pytest.raises(DockerError, match="answered 500: server error: broken on purpose"):
        DockerClient(api.docker_host).inspect("c")


def test_client_no_engine(tmp_path):
    host = "unix://" + os.path.join(str(tmp_path), "absent.sock")
    with pytest.raises(DockerError, match="cannot talk to the Docker engine at " + host):
        DockerClient(host, timeout=5).inspect("c")
