# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.fabric_plan: check every node's fabric variables together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._fabric_plan import plan_fabric

_VARIABLES = ("fabric_interface", "fabric_address", "fabric_mtu")


def fabric_plan(value, hostvars=None, default_mtu=9000):
    """Plan the fabric; return ``{errors, nodes}``.

    ``value`` is either ``{host: {fabric_interface, fabric_address, fabric_mtu}}``, or a
    list of hosts whose variables are read from ``hostvars`` (``fabric_mtu`` falling back
    to ``default_mtu``).
    """
    if isinstance(value, Mapping):
        nodes = {str(host): dict(variables or {}) for host, variables in value.items()}
    elif isinstance(value, Sequence) and not isinstance(value, str):
        if hostvars is None:
            raise AnsibleFilterError("fabric_plan: a list of hosts needs hostvars as argument")
        nodes = {}
        for host in value:
            variables = hostvars[host]
            nodes[str(host)] = {
                name: variables.get(name, default_mtu if name == "fabric_mtu" else None)
                for name in _VARIABLES
            }
    else:
        raise AnsibleFilterError(
            "fabric_plan expects a mapping of host to fabric variables, or a list of hosts "
            f"with hostvars, got {type(value).__name__}"
        )
    return plan_fabric(nodes).to_dict()


class FilterModule:
    """gb10.serving fabric filters."""

    def filters(self):
        return {"fabric_plan": fabric_plan}
