# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small Docker Engine API on a real unix socket, for the boot-log tests.

It speaks HTTP/1.1 and answers the two calls gb10.serving's Docker code makes:
``GET /containers/<name>/json`` and ``GET /containers/<name>/logs``, the log as a chunked
body cut in the pieces a test chooses (so frames and lines can be cut anywhere), and
records every request it got.
"""

from __future__ import annotations

import json
import os
import socketserver
import struct
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

STARTED_AT = "2026-12-02T12:32:17.402031975Z"
STARTED_AT_SECONDS = 1796214737  # date -u -d 2026-12-02T12:32:17Z +%s


def frame(stream, payload):
    """One multiplexed frame: stream byte, three zero bytes, big-endian length, payload."""
    return struct.pack(">BxxxI", stream, len(payload)) + payload


def inspect_document(name, tty=False, running=False, started_at=STARTED_AT, exit_code=0):
    """An inspect answer with the fields the module reads (as Docker 20-27 writes them)."""
    return {
        "Id": "4a08136414ffa8d5789ad3eaf55910bc891833b88b80c92b3444a1bcff424780",
        "Name": "/" + name,
        "RestartCount": 0,
        "State": {
            "Status": "running" if running else "exited",
            "Running": running,
            "Paused": False,
            "Restarting": False,
            "OOMKilled": False,
            "Dead": False,
            "Pid": 4186 if running else 0,
            "ExitCode": exit_code,
            "Error": "",
            "StartedAt": started_at,
            "FinishedAt": "0001-01-01T00:00:00Z" if running else "2026-12-02T12:33:52.1Z",
        },
        "Config": {
            "Tty": tty,
            "Image": "gb10-lab-engine:lab",
            "Labels": {"gb10.serving/role": "engine"},
        },
    }


class Container:
    """What the fake engine knows about one container."""

    def __init__(self, name, pieces, tty=False, running=False, started_at=STARTED_AT):
        self.name = name
        self.pieces = pieces  # the log body, as the chunks to send
        self.document = inspect_document(name, tty=tty, running=running, started_at=started_at)


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers in JSON (an empty body without a document); the
    fake APIs' handlers build on it."""

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass

    def _send_json(self, status, document=None):
        body = json.dumps(document).encode("utf-8") if document is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Handler(JsonHandler):
    protocol_version = "HTTP/1.1"

    def address_string(self):
        return "unix"

    def do_GET(self):  # noqa: N802 - http.server's name
        api = self.server.api
        url = urlsplit(self.path)
        api.requests.append((url.path, parse_qs(url.query)))
        parts = url.path.strip("/").split("/")
        if api.status is not None:
            self._send_json(api.status, {"message": "server error: broken on purpose"})
            return
        if len(parts) != 3 or parts[0] != "containers":
            self._send_json(404, {"message": "page not found"})
            return
        container = api.containers.get(unquote(parts[1]))
        if container is None:
            self._send_json(404, {"message": f"No such container: {unquote(parts[1])}"})
            return
        if parts[2] == "json":
            self._send_json(200, container.document)
            return
        self.send_response(200)
        kind = "raw-stream" if container.document["Config"]["Tty"] else "multiplexed-stream"
        self.send_header("Content-Type", f"application/vnd.docker.{kind}")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in container.pieces:
            if piece:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def serve_in_background(server):
    """Serve ``server`` (a socketserver) in a daemon thread; the thread."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return thread


def stop_serving(server, thread):
    """Stop what :func:`serve_in_background` started, and close the server's socket."""
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class FakeDockerApi:
    """The fake engine on ``<directory>/docker.sock``; use as a context manager."""

    def __init__(self, directory):
        self.path = os.path.join(str(directory), "docker.sock")
        self.containers = {}
        self.requests = []
        self.status = None  # answer every request with this status when set
        self._server = None
        self._thread = None

    @property
    def docker_host(self):
        return "unix://" + self.path

    def add(self, container):
        self.containers[container.name] = container
        return container

    def __enter__(self):
        self._server = _Server(self.path, _Handler)
        self._server.api = self
        self._thread = serve_in_background(self._server)
        return self

    def __exit__(self, *exc):
        stop_serving(self._server, self._thread)
        os.unlink(self.path)
