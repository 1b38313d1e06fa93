# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._bench_inputs: the bench inputs checked against the recipe.

The captures and the lab report the cases use are in bench_cases.py.
"""

from __future__ import annotations

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._bench_inputs import (
    check_bench_inputs,
    json_fields,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.bench_cases import (
    hybrid_v3_recipe,
)

# --- bad input -----------------------------------------------------------------------------


INPUT_CASES = [
    pytest.param([1, 4, 8, 16], 128, None, [], id="field-report-method"),
    pytest.param([1, 4, 8, 16], None, None, [], id="max-num-seqs-unknown"),
    pytest.param([], 128, None, ["bench_concurrency is empty: give at least one"], id="empty"),
    pytest.param("1,4", 128, None, ["bench_concurrency is str ('1,4'), not a list"], id="text"),
    pytest.param(
        [1, 0, -2, "4", 4.0, True],
        128,
        None,
        [
            "bench_concurrency[1] is 0: every concurrency must be a positive integer",
            "bench_concurrency[2] is -2:",
            "bench_concurrency[3] is '4':",
            "bench_concurrency[4] is 4.0:",
            "bench_concurrency[5] is True:",
        ],
        id="not-positive-integers",
    ),
    pytest.param([4, 4], 128, None, ["bench_concurrency lists 4 more than once"], id="twice"),
    pytest.param(
        [1, 16, 256],
        128,
        None,
        ["bench_concurrency 256 is above the recipe's max_num_seqs (128): the engine would queue"],
        id="above-max-num-seqs",
    ),
    pytest.param(
        [1], "lots", None, ["the recipe's max_num_seqs is 'lots'"], id="max-num-seqs-text"
    ),
    pytest.param(
        [1, 4],
        128,
        {"max_model_len": [393216, 500000], "speculative_config": ['{"num_speculative_tokens":5}']},
        [],
        id="sweep-grid",
    ),
    pytest.param(
        [1, 4],
        128,
        [
            {"name": "spec5", "overrides": {"speculative_config": "{}"}},
            {"container": "x:1"},
            {"env": {"A": "1"}},
        ],
        [],
        id="sweep-list",
    ),
    pytest.param(
        [1, 4],
        128,
        {"num_speculative_tokens": [3, 5]},
        [],
        id="sweep-field-inside-json-default",
    ),
    pytest.param(
        [1, 4],
        128,
        [{"num_speculative_token": 5}],
        [
            "bench_sweep_variants[0] changes 'num_speculative_token', which the recipe does "
            "not have (did you mean 'num_speculative_tokens'?)"
        ],
        id="sweep-field-typo",
    ),
    pytest.param(
        [1, 4],
        128,
        [{"max_model_length": 500000}],
        [
            "bench_sweep_variants[0] changes 'max_model_length', which the recipe does not have "
            "(did you mean 'max_model_len'?)"
        ],
        id="sweep-key-typo",
    ),
    pytest.param([1], 128, {}, ["bench_sweep_variants is {}: give a mapping"], id="sweep-empty"),
    pytest.param(
        [1],
        128,
        ["max_model_len"],
        ["bench_sweep_variants[0] is 'max_model_len'"],
        id="sweep-item-text",
    ),
    pytest.param(
        [1],
        128,
        {"max_model_len": 500000},
        ["bench_sweep_variants.max_model_len is 500000"],
        id="sweep-grid-scalar",
    ),
    pytest.param(
        [1, 16],
        128,
        [{"name": "small", "overrides": {"max_num_seqs": 8}}],
        ["bench_sweep_variants[0] sets max_num_seqs 8, below bench_concurrency 16"],
        id="sweep-max-num-seqs-below",
    ),
]


@pytest.mark.parametrize(("concurrencies", "max_num_seqs", "sweep", "expected"), INPUT_CASES)
def test_bench_inputs(concurrencies, max_num_seqs, sweep, expected):
    problems = check_bench_inputs(
        concurrencies, max_num_seqs, sweep, hybrid_v3_recipe()["defaults"]
    )
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start), problem
    for problem in problems:
        assert (
            "bench_concurrency" in problem
            or "bench_sweep_variants" in problem
            or "max_num_seqs" in problem
        )


def test_sweep_keys_unchecked_without_the_recipe():
    assert check_bench_inputs([1], 128, {"anything": [1, 2]}) == []


def test_a_field_inside_two_json_values_is_ambiguous():
    defaults = {"a_config": '{"depth":1}', "b_config": '{"depth":2}', "max_num_seqs": 8}
    assert json_fields(defaults) == {"depth": ["a_config", "b_config"]}
    (problem,) = check_bench_inputs([1], 8, {"depth": [1, 2]}, defaults)
    assert problem.startswith(
        "bench_sweep_variants changes 'depth', a field inside more than one of the recipe's "
        "JSON values (a_config, b_config)"
    )
