# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine's plan: every node's container, the start order, the fingerprint, and why the
running cluster differs from it.

One place for what the vllm role deploys (roles/vllm/tasks/plan.yml and state.yml are thin
calls of the two filters over it), so that a later feature that restarts or checks the
cluster (a watchdog, an upgrade, the doctor) reuses the plan instead of copying it.

Inputs, all plain data:

- ``nodes``: one mapping per node in rank order (the head first), each with what that node's
  own variables say: ``host``, ``container``, ``platform`` (``spark`` or ``lab``), ``image``,
  ``fabric_ipv4``, ``engine`` (the node role's ``node_engine``: ``uid``, ``gid``,
  ``hf_cache_dir``, ``hf_cache_mount``, ``commit``, ``env``), ``serve_argv`` (the recipe's
  rendered command), ``recipe_env``, ``fabric_env``, ``extra_env``, ``hf_offline``,
  ``network_mode``, ``ipc_mode``, ``memlock_unlimited``, ``restart_policy``, ``log_options``.
- ``cluster``: what the whole deployment shares: ``backend`` (``mp`` or ``ray``),
  ``master_port``, ``ray_port``, ``secret_env_file`` and ``api_key_sha256`` (the head's),
  and ``api_keys`` when there are API users: ``file`` on the node, ``mount`` in the
  container, ``users`` (names) and ``sha256`` of the keys file.

The fingerprint is the SHA-256 of the node specs as JSON with sorted keys, the way
``to_json(sort_keys=True) | hash('sha256')`` wrote it before this module: a collection
update that keeps the specs keeps every healthy cluster running.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import shlex
from collections.abc import Mapping, Sequence

from ansible_collections.gb10.serving.plugins.module_utils._redact import Redactor

BACKENDS = ("mp", "ray")

# Ray: the head starts Ray, waits until every node has joined, then runs the engine.
# Arguments: $0 the Ray port, $1 the node count, then the engine's command.
RAY_HEAD_SCRIPT = "\n".join(
    [
        'ray start --head --disable-usage-stats --node-ip-address="$VLLM_HOST_IP" '
        '--port="$0" || exit 1',
        'until [ "$(ray list nodes --filter state=ALIVE --format yaml 2>/dev/null '
        '| grep -c node_id)" -ge "$1" ]; do',
        "  sleep 2",
        "done",
        "shift",
        'exec "$@"',
    ]
)


class EnginePlanError(ValueError):
    """The plan's inputs are not usable (a programming error in the role, not user input:
    the preflight checks every user variable before the plan is made)."""


def _need(mapping: Mapping, key: str, where: str):
    if key not in mapping or mapping[key] is None:
        raise EnginePlanError(f"{where}: '{key}' is missing")
    return mapping[key]


def _strings(values) -> list[str]:
    return [str(value) for value in values]


def engine_command(nodes: Sequence[Mapping], rank: int, cluster: Mapping) -> list[str]:
    """The argv of the engine container of the node at ``rank``."""
    node = nodes[rank]
    backend = cluster.get("backend", "mp")
    if backend not in BACKENDS:
        raise EnginePlanError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    master_addr = _need(nodes[0], "fabric_ipv4", str(nodes[0].get("host")))
    commit = (node.get("engine") or {}).get("commit") or ""
    serve = list(node.get("serve_argv") or [])
    serve += ["--revision", commit] if commit else []
    # With API users, the head reads every key from its keys file (vLLM's --config).
    if rank == 0 and cluster.get("api_keys"):
        serve += ["--config", cluster["api_keys"]["mount"]]
    if backend == "mp":
        command = serve + [
            "--distributed-executor-backend",
            "mp",
            "--nnodes",
            len(nodes),
            "--node-rank",
            rank,
            "--master-addr",
            master_addr,
            "--master-port",
            _need(cluster, "master_port", "cluster"),
        ]
        command += [] if rank == 0 else ["--headless"]
    elif rank == 0:
        ray_port = _need(cluster, "ray_port", "cluster")
        command = ["sh", "-c", RAY_HEAD_SCRIPT, ray_port, len(nodes)]
        command += serve + ["--distributed-executor-backend", "ray"]
    else:
        command = [
            "ray",
            "start",
            "--block",
            "--disable-usage-stats",
            f"--address={master_addr}:{_need(cluster, 'ray_port', 'cluster')}",
            f"--node-ip-address={_need(node, 'fabric_ipv4', str(node.get('host')))}",
        ]
    return _strings(command)


def engine_env(node: Mapping) -> dict[str, str]:
    """The container's environment: the recipe's, the node's caches, offline, the fabric's,
    then the user's extra variables, each later one winning."""
    env: dict = {}
    env.update(node.get("recipe_env") or {})
    env.update((node.get("engine") or {}).get("env") or {})
    if node.get("hf_offline"):
        env["HF_HUB_OFFLINE"] = "1"
    env.update(node.get("fabric_env") or {})
    env.update(node.get("extra_env") or {})
    return {str(key): str(value) for key, value in env.items()}


def node_spec(nodes: Sequence[Mapping], rank: int, cluster: Mapping) -> dict:
    """What the container of the node at ``rank`` is made of: the fingerprint's input."""
    node = nodes[rank]
    where = str(node.get("host"))
    engine = _need(node, "engine", where)
    spark = node.get("platform") == "spark"
    head = rank == 0
    spec = {
        "platform": _need(node, "platform", where),
        "image": _need(node, "image", where),
        # The engine runs as the container UID and needs no capability and no way to gain
        # one (setuid binaries, file capabilities).
        "security_opts": ["no-new-privileges:true"],
        "cap_drop": ["ALL"],
        "command": engine_command(nodes, rank, cluster),
        "env": engine_env(node),
        "user": f"{_need(engine, 'uid', where)}:{_need(engine, 'gid', where)}",
        "network_mode": node.get("network_mode") or "host",
        "ipc_mode": node.get("ipc_mode") or "host",
        "volumes": [f"{engine['hf_cache_dir']}:{engine['hf_cache_mount']}"],
        "gpus": spark,
        "devices": ["/dev/infiniband:/dev/infiniband"] if spark else [],
        "ulimits": ["memlock:-1:-1"] if node.get("memlock_unlimited") else [],
        "restart_policy": _need(node, "restart_policy", where),
        "log_options": dict(node.get("log_options") or {}),
        "secret_env_file": cluster.get("secret_env_file", "") if head else "",
        "api_key_sha256": cluster.get("api_key_sha256", "") if head else "",
    }
    keys = cluster.get("api_keys")
    # Without users nothing is added: a deployment without them keeps its fingerprint.
    if head and keys:
        spec["volumes"] = spec["volumes"] + [f"{keys['file']}:{keys['mount']}:ro"]
        spec["api_users"] = sorted(keys["users"])
        spec["api_keys_sha256"] = keys["sha256"]
    return spec


def start_order(hosts: Sequence[str], backend: str) -> list[str]:
    """vLLM's native launch starts the headless workers first, so the head finds its ranks;
    a Ray cluster needs its head first."""
    hosts = list(hosts)
    return hosts[1:] + hosts[:1] if backend == "mp" else hosts


def fingerprint(specs: Sequence[Mapping]) -> str:
    """The deployment's fingerprint: every node's spec, in rank order."""
    text = json.dumps(list(specs), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan_engine(nodes: Sequence[Mapping], cluster: Mapping) -> dict:
    """The whole plan: ``nodes`` (host to ``container``, ``rank``, ``head``, ``spec``),
    ``ranks`` (hosts in rank order), ``start_order`` and ``deployment`` (the fingerprint)."""
    if not nodes:
        raise EnginePlanError("the plan needs at least one node")
    hosts = [str(_need(node, "host", f"node {rank}")) for rank, node in enumerate(nodes)]
    if len(set(hosts)) != len(hosts):
        raise EnginePlanError(f"a host is listed twice: {', '.join(hosts)}")
    specs = [node_spec(nodes, rank, cluster) for rank in range(len(nodes))]
    return {
        "nodes": {
            host: {
                "container": str(_need(nodes[rank], "container", host)),
                "rank": rank,
                "head": rank == 0,
                "spec": specs[rank],
            }
            for rank, host in enumerate(hosts)
        },
        "ranks": hosts,
        "start_order": start_order(hosts, cluster.get("backend", "mp")),
        "deployment": fingerprint(specs),
    }


def _users_change(before: Sequence[str], now: Sequence[str]) -> str:
    added = sorted(set(now) - set(before))
    removed = sorted(set(before) - set(now))
    parts = [f"API users added: {', '.join(added)}"] if added else []
    parts += [f"API users removed: {', '.join(removed)}"] if removed else []
    return "; ".join(parts)


def restart_reasons(
    plan: Mapping,
    current: Mapping,
    health_status=None,
    label_prefix: str = "io.gb10-serving",
    api_users: Sequence[str] = (),
) -> list[str]:
    """Why the running cluster is not the plan, node by node in rank order; empty when every
    node runs the planned deployment and the head's ``/health`` answers 200.

    ``current`` maps each host to what ``docker_container_info`` said of its engine
    (``exists`` and ``container``); ``health_status`` is the HTTP status of the head's
    ``/health`` (None when nothing answered or it was not asked); ``api_users`` are the
    names the plan serves, compared with the head's label of the names it was started with.
    """
    reasons: list[str] = []
    for host in plan["ranks"]:
        head = plan["nodes"][host]["head"]
        info = current.get(host) or {}
        container = info.get("container") or {}
        if not info.get("exists"):
            reasons.append(f"{host}: no engine container")
            continue
        state = container.get("State") or {}
        labels = (container.get("Config") or {}).get("Labels") or {}
        running = bool(state.get("Running"))
        if not running or state.get("Restarting"):
            reasons.append(
                f"{host}: the engine is {state.get('Status')} (exit code {state.get('ExitCode')})"
            )
        if labels.get(f"{label_prefix}.deployment") != plan["deployment"]:
            reasons.append(f"{host}: the deployment changed")
        if not head:
            continue
        # The users the running head was started with, from its label (names only, no key).
        before = [name for name in labels.get(f"{label_prefix}.api-users", "").split(",") if name]
        change = _users_change(before, api_users)
        if change:
            reasons.append(change)
        if running and health_status != 200:
            answer = "nothing" if health_status is None else health_status
            reasons.append(f"{host}: /health answers {answer}")
    return reasons


# Variables whose values the doctor never repeats, whatever the plan holds.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW", re.IGNORECASE)


def _words(words) -> str:
    return "`%s`" % shlex.join(str(word) for word in words)


def _command_change(running: Sequence[str], planned: Sequence[str]) -> str:
    """What the plan adds, drops or replaces in the running command, in order."""
    parts = []
    matcher = difflib.SequenceMatcher(a=list(running), b=list(planned), autojunk=False)
    for op, a_from, a_to, b_from, b_to in matcher.get_opcodes():
        if op == "insert":
            parts.append("adds " + _words(planned[b_from:b_to]))
        elif op == "delete":
            parts.append("drops " + _words(running[a_from:a_to]))
        elif op == "replace":
            parts.append(
                "has %s for %s" % (_words(planned[b_from:b_to]), _words(running[a_from:a_to]))
            )
    return "the command: the plan " + "; ".join(parts)


def _shown(name: str, value) -> str:
    if value is None:
        return "not set"
    return "(a secret)" if _SECRET_NAME.search(name) else repr(value)


def _same_container_mode(running, planned) -> bool:
    """Docker keeps ``container:NAME`` (another container's network or IPC) as
    ``container:<its ID>``; the name cannot be told from the ID here, so any such pair counts
    as the same."""
    return bool(re.fullmatch(r"container:[0-9a-f]{64}", str(running))) and str(planned).startswith(
        "container:"
    )


def _texts(mapping) -> dict:
    return {str(key): str(value) for key, value in (mapping or {}).items()}


def _bind(bind) -> str:
    """A bind mount without the read-write mode Docker may spell out."""
    text = str(bind)
    return text[: -len(":rw")] if text.endswith(":rw") else text


def spec_differences(spec: Mapping, container: Mapping) -> list[str]:
    """How a running container (``docker_container_info``'s ``container``) differs from a
    node's planned ``spec``, in words: its image, command, user, modes, mounts, restart
    policy, log options and each variable the plan sets. Values of variables named like a
    secret are never shown, and the command is redacted as logs are. Empty when none of
    these differ: then what changed is only in the fingerprint (the keys' hashes, the users,
    devices and limits)."""
    config = container.get("Config") or {}
    host = container.get("HostConfig") or {}
    found = []
    if config.get("Image") != spec.get("image"):
        found.append("the image: runs %s, the plan %s" % (config.get("Image"), spec.get("image")))
    running_cmd = [str(word) for word in config.get("Cmd") or []]
    planned_cmd = [str(word) for word in spec.get("command") or []]
    if running_cmd != planned_cmd:
        found.append(Redactor().text(_command_change(running_cmd, planned_cmd)))
    pairs = (
        ("the user", config.get("User"), spec.get("user")),
        ("the network mode", host.get("NetworkMode"), spec.get("network_mode")),
        ("the IPC mode", host.get("IpcMode"), spec.get("ipc_mode")),
        (
            "the restart policy",
            (host.get("RestartPolicy") or {}).get("Name"),
            spec.get("restart_policy"),
        ),
        (
            "the log options",
            _texts((host.get("LogConfig") or {}).get("Config")),
            _texts(spec.get("log_options")),
        ),
    )
    for what, running, planned in pairs:
        if _same_container_mode(running, planned):
            continue
        if running != planned:
            found.append("%s: runs %s, the plan %s" % (what, running, planned))
    running_binds = sorted(_bind(bind) for bind in host.get("Binds") or [])
    planned_binds = sorted(_bind(bind) for bind in spec.get("volumes") or [])
    if running_binds != planned_binds:
        found.append(
            "the mounts: runs %s, the plan %s"
            % (", ".join(running_binds) or "none", ", ".join(planned_binds) or "none")
        )
    env = dict(str(item).partition("=")[::2] for item in config.get("Env") or [])
    for name, value in sorted((spec.get("env") or {}).items()):
        if env.get(name) != str(value):
            found.append(
                "%s: runs %s, the plan %s"
                % (name, _shown(name, env.get(name)), _shown(name, value))
            )
    return found
