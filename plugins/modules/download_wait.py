#!/usr/bin/python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: download_wait
short_description: Follow a download container until it ends, for a bounded time
version_added: 0.1.0
description:
  - Follows a download container (the node role's detached C(hf download)) until it is no
    longer running or O(timeout) seconds have passed, printing a progress line - the bytes
    that have arrived under O(path) and the time so far - every O(progress_interval)
    seconds, and reports whether it ended, its exit code and the bytes on disk.
  - The action plugin of the same name runs on the controller and calls this module on the
    node again and again, each call looking every O(poll) seconds for at least
    O(progress_interval) seconds. Both loops are flat, so a wait of hours and thousands of
    rounds nests nothing (a task file that includes itself once a round crashes
    ansible-core after about 245 rounds).
  - A container that does not exist counts as ended, with no exit code.
  - Only reads; never reports a change. Symlinks under O(path) are never followed, and
    O(path) itself being a symlink counts as nothing arrived.
  - Talks to the Docker Engine API over the node's local unix socket with the Python
    standard library; run it as a user that may use the socket.
author:
  - gb10.serving maintainers (@gb10)
extends_documentation_fragment:
  - gb10.serving.attributes
  - gb10.serving.attributes.info_module
options:
  container:
    description: The download container's name (or ID).
    type: str
    required: true
  path:
    description: The directory whose regular files are counted as arrived (the repository's
      folder in the hub cache).
    type: path
    required: true
  poll:
    description: Seconds between two looks at the container and the bytes; a fraction of a
      second is fine.
    type: float
    default: 30
  timeout:
    description: Seconds to follow the download in all; the container goes on after it.
    type: float
    default: 14400
  progress_interval:
    description: Seconds between two progress lines (at least O(poll)).
    type: float
    default: 60
  label:
    description: What the progress lines call the download (the model's name).
    type: str
    default: download
  budget:
    description:
      - Seconds one call of the module follows before it answers (V(0) looks once). The
        action plugin sets it for each call; there is no need to give it.
    type: float
    default: 0
  docker_host:
    description: The Docker engine's API socket, as C(unix://<path>).
    type: str
    default: unix:///var/run/docker.sock
  log:
    description:
      - The download's log file; once the container has ended, its last O(log_lines) lines
        are returned as RV(log_tail).
      - It lies where the container UID writes and this module runs as root, so a symlink
        there is never followed and anything but a regular file is not read (RV(log_problem)
        says so).
    type: path
  log_lines:
    description: How many lines of the end of O(log) to return.
    type: int
    default: 15
"""

EXAMPLES = r"""
- name: Follow the download for four hours at most, a progress line a minute
  gb10.serving.download_wait:
    container: gb10-hf-download
    path: /var/lib/gb10-serving/huggingface/hub/models--org--name
    label: org/name
    poll: 5
    progress_interval: 60
    timeout: 14400
  register: download
"""

RETURN = r"""
finished:
  description: The container is not running (ended, or does not exist).
  returned: success
  type: bool
exists:
  description: The container exists.
  returned: success
  type: bool
exit_code:
  description: The container's exit code once it ended; null while it runs or when it does
    not exist.
  returned: success
  type: int
bytes:
  description: Bytes of the regular files under O(path) at the last look.
  returned: success
  type: int
rounds:
  description: How many looks were made in all.
  returned: success
  type: int
elapsed:
  description: Seconds the download was followed.
  returned: success
  type: float
calls:
  description: How many times the action plugin called the module (one progress line each).
  returned: success
  type: int
msg:
  description: The last progress line.
  returned: success
  type: str
log_tail:
  description: The last lines of O(log) once the container has ended; empty while it runs,
    without O(log), or when the file was not read.
  returned: success
  type: list
  elements: str
log_problem:
  description: Why O(log) was not read (a symlink, not a regular file); null otherwise.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.gb10.serving.plugins.module_utils._docker_logs import (  # noqa: E402
    DockerClient,
    DockerError,
)
from ansible_collections.gb10.serving.plugins.module_utils._waiting import (  # noqa: E402
    follow,
    negative_seconds,
    read_tail,
    tree_bytes,
)


def look_once(client, container, path):
    """Where the download stands now: a dict with done, exists, exit_code, bytes."""
    info = client.inspect(container)
    state = (info or {}).get("State") or {}
    running = bool(state.get("Running"))
    return {
        "done": not running,
        "exists": info is not None,
        "exit_code": state.get("ExitCode") if info is not None and not running else None,
        "bytes": tree_bytes(path),
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type="str", required=True),
            path=dict(type="path", required=True),
            poll=dict(type="float", default=30),
            timeout=dict(type="float", default=14400),
            progress_interval=dict(type="float", default=60),
            label=dict(type="str", default="download"),
            budget=dict(type="float", default=0),
            docker_host=dict(type="str", default="unix:///var/run/docker.sock"),
            log=dict(type="path"),
            log_lines=dict(type="int", default=15),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problem = negative_seconds(params, ("poll", "timeout", "progress_interval", "budget"))
    if problem:
        module.fail_json(msg=problem)
    try:
        client = DockerClient(params["docker_host"], timeout=60)
        last, rounds, elapsed = follow(
            lambda: look_once(client, params["container"], params["path"]),
            params["poll"],
            params["budget"],
        )
    except DockerError as exc:
        module.fail_json(msg=str(exc))
    log_tail, log_problem = [], None
    if params["log"] and last["done"]:
        log_tail, log_problem = read_tail(params["log"], max(0, params["log_lines"]))
    module.exit_json(
        changed=False,
        finished=last["done"],
        exists=last["exists"],
        exit_code=last["exit_code"],
        bytes=last["bytes"],
        rounds=rounds,
        elapsed=round(elapsed, 3),
        log_tail=log_tail,
        log_problem=log_problem,
    )


if __name__ == "__main__":
    main()
