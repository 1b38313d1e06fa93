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
from ansible_collections.gb10.serving.plugins.filter.vllm_log import (
    FilterModule as VllmLogFilters,
)
from ansible_collections.gb10.serving.plugins.filter.vllm_recipe import (
    FilterModule as RecipeFilters,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_sweep import compare_variants
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    edit,
    load_capture,
    load_raw,
)

ROOT = Path(__file__).resolve().parents[4]
LAB_HOSTS = ROOT / "inventory" / "lab" / "hosts.yml"
LAB_GROUP_VARS = ROOT / "inventory" / "lab" / "group_vars" / "gb10_cluster.yml"
TOOL_CALLS = "chat_completions_tool_calls_cpu_tiny_hermes_v0.32.json"
VLLM_DEFAULTS = ROOT / "roles" / "vllm" / "defaults" / "main.yml"
# The lab's own two-node head: no backend logged, no speculation, 4,194,304 KV tokens,
# 16384.00x (tests/unit/plugins/module_utils/test_vllm_log.py reads it in full).
LAB_HEAD_LOG = "vllm_cpu_tiny_tp2_2node_head_v0.32.log"
# A TP=4 boot that logs its MLA attention backend (a '# SOURCE:' capture).
MLA_LOG = "vllm_boot_tp4_kimi_eagle3_mla_backends_repofile.log"
# The lab engine on one node: 2,097,152 KV tokens, 8192.00x.
LAB_ONE_NODE_LOG = "vllm_cpu_tiny_llama_boot_v0.32.log"
# vllm bench serve's saved results, single stream: 366.07 and 326.12 output tokens/s.
BENCH_C1 = "vllm_bench_serve_c1_goodput_detailed_cpu_tiny_v0.32.json"
BENCH_DEEP = "vllm_bench_serve_deep_cpu_tiny_v0.32.json"

FILTERS = {
    **BenchFilters().filters(),
    **FabricFilters().filters(),
    **PreflightFilters().filters(),
    **RecipeFilters().filters(),
    **VllmLogFilters().filters(),
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


# --- cluster: vllm_head_group, vllm_worker_group, as the preflight checks them --------------


def test_preflight_groups_name_the_head_and_the_workers():
    groups = {"heads": ["node0"], "ranks": ["node1"], "gb10_head": [], "gb10_workers": []}
    chosen = {"groups": groups, "head_group": "heads", "worker_group": "ranks"}
    # roles/preflight/tasks/inventory.yml: {'groups': groups, 'head_group':
    # vllm_head_group, 'worker_group': vllm_worker_group} | preflight_problems(...)
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


# --- bench: bench_sweep_rank_by -------------------------------------------------------------


def swept(variant, boot_log, bench_json) -> dict:
    """A variant as the sweep records it: its boot facts and its single-stream run."""
    run = {
        **FILTERS["parse_bench_serve"](json.loads(load_raw("bench", bench_json))),
        "concurrency": 1,
    }
    boot = FILTERS["parse_vllm_log"](load_raw("vllm", boot_log))
    return {**variant, "boot": boot, "report": {"runs": [run]}}


@pytest.mark.parametrize(
    ("bench_sweep_rank_by", "winner"),
    [("kv_cache_tokens", 1), ("max_concurrency", 1), ("single_stream", 0)],
)
def test_bench_sweep_rank_by_picks_the_variant_the_cluster_is_left_on(bench_sweep_rank_by, winner):
    lab = yaml.safe_load(LAB_GROUP_VARS.read_text(encoding="utf-8"))
    recipe = FILTERS["merge_recipe"](lab["vllm_recipe"], {})
    # roles/bench/tasks/sweep.yml: bench_sweep_variants | expand_sweep(vllm_service.recipe,
    # bench_concurrency), each deployed and measured, then compared (the bench_report
    # action's compare_variants): the first variant is faster single-stream (366.07 tok/s
    # against 326.12), the second holds more KV tokens at a higher concurrency.
    variants = FILTERS["expand_sweep"]({"max_num_seqs": [8, 16]}, recipe, [1])
    measured = [
        swept(variants[0], LAB_ONE_NODE_LOG, BENCH_C1),
        swept(variants[1], LAB_HEAD_LOG, BENCH_DEEP),
    ]
    best = compare_variants(measured)["best"]
    # ... | sweep_choice(__bench_sweep_report.best, bench_sweep_keep, bench_sweep_rank_by)
    chosen = FILTERS["sweep_choice"](variants, best, "best", bench_sweep_rank_by)
    assert chosen == {"name": variants[winner]["name"], "overrides": variants[winner]["overrides"]}
    assert chosen["overrides"] == {"max_num_seqs": [8, 16][winner]}
    # bench_sweep_keep: start (the default) goes back to the inventory's recipe, whatever
    # the column.
    start = FILTERS["sweep_choice"](variants, best, "start", bench_sweep_rank_by)
    assert start == {"name": "the starting recipe", "overrides": {}}


# --- vllm: the gates on the head's boot log -------------------------------------------------
#
# roles/vllm/tasks/facts.yml reads each node's log into vllm_boot (gb10.serving.vllm_boot_info,
# the parser parse_vllm_log uses too); roles/vllm/tasks/gates.yml then hands the head's to
# gb10.serving.vllm_gates with the gate variables, and stops on `stop` or warns `warnings`.


def lab_head_boot(*edits) -> dict:
    """The boot facts of the lab head's captured log, after the given (old, new) edits."""
    text = load_raw("vllm", LAB_HEAD_LOG)
    for old, new in edits:
        text = edit(text, old, new)
    return FILTERS["parse_vllm_log"](text)


def gates(**changes) -> dict:
    """The mapping gates.yml builds, at the lab inventory's values with ``changes`` over them."""
    lab = yaml.safe_load(LAB_GROUP_VARS.read_text(encoding="utf-8"))
    defaults = yaml.safe_load(VLLM_DEFAULTS.read_text(encoding="utf-8"))
    values = {
        name: lab.get(name, defaults[name])
        for name in (
            "vllm_expected_attention_backend",
            "vllm_expected_moe_backend",
            "vllm_expected_speculative_method",
            "vllm_min_kv_cache_tokens",
            "vllm_min_max_concurrency",
            "vllm_gates_fatal",
        )
    }
    values["max_model_len"] = lab["vllm_recipe"]["defaults"]["max_model_len"]
    # __vllm_base_argv: the lab recipe's command, rendered as preflight.yml renders it.
    values["recipe_argv"] = FILTERS["render_recipe_command"](
        lab["vllm_recipe"], {"host": "127.0.0.1", "port": 8000}, argv=True
    )
    return {**values, **changes}


# A backend line as vLLM prints it, after a line the lab head's log has (the CPU build logs
# no backend, so a gate on one is unverified there, never missed).
RESOLVED = "Resolved architecture: LlamaForCausalLM"


def backend_line(message):
    return (RESOLVED, f"{RESOLVED}\n(EngineCore_DP0 pid=1) INFO 12-02 12:32:20 [x.py:1] {message}")


def test_the_lab_head_passes_the_lab_gates():
    # The baseline every case below changes one option of (so each miss is that option's).
    assert FILTERS["vllm_gates"](lab_head_boot(), gates()) == {
        "failures": [],
        "stop": [],
        "warnings": [],
        "unverified": [],
        "advice": [],
    }


@pytest.mark.parametrize(
    ("option", "value", "edits", "missed"),
    [
        pytest.param(
            "vllm_expected_attention_backend",
            "TORCH_SDPA",
            (backend_line("Using CPU_ATTN attention backend out of potential backends: []."),),
            "attention backend is CPU_ATTN, expected TORCH_SDPA (vllm_expected_attention_backend)",
            id="derived-attention-backend",
        ),
        pytest.param(
            "vllm_expected_moe_backend",
            "b12x",
            (
                backend_line(
                    "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: []."
                ),
            ),
            "MoE backend is FLASHINFER_CUTLASS, expected b12x (vllm_expected_moe_backend)",
            id="derived-moe-backend",
        ),
        pytest.param(
            "vllm_expected_speculative_method",
            "mtp",
            (
                (
                    "speculative_config=None",
                    "speculative_config=SpeculativeConfig(method='dspark',"
                    " model='deepseek-ai/DeepSeek-V4-Flash-DSpark', num_spec_tokens=3)",
                ),
            ),
            "speculative method is dspark, expected mtp (vllm_expected_speculative_method)",
            id="derived-speculative-method",
        ),
        pytest.param(
            "vllm_min_kv_cache_tokens",
            5000000,
            (),
            "KV cache holds 4194304 tokens, below 5000000 (vllm_min_kv_cache_tokens; 0 means"
            " max_model_len)",
            id="min-kv-cache-tokens",
        ),
        pytest.param(
            "vllm_min_max_concurrency",
            20000.0,
            (),
            "maximum concurrency is 16384.0x, below 20000.0x (vllm_min_max_concurrency)",
            id="min-max-concurrency",
        ),
    ],
)
def test_each_gate_option_is_what_the_boot_is_held_to(option, value, edits, missed):
    result = FILTERS["vllm_gates"](lab_head_boot(*edits), gates(**{option: value}))
    assert result["failures"] == [missed]
    # vllm_gates_fatal is not set by the lab: the default (true) stops the play.
    assert result["stop"] == [missed]
    assert result["warnings"] == []


def test_an_expected_backend_the_boot_logs_passes():
    # The lab's "" is not checked; a value is compared with what the boot logged.
    mla = FILTERS["parse_vllm_log"](load_capture("vllm", MLA_LOG))
    assert mla["attention_backend"] == "FLASHINFER_MLA"
    checks = gates(vllm_min_kv_cache_tokens=0, vllm_min_max_concurrency=0.0, max_model_len=0)
    passed = FILTERS["vllm_gates"](
        mla, {**checks, "vllm_expected_attention_backend": "FLASHINFER_MLA"}
    )
    assert passed["failures"] == []
    missed = FILTERS["vllm_gates"](
        mla, {**checks, "vllm_expected_attention_backend": "FLASHINFER_MLA_SPARSE_DSV4"}
    )
    assert missed["failures"] == [
        "attention backend is FLASHINFER_MLA, expected FLASHINFER_MLA_SPARSE_DSV4"
        " (vllm_expected_attention_backend)"
    ]


def test_vllm_gates_fatal_false_warns_instead_of_stopping():
    boot = lab_head_boot()
    held = gates(vllm_min_max_concurrency=20000.0)
    missed = "maximum concurrency is 16384.0x, below 20000.0x (vllm_min_max_concurrency)"
    assert FILTERS["vllm_gates"](boot, held)["stop"] == [missed]
    result = FILTERS["vllm_gates"](boot, {**held, "vllm_gates_fatal": False})
    assert result["stop"] == []
    assert result["warnings"] == ["Boot log gate: " + missed]
