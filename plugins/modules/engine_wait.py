#!/usr/bin/python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: engine_wait
short_description: Follow a vLLM engine's boot on one node until it serves or stops
version_added: 0.1.0
description:
  - Looks at the engine container on this node every O(poll) seconds for up to O(budget)
    seconds, and answers as soon as the engine has stopped (the container is gone, not
    running, or restarted by Docker) or, when O(url) is given (on the head), the API there
    answers C(/health) with 200 and lists O(model) in C(/v1/models).
  - The action plugin of the same name runs on the controller, on every node of the
    cluster at once - it calls this module again and again, shares each node's answer with
    the other nodes' waits, and ends every node's wait when the head serves, any engine
    stops, or its timeout has passed. Both loops are flat, so a wait of thousands of
    rounds nests nothing (a task file that includes itself once a round crashes
    ansible-core after about 245 rounds).
  - Only reads; never reports a change.
  - Talks to the Docker Engine API over the node's local unix socket with the Python
    standard library, and to the API with Ansible's own HTTP client; run it as a user that
    may use the socket.
author:
  - gb10.serving maintainers (@gb10)
extends_documentation_fragment:
  - gb10.serving.attributes
  - gb10.serving.attributes.info_module
options:
  container:
    description: The engine container's name (or ID).
    type: str
    required: true
  url:
    description:
      - The API's address as this node reaches it, C(http://<host>:<port>). Given on the
        head only; without it the module follows the container alone.
    type: str
  model:
    description: The model name the API must list (the served name). Required with O(url).
    type: str
  api_key:
    description: The key C(/v1/models) is asked with (as C(Authorization) C(Bearer <key>)).
      It is masked in the log message returned, like O(redact).
    type: str
  redact:
    description:
      - Secrets (every API key) masked as C(<redacted>) in the log message returned. The
        values of the secret fields vLLM logs (C(api_key) in its arguments, C(--api-key),
        C(VLLM_API_KEY), C(HF_TOKEN)) are masked without them too.
    type: list
    elements: str
    default: []
  nodes:
    description:
      - Every node of the cluster (inventory names). Each runs this task; their waits share
        what they see through the controller. Used by the action plugin.
    type: list
    elements: str
    required: true
  head:
    description: The node whose API decides readiness (it must be given O(url)).
    type: str
    required: true
  started:
    description: When the boot started, as a Unix time; the same value on every node (set
      it once, with C(run_once)). O(timeout) counts from it.
    type: float
    required: true
  timeout:
    description: Seconds from O(started) after which the wait gives up.
    type: float
    default: 1800
  poll:
    description: Seconds between two looks; a fraction of a second is fine.
    type: float
    default: 15
  budget:
    description:
      - Seconds one call follows before it answers (V(0) looks once). The action plugin
        sets it for each call; there is no need to give it.
    type: float
    default: 0
  http_timeout:
    description: Seconds one request to the API may take.
    type: float
    default: 10
  docker_host:
    description: The Docker engine's API socket, as C(unix://<path>).
    type: str
    default: unix:///var/run/docker.sock
"""

EXAMPLES = r"""
- name: Wait until the cluster serves the model, or an engine stops
  gb10.serving.engine_wait:
    container: gb10-vllm
    url: "{{ 'http://127.0.0.1:8000' if inventory_hostname == 'spark1' else omit }}"
    model: deepseek-v4-flash
    api_key: "{{ service_key }}"
    nodes: [spark1, spark2]
    head: spark1
    started: "{{ now().timestamp() }}"
    poll: 5
    timeout: 1800
  register: waited
  no_log: true
"""

RETURN = r"""
ready:
  description: The head's API lists the model (the cluster's verdict, on every node).
  returned: success
  type: bool
stopped:
  description: The nodes whose engine stopped (or whose wait broke off), in name order.
  returned: success
  type: list
  elements: str
timed_out:
  description: The wait ended because its timeout passed.
  returned: success
  type: bool
container:
  description: This node's engine container at the last look - exists, running, status,
    exit_code, oom_killed, restart_count, stopped.
  returned: success
  type: dict
health:
  description: The status C(/health) answered at the last look (null when nothing answered
    or O(url) was not given).
  returned: success
  type: int
last_message:
  description: The newest message of the engine's log (prefixes and colour removed).
  returned: success
  type: str
rounds:
  description: How many looks this node made in all.
  returned: success
  type: int
calls:
  description: How many times the action plugin called the module on this node.
  returned: success
  type: int
elapsed:
  description: Seconds since the wait's start.
  returned: success
  type: float
errors:
  description: Node name to why that node's wait broke off (its Docker engine could not be
    read, for example); such a node counts as stopped.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.urls import open_url  # noqa: E402
from ansible_collections.gb10.serving.plugins.module_utils._docker_logs import (  # noqa: E402
    DockerClient,
    DockerError,
    log_blocks,
)
from ansible_collections.gb10.serving.plugins.module_utils._engine_wait import (  # noqa: E402
    TAIL_LINES,
    container_state,
    last_message,
    probe_api,
)
from ansible_collections.gb10.serving.plugins.module_utils._redact import Redactor  # noqa: E402
from ansible_collections.gb10.serving.plugins.module_utils._waiting import (  # noqa: E402
    follow,
    negative_seconds,
)


def look_once(client, params):
    """The container's state and, with a URL, the API's answer; done when either decides."""
    info = client.inspect(params["container"])
    look = container_state(info)
    look["tty"] = bool(((info or {}).get("Config") or {}).get("Tty"))
    look.update(health=None, ready=False)
    if params["url"] and not look["stopped"]:
        look.update(
            probe_api(
                params["url"],
                params["model"],
                params["api_key"],
                params["http_timeout"],
                fetch=lambda url, headers, timeout: open_url(url, headers=headers, timeout=timeout),
            )
        )
    look["done"] = look["stopped"] or look["ready"]
    return look


def main():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type="str", required=True),
            nodes=dict(type="list", elements="str", required=True),
            head=dict(type="str", required=True),
            started=dict(type="float", required=True),
            timeout=dict(type="float", default=1800),
            url=dict(type="str"),
            model=dict(type="str"),
            api_key=dict(type="str", no_log=True),
            redact=dict(type="list", elements="str", default=[], no_log=True),
            poll=dict(type="float", default=15),
            budget=dict(type="float", default=0),
            http_timeout=dict(type="float", default=10),
            docker_host=dict(type="str", default="unix:///var/run/docker.sock"),
        ),
        required_by={"url": "model"},
        supports_check_mode=True,
    )
    params = module.params
    problem = negative_seconds(params, ("poll", "budget", "http_timeout", "timeout"))
    if problem:
        module.fail_json(msg=problem)
    if params["url"] and not params["url"].startswith(("http://", "https://")):
        module.fail_json(msg="url must start with http:// or https://, got %s" % params["url"])
    try:
        client = DockerClient(params["docker_host"], timeout=60)
        last, rounds, elapsed = follow(
            lambda: look_once(client, params), params["poll"], params["budget"]
        )
        message = None
        if last["exists"]:
            message = last_message(
                log_blocks(
                    client.logs(params["container"], tail=TAIL_LINES),
                    last["tty"],
                    redact=Redactor([params["api_key"], *params["redact"]]).data,
                )
            )
    except DockerError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(
        changed=False,
        container={
            key: last[key]
            for key in (
                "exists",
                "running",
                "status",
                "exit_code",
                "oom_killed",
                "restart_count",
                "stopped",
            )
        },
        ready=last["ready"],
        health=last["health"],
        last_message=message,
        rounds=rounds,
        elapsed=round(elapsed, 3),
    )


if __name__ == "__main__":
    main()
