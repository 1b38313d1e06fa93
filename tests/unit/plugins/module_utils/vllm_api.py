# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small vLLM OpenAI-compatible API on a real local TCP port, for the engine wait tests.

It answers ``GET /health`` and ``GET /v1/models`` (the two calls the wait makes) from state
a test changes while it runs, checks the bearer key as vLLM does, and records every
request it got.
"""

from __future__ import annotations

from http.server import ThreadingHTTPServer

from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.docker_api import (
    JsonHandler,
    serve_in_background,
    stop_serving,
)


class _Handler(JsonHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        api = self.server.api
        api.requests.append((self.path, self.headers.get("Authorization")))
        if self.path == "/health":
            api.health_calls += 1
            self._send_json(200 if api.health_calls > api.healthy_after else 503)
        elif self.path == "/v1/models":
            if api.key and self.headers.get("Authorization") != "Bearer " + api.key:
                self._send_json(401, {"error": "Unauthorized"})
                return
            self._send_json(200, {"object": "list", "data": [{"id": m} for m in api.models]})
        else:
            self._send_json(404, {"detail": "Not Found"})


class FakeVllmApi:
    """The fake API on 127.0.0.1, answering /health with 503 for the first
    ``healthy_after`` calls; use as a context manager."""

    def __init__(self, models=("gb10-lab/tiny-llama",), key=None, healthy_after=0):
        self.models = list(models)
        self.key = key
        self.healthy_after = healthy_after
        self.health_calls = 0
        self.requests = []
        self._server = None
        self._thread = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.api = self
        self._thread = serve_in_background(self._server)
        return self

    def __exit__(self, *exc):
        stop_serving(self._server, self._thread)
