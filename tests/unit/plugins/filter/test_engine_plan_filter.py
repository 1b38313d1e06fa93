# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters gb10.serving.engine_plan and engine_restart_reasons over Ansible's containers."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.engine_plan import FilterModule

from .lazy import uncopyable

FILTERS = FilterModule().filters()


def inputs(n):
    return {
        "host": f"node{n}",
        "container": "gb10-lab-vllm",
        "platform": "lab",
        "image": "gb10-lab-engine:tag",
        "fabric_ipv4": f"192.168.100.{10 + n}",
        "engine": {"uid": 1000, "gid": 1000, "hf_cache_dir": "/hf", "hf_cache_mount": "/m"},
        "serve_argv": ["vllm", "serve", "tiny"],
        "restart_policy": "no",
    }


CLUSTER = {"backend": "mp", "master_port": "29501", "ray_port": 6379}


def test_the_plan_is_made_from_lazy_containers_without_copying_them():
    plan = FILTERS["engine_plan"](uncopyable([inputs(0), inputs(1)]), uncopyable(CLUSTER))
    assert plan["start_order"] == ["node1", "node0"]
    assert plan["nodes"]["node1"]["spec"]["command"][-1] == "--headless"


def test_a_plan_error_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="engine_plan: .*backend must be"):
        FILTERS["engine_plan"]([inputs(0)], {**CLUSTER, "backend": "nccl"})
    with pytest.raises(AnsibleFilterError, match="list of node inputs"):
        FILTERS["engine_plan"]("node0", CLUSTER)


def test_restart_reasons_take_the_health_status_as_ansible_gives_it():
    plan = FILTERS["engine_plan"]([inputs(0), inputs(1)], CLUSTER)
    missing = {"exists": False, "container": None}
    current = uncopyable({"node0": missing, "node1": missing})
    reasons = FILTERS["engine_restart_reasons"](plan, current, "")
    assert reasons == ["node0: no engine container", "node1: no engine container"]
    with pytest.raises(AnsibleFilterError, match="result of engine_plan"):
        FILTERS["engine_restart_reasons"]({}, current)
