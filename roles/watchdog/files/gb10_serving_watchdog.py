#!/usr/bin/env python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gb10.serving's watchdog, installed by the watchdog role.

``check`` (the systemd timer on the head, every watchdog_interval seconds): send one canary
completion through the local API with the service key; after watchdog_failures failures in
a row, restart the cluster in the engine role's order (the head's engine stopped first, then
the workers'; the workers' started first, then the head's: the plan's start_order, written
into the config by the role) and wait until it serves; at most watchdog_max_restarts per
watchdog_window seconds, then stop trying and say so until it serves again.

``remote`` (a worker's forced SSH command): ``stop`` or ``start`` its own engine container,
nothing else; the head's dedicated key can run only this.

Every action goes to the journal (``check``'s output, as a systemd service; ``remote``'s
through syslog, since its output goes back to the head), and to the webhook when one is set.
The engine containers are driven through the Docker Engine API on the local socket, so
nothing beyond Python's standard library is needed.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import syslog
import time
import urllib.error
import urllib.request

IDENT = "gb10-serving-watchdog"


# --- the decision (pure) ------------------------------------------------------------------


def decide(state, ok, now, failures, max_restarts, window):
    """The next state and the action for one canary result.

    ``state``: ``failures`` (in a row), ``restarts`` (their times), ``gave_up``. Actions:
    ``ok``, ``recovered`` (serving again after failures or a give-up), ``failing`` (not yet
    ``failures`` in a row), ``restart``, ``give_up`` (said once), ``given_up`` (still failing
    after it).
    """
    failed_before = int(state.get("failures", 0))
    gave_up = bool(state.get("gave_up"))
    recent = [t for t in state.get("restarts", []) if now - float(t) < window]
    if ok:
        action = "recovered" if failed_before or gave_up else "ok"
        return {"failures": 0, "restarts": recent, "gave_up": False}, action
    count = failed_before + 1
    if count < failures:
        return {"failures": count, "restarts": recent, "gave_up": gave_up}, "failing"
    if len(recent) >= max_restarts:
        action = "given_up" if gave_up else "give_up"
        return {"failures": count, "restarts": recent, "gave_up": True}, action
    return {"failures": 0, "restarts": recent + [now], "gave_up": False}, "restart"


# --- the parts that touch the node --------------------------------------------------------


# ``check`` runs as a systemd service, whose output is the journal already; ``remote`` runs
# under sshd, whose output goes back to the head: it also writes to syslog.
TO_SYSLOG = []


def log(message):
    print(message, flush=True)
    if TO_SYSLOG:
        syslog.syslog(syslog.LOG_NOTICE, message)


class DockerSocket(http.client.HTTPConnection):
    """HTTP to the Docker Engine API over its Unix socket."""

    def __init__(self, path="/var/run/docker.sock", timeout=120):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


def docker_action(container, verb, stop_timeout=10):
    """``stop`` or ``start`` one container; True when Docker did it or it already was so."""
    if verb not in ("stop", "start"):
        raise ValueError("only stop and start, not %r" % (verb,))
    conn = DockerSocket()
    query = "?t=%d" % stop_timeout if verb == "stop" else ""
    conn.request("POST", "/containers/%s/%s%s" % (container, verb, query))
    status = conn.getresponse().status
    conn.close()
    # 204 done, 304 already stopped or started.
    return status in (204, 304)


def canary(config):
    """One completion through the API with the service key: (ok, what happened)."""
    body = json.dumps(
        {
            "model": config["model"],
            "prompt": config["prompt"],
            "max_tokens": config["max_tokens"],
            "temperature": 0,
        }
    ).encode()
    # The URL and the webhook's come from the root-only config the role writes (http).
    request = urllib.request.Request(  # noqa: S310
        config["url"] + "/v1/completions",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + config["key"]},
    )
    try:
        with urllib.request.urlopen(request, timeout=config["canary_timeout"]) as answer:  # noqa: S310
            doc = json.loads(answer.read().decode() or "{}")
            return bool(doc.get("choices")), "status %d" % answer.status
    except urllib.error.HTTPError as exc:
        return False, "status %d" % exc.code
    except (OSError, ValueError) as exc:
        return False, "%s: %s" % (type(exc).__name__, exc)


def tell_webhook(config, event):
    url = config.get("webhook_url")
    if not url:
        return
    data = json.dumps(dict(event, source=IDENT, host=socket.gethostname())).encode()
    request = urllib.request.Request(  # noqa: S310
        url, data=data, headers={"Content-Type": "application/json"}
    )
    try:
        urllib.request.urlopen(request, timeout=10).close()  # noqa: S310
    except (OSError, ValueError) as exc:
        log("the webhook did not take the %s event: %s" % (event.get("action"), exc))


def node_action(config, node, verb):
    """Stop or start one node's engine: its own through Docker, a worker's through SSH."""
    if node["local"]:
        return docker_action(node["container"], verb)
    command = [
        "ssh",
        "-i",
        config["ssh_key"],
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "UserKnownHostsFile=" + config["known_hosts"],
        "-o",
        "ConnectTimeout=10",
        "root@" + node["address"],
        verb,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    if done.returncode != 0:
        log("%s on %s failed: %s" % (verb, node["host"], (done.stderr or done.stdout).strip()))
    return done.returncode == 0


def restart_cluster(config):
    """Stop every engine, head first, then start them in the plan's order."""
    nodes = {node["host"]: node for node in config["nodes"]}
    for host in config["stop_order"]:
        log("stopping the engine on %s" % host)
        node_action(config, nodes[host], "stop")
    started = True
    for host in config["start_order"]:
        log("starting the engine on %s" % host)
        started = node_action(config, nodes[host], "start") and started
        time.sleep(config.get("start_gap", 2))
    return started


def wait_serving(config):
    deadline = time.monotonic() + config["boot_timeout"]
    while time.monotonic() < deadline:
        ok, _what = canary(config)
        if ok:
            return True
        time.sleep(10)
    return False


def load_state(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def save_state(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    os.replace(tmp, path)


def check(config):
    ok, what = canary(config)
    now = time.time()
    state, action = decide(
        load_state(config["state_file"]),
        ok,
        now,
        config["failures"],
        config["max_restarts"],
        config["window"],
    )
    if action == "failing":
        log(
            "the canary failed (%s), %d of %d in a row"
            % (what, state["failures"], config["failures"])
        )
    elif action == "recovered":
        log("the cluster serves again")
        tell_webhook(config, {"action": "recovered"})
    elif action == "give_up":
        log(
            "the canary still fails (%s) after %d restarts in %d s: giving up; restarting "
            "nothing more until the cluster serves again (run site.yml)"
            % (what, len(state["restarts"]), config["window"])
        )
        tell_webhook(config, {"action": "give_up", "restarts": len(state["restarts"])})
    elif action == "restart":
        save_state(config["state_file"], state)
        log(
            "the canary failed %d times in a row (%s): restarting the cluster (%d of at most %d "
            "in %d s)"
            % (
                config["failures"],
                what,
                len(state["restarts"]),
                config["max_restarts"],
                config["window"],
            )
        )
        tell_webhook(config, {"action": "restart", "restarts": len(state["restarts"])})
        started = restart_cluster(config)
        serving = started and wait_serving(config)
        log("the restarted cluster %s" % ("serves" if serving else "does not serve yet"))
        tell_webhook(config, {"action": "restarted", "serving": serving})
    save_state(config["state_file"], state)
    return 0


def remote(config):
    """A worker's forced command: the verb is the SSH command, the container the config's."""
    verb = os.environ.get("SSH_ORIGINAL_COMMAND", "").strip()
    if verb not in ("stop", "start"):
        log("refused a remote command: %r (only stop and start)" % verb)
        return 2
    done = docker_action(config["container"], verb)
    log(
        "%s the engine %s at the head's request: %s"
        % (verb, config["container"], "done" if done else "failed")
    )
    return 0 if done else 1


def main(argv):
    syslog.openlog(IDENT)
    if len(argv) != 3 or argv[1] not in ("check", "remote"):
        print("usage: %s check|remote CONFIG" % argv[0], file=sys.stderr)
        return 2
    with open(argv[2], encoding="utf-8") as handle:
        config = json.load(handle)
    if argv[1] == "remote":
        TO_SYSLOG.append(True)
        return remote(config)
    return check(config)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
