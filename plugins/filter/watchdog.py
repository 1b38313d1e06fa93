# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.watchdog_nodes: the nodes the watchdog restarts, from the engine's facts."""

from __future__ import annotations

import base64
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain


def watchdog_nodes(service, hostvars):
    """One entry per node of ``vllm_service.nodes``: its engine container, its fabric address
    (where the head's SSH reaches it) and whether it is the head (``local``)."""
    if not isinstance(service, Mapping) or "nodes" not in service:
        raise AnsibleFilterError("watchdog_nodes: the input must be the vllm role's vllm_service")
    nodes = []
    for host in service["nodes"]:
        facts = hostvars[host]
        engine = facts.get("vllm_engine") or {}
        fabric = facts.get("fabric_node") or {}
        if not engine.get("container") or not fabric.get("ipv4"):
            raise AnsibleFilterError(
                f"watchdog_nodes: {host} has no vllm_engine or fabric_node: run the fabric and "
                "engine stages first"
            )
        nodes.append(
            {
                "host": str(host),
                "container": str(engine["container"]),
                "address": str(fabric["ipv4"]),
                "local": str(host) == str(service["head"]),
            }
        )
    return plain(nodes)


def watchdog_known_hosts(service, hostvars):
    """known_hosts lines pinning each worker's SSH host key to its fabric address.

    Each worker's ``__watchdog_host_key`` is the slurp of its ed25519 host key (the watchdog
    role reads it)."""
    lines = []
    for node in watchdog_nodes(service, hostvars):
        if node["local"]:
            continue
        slurped = hostvars[node["host"]].get("__watchdog_host_key") or {}
        try:
            key = base64.b64decode(slurped.get("content", "")).decode("ascii").split()
        except (ValueError, UnicodeDecodeError) as exc:
            raise AnsibleFilterError(
                f"watchdog_known_hosts: {node['host']}'s host key: {exc}"
            ) from exc
        if len(key) < 2:
            raise AnsibleFilterError(f"watchdog_known_hosts: {node['host']} has no host key")
        lines.append(f"{node['address']} {key[0]} {key[1]}")
    return "".join(line + "\n" for line in lines)


class FilterModule:
    """gb10.serving watchdog filters."""

    def filters(self):
        return {"watchdog_nodes": watchdog_nodes, "watchdog_known_hosts": watchdog_known_hosts}
