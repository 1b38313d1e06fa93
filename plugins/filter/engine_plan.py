# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters gb10.serving.engine_plan and engine_restart_reasons: the engine's plan for every
node, and why the running cluster differs from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._engine_plan import (
    EnginePlanError,
    plan_engine,
    restart_reasons,
)
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain


def engine_plan(nodes, cluster):
    """Every node's container spec and command, the start order and the fingerprint."""
    if not isinstance(nodes, Sequence) or isinstance(nodes, str):
        raise AnsibleFilterError(
            f"engine_plan expects a list of node inputs in rank order, got {type(nodes).__name__}"
        )
    if not isinstance(cluster, Mapping):
        raise AnsibleFilterError(
            f"engine_plan: cluster must be a mapping, got {type(cluster).__name__}"
        )
    try:
        return plan_engine(plain(nodes), plain(cluster))
    except EnginePlanError as exc:
        raise AnsibleFilterError(f"engine_plan: {exc}") from exc


def engine_restart_reasons(
    plan, current, health_status=None, label_prefix="io.gb10-serving", api_users=()
):
    """Why the running containers are not the plan; an empty list when they are."""
    if not isinstance(plan, Mapping) or "ranks" not in plan:
        raise AnsibleFilterError("engine_restart_reasons expects the result of engine_plan")
    if not isinstance(current, Mapping):
        raise AnsibleFilterError(
            "engine_restart_reasons: current must map each host to its docker_container_info "
            f"result, got {type(current).__name__}"
        )
    status = None if health_status in (None, "") else int(health_status)
    return restart_reasons(plain(plan), plain(current), status, str(label_prefix), plain(api_users))


class FilterModule:
    """gb10.serving engine plan filters."""

    def filters(self):
        return {"engine_plan": engine_plan, "engine_restart_reasons": engine_restart_reasons}
