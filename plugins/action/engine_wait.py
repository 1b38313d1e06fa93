# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action gb10.serving.engine_wait: follow the cluster's boot on every node at once.

The task runs on every node of the cluster (not ``run_once``); Ansible runs the nodes'
copies side by side, each in its own worker process. Each copy calls the module of the
same name on its node again and again (the module looks every ``poll`` seconds for up to
``EXCHANGE`` seconds, and answers at once when its engine stops or, on the head, when the
API serves), and after each call it writes what it saw to a directory on the controller
that every copy of this task reads: the run's own temporary directory (Ansible removes it
at the end), under a name made of the task and the wait's start, so two waits never mix.
Every copy ends when the head serves, any node's engine has stopped, or ``timeout``
seconds have passed since ``started``; the module's loop and this one are flat
(``_waiting.follow``), so a wait of thousands of rounds nests nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time

from ansible import constants as C
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.gb10.serving.plugins.module_utils._engine_wait import cluster_view
from ansible_collections.gb10.serving.plugins.module_utils._waiting import (
    follow,
    negative_seconds,
)

display = Display()

MODULE = "gb10.serving.engine_wait"
# Seconds one module call follows its node at most: how soon a node learns that another
# node's engine stopped, or that the head serves.
EXCHANGE = 5.0
# Seconds between two progress lines of one node, at least.
PROGRESS_EVERY = 10.0
ARGUMENT_SPEC = {
    "container": {"type": "str", "required": True},
    "nodes": {"type": "list", "elements": "str", "required": True},
    "head": {"type": "str", "required": True},
    "started": {"type": "float", "required": True},
    "timeout": {"type": "float", "default": 1800},
    "url": {"type": "str"},
    "model": {"type": "str"},
    "api_key": {"type": "str", "no_log": True},
    "redact": {"type": "list", "elements": "str", "default": [], "no_log": True},
    "poll": {"type": "float", "default": 15},
    "http_timeout": {"type": "float", "default": 10},
    "docker_host": {"type": "str", "default": "unix:///var/run/docker.sock"},
}


def shared_dir(task_uuid, started):
    """The directory the copies of one wait share (made when missing)."""
    key = hashlib.sha256(("%s|%r" % (task_uuid, started)).encode("utf-8")).hexdigest()[:16]
    path = os.path.join(C.DEFAULT_LOCAL_TMP, "gb10-engine-wait-" + key)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def publish(directory, node, look):
    """Write one node's newest look, whole or not at all (a rename is atomic)."""
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".%s." % node)
    with os.fdopen(handle, "w") as stream:
        json.dump(look, stream)
    os.replace(temporary, os.path.join(directory, node + ".json"))


def read_all(directory, nodes):
    """Every node's newest look that has been written (node -> look)."""
    states = {}
    for node in nodes:
        try:
            with open(os.path.join(directory, node + ".json")) as stream:
                states[node] = json.load(stream)
        except (OSError, ValueError):
            continue
    return states


def progress_line(node, elapsed, answer, is_head):
    """``node0 40 s: /health not answering yet | <newest log message>``."""
    if answer.get("ready"):
        where = "serving"
    elif answer["container"]["stopped"]:
        where = "stopped (%s)" % (answer["container"]["status"] or "no container")
    elif is_head:
        health = answer.get("health")
        where = "/health " + (str(health) if health else "not answering yet")
    else:
        where = "running"
    return "%s %d s: %s | %s" % (
        node,
        elapsed,
        where,
        answer.get("last_message") or "(no log yet)",
    )


class ActionModule(ActionBase):
    """Call the node's module until the cluster serves, an engine stops or time is up."""

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # unused, as in every action plugin since ansible-core 2.x
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        problem = negative_seconds(args, ("poll", "timeout", "http_timeout"))
        if problem:
            raise AnsibleActionFail(problem)
        node = (task_vars or {}).get("inventory_hostname", "")
        if node not in args["nodes"]:
            raise AnsibleActionFail(f"{node} is not one of the nodes {args['nodes']}")
        is_head = node == args["head"]
        if is_head and not (args["url"] and args["model"]):
            raise AnsibleActionFail("the head's wait needs url and model (the API to ask)")
        directory = shared_dir(self._task._uuid, args["started"])
        module_args = dict(args)
        if not is_head:
            module_args.update(url=None, model=None, api_key=None)
        state = {"rounds": 0, "calls": 0, "printed": None, "answer": None}

        def elapsed():
            return max(0.0, time.time() - args["started"])

        def look():
            remaining = max(0.0, args["timeout"] - elapsed())
            answer = self._execute_module(
                module_name=MODULE,
                module_args=dict(module_args, budget=min(EXCHANGE, remaining)),
                task_vars=task_vars,
            )
            if answer.get("failed"):
                raise AnsibleActionFail(answer.get("msg", "engine_wait failed"), result=answer)
            state["calls"] += 1
            state["rounds"] += answer["rounds"]
            state["answer"] = answer
            publish(
                directory,
                node,
                {"stopped": answer["container"]["stopped"], "ready": answer["ready"]},
            )
            view = cluster_view(read_all(directory, args["nodes"]), args["head"])
            now = time.monotonic()
            if view["done"] or state["printed"] is None or now - state["printed"] >= PROGRESS_EVERY:
                display.display(progress_line(node, elapsed(), answer, is_head))
                state["printed"] = now
            return view

        try:
            view, _calls, _seconds = follow(look, 0, max(0.0, args["timeout"] - elapsed()))
        except AnsibleActionFail as exc:
            # The node's module failed (its Docker engine could not be read): the node
            # counts as stopped, so that the other nodes do not wait for it until the
            # timeout, and the task that reads the verdict names the error.
            publish(directory, node, {"stopped": True, "ready": False, "error": exc.message})
            view = cluster_view(read_all(directory, args["nodes"]), args["head"])
        answer = state["answer"] or {}
        result.update(
            changed=False,
            ready=view["ready"],
            stopped=view["stopped"],
            errors=view["errors"],
            timed_out=not view["done"],
            container=answer.get("container"),
            health=answer.get("health"),
            last_message=answer.get("last_message"),
            rounds=state["rounds"],
            calls=state["calls"],
            elapsed=round(elapsed(), 3),
        )
        return result
