# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bench stage filters: parse_bench_serve, score_tool_calls, bench_input_problems, expand_sweep,
sweep_choice."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._bench_common import BenchReportError
from ansible_collections.gb10.serving.plugins.module_utils._bench_inputs import check_bench_inputs
from ansible_collections.gb10.serving.plugins.module_utils._bench_serve import parse_bench_serve
from ansible_collections.gb10.serving.plugins.module_utils._bench_sweep import (
    choose_sweep_final,
    expand_sweep,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_tool_calls import score_tool_calls
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain


def parse_bench_serve_filter(result):
    """vllm bench serve output (text, lines) or --save-result JSON (mapping) -> figures."""
    if isinstance(result, (list, tuple)) and all(isinstance(line, str) for line in result):
        result = "\n".join(result)
    try:
        return parse_bench_serve(plain(result))
    except BenchReportError as exc:
        raise AnsibleFilterError(f"parse_bench_serve: {exc}") from exc


def score_tool_calls_filter(responses, expected):
    """Chat-completion responses -> {passed, total, score: 'n/m', cases}."""
    try:
        return score_tool_calls(plain(responses), plain(expected))
    except BenchReportError as exc:
        raise AnsibleFilterError(f"score_tool_calls: {exc}") from exc


def bench_input_problems(concurrencies, max_num_seqs, sweep=None, recipe_defaults=None):
    """Every problem with bench_concurrency (and bench_sweep_variants); empty when none."""
    if recipe_defaults is not None and not isinstance(recipe_defaults, dict):
        raise AnsibleFilterError(
            "bench_input_problems: recipe_defaults must be the recipe's defaults mapping, "
            f"got {type(recipe_defaults).__name__}"
        )
    return check_bench_inputs(
        plain(concurrencies), plain(max_num_seqs), plain(sweep), plain(recipe_defaults)
    )


def expand_sweep_filter(sweep, recipe, concurrencies=None):
    """bench_sweep_variants -> [{name, changes, overrides}] over the starting recipe."""
    try:
        return expand_sweep(plain(sweep), plain(recipe), plain(concurrencies))
    except BenchReportError as exc:
        raise AnsibleFilterError(f"expand_sweep: {exc}") from exc


def sweep_choice_filter(variants, best, keep, rank_by):
    """expand_sweep's variants and the comparison's best -> {name, overrides} to leave on."""
    try:
        return choose_sweep_final(plain(variants), plain(best), plain(keep), plain(rank_by))
    except BenchReportError as exc:
        raise AnsibleFilterError(f"sweep_choice: {exc}") from exc


class FilterModule:
    """gb10.serving bench filters."""

    def filters(self):
        return {
            "parse_bench_serve": parse_bench_serve_filter,
            "score_tool_calls": score_tool_calls_filter,
            "bench_input_problems": bench_input_problems,
            "expand_sweep": expand_sweep_filter,
            "sweep_choice": sweep_choice_filter,
        }
