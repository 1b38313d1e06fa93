# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Role options at values other than their defaults, through the filter the role hands them to.

Each test sets an option the way an inventory would, calls the filter as the role's task
does (the task is named above each call), and asserts what the role then uses: proof, in
milliseconds, that the option's value is read and not a default. Which test proves which
option is tabled in tests/options_coverage.yml.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ansible_collections.gb10.serving.plugins.filter.bench import FilterModule as BenchFilters
from ansible_collections.gb10.serving.plugins.filter.fabric import FilterModule as FabricFilters
from ansible_collections.gb10.serving.plugins.filter.preflight import (
    FilterModule as PreflightFilters,
)
from ansible_collections.gb10.serving.plugins.filter.vllm_recipe import (
    FilterModule as RecipeFilters,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import load_raw

ROOT = Path(__file__).resolve().parents[4]
LAB_HOSTS = ROOT / "inventory" / "lab" / "hosts.yml"
LAB_GROUP_VARS = ROOT / "inventory" / "lab" / "group_vars" / "gb10_cluster.yml"
TOOL_CALLS = "chat_completions_tool_calls_cpu_tiny_hermes_v0.32.json"

FILTERS = {
    **BenchFilters().filters(),
    **FabricFilters().filters(),
    **PreflightFilters().filters(),
    **RecipeFilters().filters(),
}


def lab_hostvars() -> dict[str, dict]:
    """The lab inventory's host variables (inventory/lab/hosts.yml), by host."""
    inventory = yaml.safe_load(LAB_HOSTS.read_text(encoding="utf-8"))
    hostvars = {}
    for group in inventory["gb10_cluster"]["children"].values():
        hostvars.update(group["hosts"])
    return hostvars


# --- fabric: fabric_mtu ---------------------------------------------------------------------


@pytest.mark.parametrize("mtu", [1500, 4200])
def test_fabric_mtu_from_the_inventory_is_every_nodes_mtu(mtu):
    hostvars = {host: {**values, "fabric_mtu": mtu} for host, values in lab_hostvars().items()}
    # roles/fabric/vars/main.yml: ansible_play_hosts_all | fabric_plan(hostvars, fabric_mtu)
    plan = FILTERS["fabric_plan"](sorted(hostvars), hostvars, mtu)
    assert plan["errors"] == []
    # The netplan file, the link check and the full-size ping all read the plan's MTU.
    assert {node["mtu"] for node in plan["nodes"].values()} == {mtu}


def test_fabric_mtu_given_to_the_role_alone_is_every_nodes_mtu():
    # Set as a play or role variable, fabric_mtu is in no host's hostvars: the role's own
    # value is what the filter falls back to.
    hostvars = lab_hostvars()
    assert all("fabric_mtu" not in values for values in hostvars.values())
    plan = FILTERS["fabric_plan"](sorted(hostvars), hostvars, 1500)
    assert plan["errors"] == []
    assert {node["mtu"] for node in plan["nodes"].values()} == {1500}


# --- vllm: vllm_bind_address, vllm_port -----------------------------------------------------


def test_vllm_bind_address_and_vllm_port_fill_the_recipe_command():
    lab = yaml.safe_load(LAB_GROUP_VARS.read_text(encoding="utf-8"))
    vllm_bind_address, vllm_port = "192.0.2.10", 8100
    # roles/vllm/vars/main.yml: vllm_recipe | merge_recipe(vllm_recipe_overrides), then
    # roles/vllm/tasks/preflight.yml: __vllm_recipe | render_recipe_command(
    #     {'host': vllm_bind_address, 'port': vllm_port}, argv=true)
    recipe = FILTERS["merge_recipe"](lab["vllm_recipe"], {})
    argv = FILTERS["render_recipe_command"](
        recipe, {"host": vllm_bind_address, "port": vllm_port}, argv=True
    )
    assert argv[argv.index("--host") + 1] == vllm_bind_address
    assert argv[argv.index("--port") + 1] == str(vllm_port)
    assert "8000" not in argv


# --- preflight: preflight_head_group, preflight_worker_group --------------------------------


def test_preflight_groups_name_the_head_and_the_workers():
    groups = {"heads": ["node0"], "ranks": ["node1"], "gb10_head": [], "gb10_workers": []}
    chosen = {"groups": groups, "head_group": "heads", "worker_group": "ranks"}
    # roles/preflight/tasks/inventory.yml: {'groups': groups, 'head_group':
    # preflight_head_group, 'worker_group': preflight_worker_group} | preflight_problems(...)
    assert FILTERS["preflight_problems"](chosen, "inventory_head") == []
    assert FILTERS["preflight_problems"](chosen, "inventory_overlap") == []
    for host in ("node0", "node1"):
        assert FILTERS["preflight_problems"]({**chosen, "host": host}, "inventory_node") == []
    # With the default group names instead, the same inventory has no head and node1 is in
    # neither group: the options decide.
    defaults = {**chosen, "head_group": "gb10_head", "worker_group": "gb10_workers"}
    assert (
        "'gb10_head' must hold exactly one host"
        in FILTERS["preflight_problems"](defaults, "inventory_head")[0]
    )
    assert FILTERS["preflight_problems"]({**defaults, "host": "node1"}, "inventory_node") == [
        "node1 is in neither 'gb10_head' nor 'gb10_workers'; add it to one of them."
    ]


# --- bench: bench_tool_prompts ----------------------------------------------------------------


def test_bench_tool_prompts_name_the_calls_the_score_expects():
    responses = {
        case["case"]: case["response"] for case in json.loads(load_raw("bench", TOOL_CALLS))
    }
    bench_tool_prompts = [
        {"prompt": "Show me README.md. Use the tool.", "function": "read_file"},
        {"prompt": "Run the tests. Use the tool.", "function": "run_tests"},
    ]
    # roles/bench/tasks/measure.yml: one request per prompt, then the answers |
    # score_tool_calls(bench_tool_prompts | map(attribute='function') | list)
    answers = [responses["named-read_file"], responses["named-read_file"]]
    result = FILTERS["score_tool_calls"](answers, [p["function"] for p in bench_tool_prompts])
    assert result["total"] == 2
    cases = [(case["expected"], case["called"]) for case in result["cases"]]
    assert cases == [("read_file", "read_file"), ("run_tests", "read_file")]
    assert result["cases"][1]["reason"] == "called 'read_file', expected 'run_tests'"
