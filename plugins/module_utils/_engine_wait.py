# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Where an engine's boot stands: one node's look, and the cluster's verdict from all of them.

Private to gb10.serving: standard library only, no Ansible imports, so the engine_wait
module (on each node) and its action plugin (on the controller) share it. Target-side code:
keep it Python 3.8 compatible.

A node's engine has **stopped** when its container is gone, is not running, or has been
restarted by Docker since the start (a restart policy hides a crash otherwise). The cluster
is **ready** when the head's API answers ``/health`` with 200 and lists the served model in
``/v1/models``. The wait is **done** when the cluster is ready or any engine has stopped.
"""

from __future__ import annotations

import http.client
import json
import urllib.error

from ansible_collections.gb10.serving.plugins.module_utils._vllm_log import VllmLogParser

# How many of the log's last lines a look reads for the progress line.
TAIL_LINES = 40


def container_state(info):
    """The parts of an inspect document (or None: no such container) the wait decides on."""
    if info is None:
        return {
            "exists": False,
            "running": False,
            "status": None,
            "exit_code": None,
            "oom_killed": False,
            "restart_count": 0,
            "stopped": True,
        }
    state = info.get("State") or {}
    running = bool(state.get("Running"))
    restarts = info.get("RestartCount") or 0
    return {
        "exists": True,
        "running": running,
        "status": state.get("Status"),
        "exit_code": None if running else state.get("ExitCode"),
        "oom_killed": bool(state.get("OOMKilled")),
        "restart_count": restarts,
        "stopped": not running or restarts > 0,
    }


def _get(url, headers, timeout, fetch):
    """``(status, body)`` of a GET; status None when nothing answered."""
    try:
        response = fetch(url, headers, timeout)
        try:
            return response.status, response.read()
        finally:
            response.close()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except (OSError, ValueError, http.client.HTTPException):
        # Refused, reset, timed out, or an answer that is not HTTP: not up yet.
        return None, b""


def probe_api(url, model, api_key, timeout, fetch):
    """Ask the API at ``url`` (``http://host:port``) whether it serves ``model``.

    ``fetch(url, headers, timeout)`` makes one GET and returns the response (an object with
    ``status``, ``read()`` and ``close()``), raising ``urllib.error.HTTPError`` for an error
    status, as Ansible's ``open_url`` does.

    Returns ``{"health": <status or None>, "models": [ids] or None, "ready": bool}``;
    ``/v1/models`` is asked only once ``/health`` says 200, with the key when given. Any
    other scheme than http and https is refused (ValueError).
    """
    if not url.startswith(("http://", "https://")):
        raise ValueError("the API's URL must start with http:// or https://, got %r" % (url,))
    base = url.rstrip("/")
    health, _body = _get(base + "/health", {}, timeout, fetch)
    models = None
    if health == 200:
        headers = {"Authorization": "Bearer " + api_key} if api_key else {}
        status, body = _get(base + "/v1/models", headers, timeout, fetch)
        if status == 200:
            try:
                models = [entry.get("id") for entry in json.loads(body.decode("utf-8"))["data"]]
            except (ValueError, KeyError, TypeError, AttributeError):
                models = None
    return {"health": health, "models": models, "ready": bool(models) and model in models}


def last_message(blocks):
    """The newest message of a log's blocks of whole lines (see _docker_logs.log_blocks),
    as the boot-log parser reads it (prefixes and colour removed); None without one."""
    parser = VllmLogParser()
    for block in blocks:
        parser.feed_bytes(block)
    return parser.result()["last_message"]


def cluster_view(states, head):
    """The cluster's verdict from every node's newest look (node name -> ``{"stopped": bool,
    "ready": bool}``, with ``"error": msg`` for a node whose wait broke off): ready, the
    stopped nodes in name order, why the broken-off ones broke off, and done."""
    stopped = sorted(node for node, look in states.items() if look.get("stopped"))
    errors = {node: look["error"] for node, look in states.items() if look.get("error")}
    ready = bool(states.get(head, {}).get("ready"))
    return {"ready": ready, "stopped": stopped, "errors": errors, "done": ready or bool(stopped)}
