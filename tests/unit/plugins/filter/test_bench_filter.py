# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters gb10.serving.parse_bench_serve, score_tool_calls and bench_input_problems."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.bench import FilterModule
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    load_capture,
    load_raw,
)

FILTERS = FilterModule().filters()
C4 = "vllm_bench_serve_c4_cpu_tiny_v0.32"
FAILED = "vllm_bench_serve_failed_cpu_tiny_v0.32"


def tool_responses():
    cases = json.loads(load_raw("bench", "chat_completions_tool_calls_cpu_tiny_hermes_v0.32.json"))
    return {case["case"]: case["response"] for case in cases}


def test_filters_are_registered():
    assert sorted(FILTERS) == [
        "bench_input_problems",
        "expand_sweep",
        "parse_bench_serve",
        "score_tool_calls",
        "sweep_choice",
    ]


def test_parse_bench_serve_from_stdout_lines_and_saved_json():
    output = load_capture("bench", C4 + ".txt")
    printed = FILTERS["parse_bench_serve"](output)
    assert printed["output_throughput"] == 780.91  # "Output token throughput (tok/s): 780.91"
    assert printed["max_concurrency"] == 4
    assert FILTERS["parse_bench_serve"](output.splitlines()) == printed
    saved = json.loads(load_raw("bench", C4 + ".json"))
    assert FILTERS["parse_bench_serve"](saved)["output_throughput"] == 780.9115493883487
    # The file's text, as slurp | b64decode gives it.
    assert FILTERS["parse_bench_serve"](load_raw("bench", C4 + ".json"))["successful_requests"] == 8


def test_parse_bench_serve_counts_failures():
    result = FILTERS["parse_bench_serve"](json.loads(load_raw("bench", FAILED + ".json")))
    assert (result["successful_requests"], result["failed_requests"], result["error_count"]) == (
        4,
        2,
        2,
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            "Traceback (most recent call last):", "no 'Serving Benchmark Result' block", id="crash"
        ),
        pytest.param({"stdout": ""}, "no 'completed' key", id="task-result"),
        pytest.param(None, "got NoneType", id="none"),
    ],
)
def test_parse_bench_serve_errors_name_the_filter(value, message):
    with pytest.raises(AnsibleFilterError, match=f"parse_bench_serve: .*{message}"):
        FILTERS["parse_bench_serve"](value)


def test_score_tool_calls_over_the_lab_captures():
    responses = tool_responses()
    result = FILTERS["score_tool_calls"](
        [responses["named-get_weather"], responses["named-read_file"], responses["too-long"]],
        ["get_weather", "read_file", "get_weather"],
    )
    assert result["score"] == "0/3"
    assert [case["called"] for case in result["cases"]] == ["get_weather", "read_file", None]
    assert result["cases"][2]["reason"].startswith("the request failed: This model's maximum")


def test_score_tool_calls_length_mismatch_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="score_tool_calls: 1 responses for 2 expected"):
        FILTERS["score_tool_calls"]([{}], ["a", "b"])


def test_bench_input_problems():
    defaults = {"max_model_len": 512, "max_num_seqs": 16}
    assert FILTERS["bench_input_problems"]([1, 4, 8, 16], 16) == []
    assert (
        FILTERS["bench_input_problems"](
            [1, 4], 16, sweep={"max_model_len": [256, 512]}, recipe_defaults=defaults
        )
        == []
    )
    problems = FILTERS["bench_input_problems"](
        [32], 16, sweep=[{"max_len": 1}], recipe_defaults=defaults
    )
    assert problems[0].startswith("bench_concurrency 32 is above the recipe's max_num_seqs (16)")
    assert problems[1].startswith(
        "bench_sweep_variants[0] changes 'max_len', which the recipe does not have"
    )
    with pytest.raises(
        AnsibleFilterError, match="recipe_defaults must be the recipe's defaults mapping"
    ):
        FILTERS["bench_input_problems"]([1], 16, recipe_defaults=["max_model_len"])


def test_expand_sweep_filter_fails_naming_the_variable():
    recipe = {"defaults": {"max_num_seqs": 16, "max_model_len": 512}}
    variants = FILTERS["expand_sweep"]({"max_model_len": [512, 384]}, recipe, [1, 4])
    assert [variant["overrides"] for variant in variants] == [
        {"max_model_len": 512},
        {"max_model_len": 384},
    ]
    with pytest.raises(
        AnsibleFilterError, match="expand_sweep: bench_sweep_variants.max_model_len"
    ):
        FILTERS["expand_sweep"]({"max_model_len": 384}, recipe)
