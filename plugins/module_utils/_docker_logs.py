# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read a container's state and log from the Docker Engine API over its unix socket.

Private to gb10.serving: standard library only, no Ansible imports, so the module, the lab
test and the unit tests share it. Target-side code: keep it Python 3.8 compatible.

Only the API calls the boot-log module needs: ``GET /containers/<name>/json`` (inspect)
and ``GET /containers/<name>/logs`` (the log, not followed). Without a TTY the log comes
multiplexed: every frame is an 8-byte header (stream: 0 stdin, 1 stdout, 2 stderr, 3 the
daemon's own error; three zero bytes; the payload length as a big-endian uint32) and the
payload. A frame may end anywhere, inside a line or a UTF-8 character, and frames of the
two streams interleave; with a TTY the log is one raw stream. :func:`demux` turns either
into ``(stream, bytes)`` pieces and :class:`StreamLines` into blocks of whole lines, each
stream on its own, in the order they complete. Splitting bytes on ``\\n`` never cuts a
UTF-8 character (the byte never occurs inside one), so the lines are decoded whole later,
which is what incremental decoding would give.
"""

from __future__ import annotations

import calendar
import http.client
import json
import re
import socket
import struct
from typing import Iterable, Iterator, List, Optional, Tuple
from urllib.parse import quote, urlencode

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
STDIN, STDOUT, STDERR, SYSTEMERR = 0, 1, 2, 3
HEADER_SIZE = 8
# Stream type, three zero bytes (read as a byte and a 16-bit word), payload length.
_HEADER = struct.Struct(">BBHI")
READ_SIZE = 1 << 16
# A partial line longer than this (no newline in sight) is passed on as a line of its own.
MAX_PENDING = 1 << 20

_STARTED_AT_RE = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?(Z|([+-])(\d\d):(\d\d))$"
)


class DockerError(Exception):
    """The Docker engine could not be reached, refused a request or sent something else."""


def socket_path(docker_host: str) -> str:
    """The socket path of a ``unix://`` docker_host; DockerError for any other scheme."""
    if not docker_host.startswith("unix://"):
        raise DockerError(
            "docker_host %r is not supported: only a local unix socket"
            " (unix:///var/run/docker.sock) is; run the task on the node itself" % docker_host
        )
    path = docker_host[len("unix://") :]
    if not path.startswith("/"):
        raise DockerError("docker_host %r does not name an absolute socket path" % docker_host)
    return path


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a unix socket (the Docker engine's API socket)."""

    def __init__(self, path: str, timeout: float = 60):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def started_at_seconds(started_at: Optional[str]) -> Optional[int]:
    """Unix seconds (rounded down) of an RFC 3339 time as Docker writes it; None if unset.

    Docker writes ``0001-01-01T00:00:00Z`` for a container that never started.
    """
    if not started_at:
        return None
    match = _STARTED_AT_RE.match(started_at)
    if match is None:
        raise DockerError("cannot read the container's start time %r" % started_at)
    year, month, day, hour, minute, second = (int(match.group(n)) for n in range(1, 7))
    if year <= 1:
        return None
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    if match.group(7) != "Z":
        offset = int(match.group(9)) * 3600 + int(match.group(10)) * 60
        seconds -= offset if match.group(8) == "+" else -offset
    return seconds


def _api_error(response, what):
    body = response.read(65536)
    try:
        message = json.loads(body.decode("utf-8", "replace")).get("message")
    except (ValueError, AttributeError):
        message = None
    detail = message or body.decode("utf-8", "replace").strip() or response.reason
    return DockerError("%s: the Docker engine answered %d: %s" % (what, response.status, detail))


class DockerClient(object):
    """The two API calls the boot-log module needs, one connection each."""

    def __init__(self, docker_host: str = DEFAULT_DOCKER_HOST, timeout: float = 60):
        self.docker_host = docker_host
        self.path = socket_path(docker_host)
        self.timeout = timeout

    def _request(self, url, what):
        connection = UnixHTTPConnection(self.path, timeout=self.timeout)
        try:
            connection.request("GET", url, headers={"Accept": "*/*"})
            return connection, connection.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise DockerError(
                "%s: cannot talk to the Docker engine at %s: %s (is it running, and may this"
                " user use its socket? become: true, or the docker group)"
                % (what, self.docker_host, exc)
            ) from exc

    def inspect(self, name: str) -> Optional[dict]:
        """The container's inspect document, or None when there is no such container."""
        what = "inspect container %s" % name
        connection, response = self._request("/containers/%s/json" % quote(name, safe=""), what)
        try:
            if response.status == 404:
                response.read()
                return None
            if response.status != 200:
                raise _api_error(response, what)
            try:
                return json.loads(response.read().decode("utf-8"))
            except ValueError as exc:
                raise DockerError("%s: the answer is not JSON: %s" % (what, exc)) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise DockerError("%s: reading the answer failed: %s" % (what, exc)) from exc
        finally:
            connection.close()

    def logs(
        self, name: str, since: Optional[int] = None, tail: Optional[int] = None
    ) -> Iterator[bytes]:
        """The log as it arrives (still multiplexed unless the container has a TTY); only
        its last ``tail`` lines when given."""
        query = {"stdout": 1, "stderr": 1}
        if since is not None:
            query["since"] = since
        if tail is not None:
            query["tail"] = tail
        what = "read the log of container %s" % name
        url = "/containers/%s/logs?%s" % (quote(name, safe=""), urlencode(query))
        connection, response = self._request(url, what)
        try:
            if response.status != 200:
                raise _api_error(response, what)
            while True:
                try:
                    chunk = response.read(READ_SIZE)
                except (OSError, http.client.HTTPException) as exc:
                    raise DockerError("%s: the stream broke off: %s" % (what, exc)) from exc
                if not chunk:
                    return
                yield chunk
        finally:
            connection.close()


def demux(chunks: Iterable[bytes], tty: bool = False) -> Iterator[Tuple[int, bytes]]:
    """``(stream, payload)`` pieces of a Docker log stream, in arrival order.

    ``chunks`` may cut the stream anywhere (inside a header or a payload). Pieces of
    consecutive frames of one stream within a chunk come out joined; a payload that spans
    chunks comes out in parts, so memory stays at one chunk. With ``tty`` the stream is raw
    and every chunk is stdout. Raises DockerError on a header that is not one, or when the
    stream ends inside a frame.
    """
    if tty:
        for chunk in chunks:
            if chunk:
                yield STDOUT, bytes(chunk)
        return
    unpack = _HEADER.unpack_from
    carry = b""  # the start of a header cut by the end of the last chunk
    stream = STDOUT
    remaining = 0  # bytes of the current frame's payload still to come
    for chunk in chunks:
        if carry:
            chunk = carry + chunk
            carry = b""
        size = len(chunk)
        pos = 0
        parts = []
        if remaining:
            pos = min(remaining, size)
            parts.append(chunk[:pos])
            remaining -= pos
        while pos < size:
            if size - pos < HEADER_SIZE:
                carry = chunk[pos:]
                break
            kind, pad_byte, pad_word, length = unpack(chunk, pos)
            if kind > SYSTEMERR or pad_byte or pad_word:
                raise DockerError(
                    "the log stream is not multiplexed as expected (frame header %r):"
                    " does the container have a TTY after all?" % chunk[pos : pos + HEADER_SIZE]
                )
            pos += HEADER_SIZE
            if not length:
                continue  # Docker may send an empty frame
            if kind != stream:
                if parts:
                    yield stream, b"".join(parts)
                    parts = []
                stream = kind
            end = pos + length
            if end <= size:
                parts.append(chunk[pos:end])
                pos = end
            else:
                parts.append(chunk[pos:])
                remaining = end - size
                pos = size
        if parts:
            yield stream, b"".join(parts)
    if carry or remaining:
        raise DockerError(
            "the log stream ended inside a frame (%d header bytes, %d payload bytes missing)"
            % (HEADER_SIZE - len(carry) if carry else 0, remaining)
        )


class StreamLines(object):
    """Whole lines of each stream, from pieces that may end anywhere.

    :meth:`push` returns the lines a piece completes, as one block of bytes ending in a
    newline (or ``b""``); the rest waits for that stream's next piece, so a stdout line cut
    by a stderr frame is not mixed with it. :meth:`flush` returns what is left at the end.
    """

    def __init__(self, max_pending: int = MAX_PENDING):
        self.max_pending = max_pending
        self._pending = {}

    def push(self, stream: int, data: bytes) -> bytes:
        pending = self._pending.get(stream, b"")
        end = data.rfind(b"\n")
        if end < 0:
            pending += data
            if len(pending) > self.max_pending:
                self._pending[stream] = b""
                return pending + b"\n"
            self._pending[stream] = pending
            return b""
        self._pending[stream] = data[end + 1 :]
        if pending:
            return pending + data[: end + 1]
        return data[: end + 1] if end + 1 < len(data) else data

    def flush(self) -> List[bytes]:
        """The unfinished last line of each stream, each ending in a newline now."""
        left = [pending + b"\n" for _stream, pending in sorted(self._pending.items()) if pending]
        self._pending = {}
        return left


def log_blocks(
    chunks: Iterable[bytes], tty: bool = False, sink=None, redact=None
) -> Iterator[bytes]:
    """Blocks of whole lines of a Docker log stream, stdout and stderr as they complete.

    ``redact``, when given, maps each block to what may be read and kept (the modules mask
    keys with ``_redact.Redactor.data``). ``sink``, when given, is called with every block
    as it is yielded (to keep a copy of the log): whole lines, masked, so no key reaches
    the copy even when a frame of the stream ends inside one.
    """
    lines = StreamLines()

    def kept(block):
        if redact is not None:
            block = redact(block)
        if sink is not None:
            sink(block)
        return block

    for stream, payload in demux(chunks, tty):
        block = lines.push(stream, payload)
        if block:
            yield kept(block)
    for block in lines.flush():
        yield kept(block)


def container_summary(info: dict) -> dict:
    """The parts of an inspect document the boot-log module reports."""
    state = info.get("State") or {}
    config = info.get("Config") or {}
    return {
        "id": info.get("Id"),
        "name": (info.get("Name") or "").lstrip("/") or None,
        "status": state.get("Status"),
        "running": bool(state.get("Running")),
        "restarting": bool(state.get("Restarting")),
        "exit_code": state.get("ExitCode"),
        "oom_killed": bool(state.get("OOMKilled")),
        "restart_count": info.get("RestartCount"),
        "started_at": state.get("StartedAt"),
        "finished_at": state.get("FinishedAt"),
        "image": config.get("Image"),
        "labels": config.get("Labels") or {},
        "tty": bool(config.get("Tty")),
    }
