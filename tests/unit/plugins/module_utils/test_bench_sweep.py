# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._bench_sweep: the variants, their comparison and the recipe kept.

The captures and the lab report the cases use are in bench_cases.py.
"""

from __future__ import annotations

import re

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._bench_common import (
    LAB_NOTE,
    BenchReportError,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_sweep import (
    STARTING_RECIPE,
    choose_sweep_final,
    compare_variants,
    expand_sweep,
    render_sweep_markdown,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.bench_cases import (
    STAMP,
    hybrid_v3_recipe,
    sweep_variants,
)


def test_compare_variants_names_the_best_per_column():
    comparison = compare_variants(sweep_variants(), generated_at=STAMP)
    assert comparison["schema_version"] == 1
    assert comparison["lab"] is True
    assert [column["title"] for column in comparison["columns"]] == [
        "KV tokens",
        "max concurrency",
        "single-stream",
        "conc-2",
        "conc-4",
        "deep single",
        "tool-calls",
    ]
    values = {row["name"]: row["values"] for row in comparison["variants"]}
    assert values["one-node"]["conc_2"] is None
    assert values["two-nodes"]["conc_2"] == 221.75018828710867
    assert values["two-nodes"]["single_stream"] == 366.07  # the printed figure
    assert comparison["best"] == {
        "kv_cache_tokens": ["two-nodes"],
        "max_concurrency": ["two-nodes"],
        "single_stream": ["two-nodes"],  # 366.07 printed > 366.0699... saved
        "conc_2": ["two-nodes"],
        "conc_4": ["one-node"],
        "deep_single": ["one-node"],
        "tool_calls": ["one-node", "two-nodes"],  # a tie: 0/3 each
    }


@pytest.mark.parametrize(
    ("keep", "rank_by", "name"),
    [
        pytest.param("best", "kv_cache_tokens", "two-nodes", id="best-kv"),
        pytest.param("best", "deep_single", "one-node", id="best-deep"),
        pytest.param("best", "tool_calls", "one-node", id="best-tie-first-swept"),
        pytest.param("best", "conc_16", STARTING_RECIPE, id="best-column-not-measured"),
        pytest.param("start", "kv_cache_tokens", STARTING_RECIPE, id="start"),
    ],
)
def test_the_sweep_leaves_the_cluster_on_the_chosen_variant(keep, rank_by, name):
    variants = sweep_variants()
    best = compare_variants(variants, generated_at=STAMP)["best"]
    chosen = choose_sweep_final(variants, best, keep, rank_by)
    overrides = {v["name"]: v["overrides"] for v in variants}.get(name, {})
    assert chosen == {"name": name, "overrides": overrides}


@pytest.mark.parametrize(
    ("variants", "best", "keep", "message"),
    [
        pytest.param([], {}, "worst", "keep must be start or best, got 'worst'", id="keep"),
        pytest.param([], [], "best", "best must be the comparison's mapping", id="best"),
        pytest.param(
            [{"name": "a", "overrides": {}}],
            {"single_stream": ["b"]},
            "best",
            "the best variant 'b' is not one of the variants swept",
            id="unknown-winner",
        ),
    ],
)
def test_the_sweep_choice_bad_input(variants, best, keep, message):
    with pytest.raises(BenchReportError, match=re.escape(message)):
        choose_sweep_final(variants, best, keep, "single_stream")


def test_sweep_markdown_marks_the_best():
    markdown = render_sweep_markdown(compare_variants(sweep_variants(), generated_at=STAMP))
    lines = markdown.splitlines()
    assert lines[0] == f"# Sweep, {STAMP}"
    assert (
        "| variant | KV tokens | max concurrency | single-stream | conc-2 | conc-4 | deep single "
        "| tool-calls |"
    ) in lines
    assert (
        "| one-node | 2,097,152 | 4096.0 | 366.1 | n/a | **780.9** | **436.6** | **0/3** |" in lines
    )
    assert (
        "| two-nodes | **4,194,304** | **8192.0** | **366.1** | **221.8** | n/a | n/a | **0/3** |"
        in lines
    )
    assert "- conc-4: one-node" in lines
    assert "- tool-calls: one-node, two-nodes" in lines
    assert "- one-node: `tensor_parallel: 1`" in lines
    assert f"**Lab:** {LAB_NOTE}" in lines


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        pytest.param([], "non-empty list", id="empty"),
        pytest.param([{"report": {}}], r"variants\[0\] needs a 'name'", id="no-name"),
        pytest.param([{"name": "a", "report": {}}], "has no bench report", id="no-report"),
        pytest.param(
            [{"name": "a", "report": {"runs": []}}, {"name": "a", "report": {"runs": []}}],
            "a repeats",
            id="same-name",
        ),
    ],
)
def test_compare_variants_bad_input(variants, message):
    with pytest.raises(BenchReportError, match=message):
        compare_variants(variants)


def test_expand_sweep_grid_writes_json_fields_back_in_place():
    recipe = hybrid_v3_recipe()
    spec = recipe["defaults"]["speculative_config"]
    variants = expand_sweep(
        {"num_speculative_tokens": [3, 5], "max_model_len": [393216, 500000]}, recipe, [1, 4]
    )
    assert [variant["name"] for variant in variants] == [
        "num_speculative_tokens=3, max_model_len=393216",
        "num_speculative_tokens=3, max_model_len=500000",
        "num_speculative_tokens=5, max_model_len=393216",
        "num_speculative_tokens=5, max_model_len=500000",
    ]
    # The starting depth renders the recipe's own text: the same command, no restart.
    assert variants[0]["overrides"] == {"speculative_config": spec, "max_model_len": 393216}
    assert variants[2]["overrides"]["speculative_config"] == spec.replace(
        '"num_speculative_tokens":3', '"num_speculative_tokens":5'
    )
    assert variants[3]["changes"] == {"num_speculative_tokens": 5, "max_model_len": 500000}


def test_expand_sweep_list_keeps_names_and_whole_values():
    recipe = hybrid_v3_recipe()
    variants = expand_sweep(
        [
            {"name": "deep-spec", "overrides": {"num_speculative_tokens": 5}},
            {"max_num_seqs": 64, "env": {"VLLM_X": "1"}},
        ],
        recipe,
    )
    assert variants[0]["name"] == "deep-spec"
    assert '"num_speculative_tokens":5' in variants[0]["overrides"]["speculative_config"]
    assert variants[1] == {
        "name": 'max_num_seqs=64, env={"VLLM_X": "1"}',
        "changes": {"max_num_seqs": 64, "env": {"VLLM_X": "1"}},
        "overrides": {"max_num_seqs": 64, "env": {"VLLM_X": "1"}},
    }


@pytest.mark.parametrize(
    ("sweep", "concurrencies", "message"),
    [
        pytest.param({"max_model_length": [1]}, None, "did you mean 'max_model_len'", id="typo"),
        pytest.param(
            [{"max_num_seqs": 4}],
            [1, 8],
            "sets max_num_seqs 4, below bench_concurrency 8",
            id="seqs-below-concurrency",
        ),
        pytest.param(
            [{"name": "a", "overrides": {"max_num_seqs": 4}}, {"name": "b", "overrides": {}}],
            None,
            r"bench_sweep_variants\[1\] is \{\}",
            id="empty-overrides",
        ),
        pytest.param(
            [
                {"name": "a", "overrides": {"max_num_seqs": 4}},
                {"name": "a", "overrides": {"max_num_seqs": 8}},
            ],
            None,
            "names a more than once",
            id="same-name",
        ),
        pytest.param({"max_num_seqs": [4]}, None, "", id="no-recipe-defaults"),
    ],
)
def test_expand_sweep_bad_input(sweep, concurrencies, message):
    recipe = hybrid_v3_recipe()
    if message == "":
        recipe, message = {"defaults": "none"}, "must be a mapping with a 'defaults' mapping"
    with pytest.raises(BenchReportError, match=message):
        expand_sweep(sweep, recipe, concurrencies)


def test_a_failed_variant_is_compared_and_named_but_never_best():
    variants = [
        *sweep_variants(),
        {
            "name": "too-long",
            "overrides": {"max_model_len": 999999},
            "failed": "engine on node0 exited 1: ValueError: KV cache is too small",
        },
    ]
    comparison = compare_variants(variants, generated_at=STAMP)
    row = comparison["variants"][-1]
    assert row["failed"].startswith("engine on node0 exited 1")
    assert set(row["values"].values()) == {None}
    assert all("too-long" not in names for names in comparison["best"].values())
    markdown = render_sweep_markdown(comparison)
    assert (
        "- too-long: `max_model_len: 999999`. **Failed:** engine on node0 exited 1: "
        "ValueError: KV cache is too small"
    ) in markdown.splitlines()


def test_a_failed_variant_row_says_so():
    variants = [*sweep_variants(), {"name": "broken", "failed": "unrecognized arguments"}]
    lines = render_sweep_markdown(compare_variants(variants, generated_at=STAMP)).splitlines()
    assert "| broken (failed) | n/a | n/a | n/a | n/a | n/a | n/a | n/a |" in lines
