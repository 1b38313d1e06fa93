# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action gb10.serving.download_wait: follow a download to its end, printing progress.

The module of the same name runs on the node and follows the download container for up to
``progress_interval`` seconds, looking every ``poll`` seconds; this plugin calls it again
and again, printing one progress line per call, until the download ends or ``timeout``
seconds have passed. Both loops are flat (``_waiting.follow``): a wait of hours and
thousands of rounds nests nothing.
"""

from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.gb10.serving.plugins.module_utils._waiting import (
    follow,
    negative_seconds,
)

display = Display()

MODULE = "gb10.serving.download_wait"
ARGUMENT_SPEC = {
    "container": {"type": "str", "required": True},
    "path": {"type": "path", "required": True},
    "poll": {"type": "float", "default": 30},
    "timeout": {"type": "float", "default": 14400},
    "progress_interval": {"type": "float", "default": 60},
    "label": {"type": "str", "default": "download"},
    "docker_host": {"type": "str", "default": "unix:///var/run/docker.sock"},
    "log": {"type": "path"},
    "log_lines": {"type": "int", "default": 15},
}


def progress_line(label, state, elapsed, polls):
    """``<label>: 1.2 GB on disk after 60 s, 12 polls (downloading)``, as the play prints it."""
    return "%s: %.1f GB on disk after %d s, %d polls (%s)" % (
        label,
        state["bytes"] / 1e9,
        elapsed,
        polls,
        "done" if state["finished"] else "downloading",
    )


class ActionModule(ActionBase):
    """Call the node-side module until the download ends or time is up."""

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # unused, as in every action plugin since ansible-core 2.x
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        problem = negative_seconds(args, ("poll", "timeout", "progress_interval"))
        if problem:
            raise AnsibleActionFail(problem)
        host = (task_vars or {}).get("inventory_hostname", "")
        module_args = dict(args)
        interval = max(args["progress_interval"], args["poll"])
        start = time.monotonic()
        rounds = []

        def look():
            remaining = max(0.0, args["timeout"] - (time.monotonic() - start))
            answer = self._execute_module(
                module_name=MODULE,
                module_args=dict(module_args, budget=min(interval, remaining)),
                task_vars=task_vars,
            )
            if answer.get("failed"):
                raise AnsibleActionFail(answer.get("msg", "download_wait failed"), result=answer)
            rounds.append(answer["rounds"])
            line = progress_line(args["label"], answer, time.monotonic() - start, sum(rounds))
            display.display(f"[{host}] {line}")
            return dict(answer, done=answer["finished"], line=line)

        # The module waits on the node between its looks; the controller never sleeps.
        last, calls, elapsed = follow(look, 0, args["timeout"])
        result.update(
            changed=False,
            finished=last["finished"],
            exists=last["exists"],
            exit_code=last["exit_code"],
            bytes=last["bytes"],
            rounds=sum(rounds),
            calls=calls,
            elapsed=round(elapsed, 3),
            msg=last["line"],
            log_tail=last.get("log_tail", []),
            log_problem=last.get("log_problem"),
        )
        return result
