# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters gb10.serving.fabric_plan and fabric_facts: plan the fabric, then a node's facts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._fabric_env import (
    FabricEnvError,
    fabric_facts,
)
from ansible_collections.gb10.serving.plugins.module_utils._fabric_plan import plan_fabric
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain

_VARIABLES = (
    "fabric_interface",
    "fabric_address",
    "fabric_mtu",
    "fabric_rails",
    "fabric_twin_interface",
    "fabric_twin_address",
)


def fabric_plan(value, hostvars=None, default_mtu=9000, default_rails=1):
    """Plan the fabric; return ``{errors, nodes}``.

    ``value`` is either ``{host: {fabric_interface, fabric_address, fabric_mtu, ...}}``, or
    a list of hosts whose variables are read from ``hostvars`` (``fabric_mtu`` and
    ``fabric_rails`` falling back to ``default_mtu`` and ``default_rails``).
    """
    if isinstance(value, Mapping):
        nodes = {str(host): dict(variables or {}) for host, variables in value.items()}
    elif isinstance(value, Sequence) and not isinstance(value, str):
        if hostvars is None:
            raise AnsibleFilterError("fabric_plan: a list of hosts needs hostvars as argument")
        nodes = {}
        for host in value:
            variables = hostvars[host]
            fallback = {"fabric_mtu": default_mtu, "fabric_rails": default_rails}
            nodes[str(host)] = {
                name: variables.get(name, fallback.get(name)) for name in _VARIABLES
            }
    else:
        raise AnsibleFilterError(
            "fabric_plan expects a mapping of host to fabric variables, or a list of hosts "
            f"with hostvars, got {type(value).__name__}"
        )
    return plan_fabric(nodes).to_dict()


def fabric_facts_filter(node, found):
    """``{node, env}`` of one node from its plan and the roce_gid_info result of each rail."""
    if not isinstance(node, Mapping):
        raise AnsibleFilterError(
            f"fabric_facts: the input must be a node's plan, got {type(node).__name__}"
        )
    results = found.get("results") if isinstance(found, Mapping) else found
    if not isinstance(results, Sequence) or isinstance(results, str):
        raise AnsibleFilterError(
            "fabric_facts: the argument must be the rails' roce_gid_info results"
        )
    try:
        return fabric_facts(plain(node), plain(list(results)))
    except FabricEnvError as exc:
        raise AnsibleFilterError(f"fabric_facts: {exc}.") from exc


class FilterModule:
    """gb10.serving fabric filters."""

    def filters(self):
        return {"fabric_plan": fabric_plan, "fabric_facts": fabric_facts_filter}
