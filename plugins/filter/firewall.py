# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Firewall filters: firewall_plan, firewall_live_problems."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._firewall import (
    firewall_live_problems,
    firewall_plan,
)
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain


def firewall_plan_filter(
    fabric, host, api_cidrs, api_port, engine_ports, cidrs_variable="firewall_api_allowed_cidrs"
):
    """The fabric's plan (gb10.serving.fabric_plan) -> this node's firewall plan ({errors, ...})."""
    if not isinstance(fabric, dict) or "nodes" not in fabric:
        raise AnsibleFilterError(
            "firewall_plan: the input must be the fabric's plan (gb10.serving.fabric_plan), "
            f"got {type(fabric).__name__}"
        )
    return firewall_plan(
        plain(fabric),
        str(host),
        plain(api_cidrs),
        plain(api_port),
        plain(engine_ports),
        str(cidrs_variable),
    )


def firewall_live_problems_filter(nft_json, plan):
    """`nft --json list table` output -> what the live rules lack of the plan (empty: none)."""
    if not isinstance(plan, dict):
        raise AnsibleFilterError(
            f"firewall_live_problems: the plan must be a mapping, got {type(plan).__name__}"
        )
    return firewall_live_problems(plain(nft_json), plain(plan))


class FilterModule:
    """gb10.serving firewall filters."""

    def filters(self):
        return {
            "firewall_plan": firewall_plan_filter,
            "firewall_live_problems": firewall_live_problems_filter,
        }
