# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A sweep: the variants to deploy, their reports compared column by column, the recipe kept.

Private to gb10.serving, like every ``_bench_*`` module (see ``_bench_common``).
"""

from __future__ import annotations

import itertools
import json
from typing import List, Optional

from ansible_collections.gb10.serving.plugins.module_utils._bench_common import (
    LAB_NOTE,
    SCHEMA_VERSION,
    BenchReportError,
    cell,
    repeated,
    table,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_inputs import (
    RECIPE_TOP_LEVEL_KEYS,
    check_bench_inputs,
    json_fields,
    json_object,
)


def _ratio(score) -> Optional[float]:
    if not isinstance(score, str) or "/" not in score:
        return None
    passed, _slash, total = score.partition("/")
    try:
        return int(passed) / int(total) if int(total) else None
    except ValueError:
        return None


def compare_variants(variants, generated_at=None) -> dict:
    """Compare sweep variants column by column; higher is better in every column.

    ``variants``: a list of ``{'name', 'overrides', 'boot': {'kv_cache_tokens',
    'max_concurrency'}, 'report': build_report's result}``. Columns: KV tokens, maximum
    concurrency (from the boot log), single-stream, conc-N for every concurrency above 1
    that any variant measured, deep single, tool-calls (compared as passed/total).
    ``best`` names, per column, every variant that reaches the best value (ties are all
    named; an empty list when no variant has a value).
    """
    if not isinstance(variants, list) or not variants:
        raise BenchReportError("variants must be a non-empty list")
    names = []
    for index, variant in enumerate(variants):
        if not isinstance(variant, dict) or not isinstance(variant.get("name"), str):
            raise BenchReportError(f"variants[{index}] needs a 'name' (a string)")
        failed = variant.get("failed")
        if failed is not None and not isinstance(failed, str):
            raise BenchReportError(
                f"variant {variant['name']!r}: failed must be the cause, a string"
            )
        if failed is None and (
            not isinstance(variant.get("report"), dict) or "runs" not in variant["report"]
        ):
            raise BenchReportError(
                f"variant {variant['name']!r} has no bench report (build_report's result) "
                "and no 'failed' cause"
            )
        names.append(variant["name"])
    twice = repeated(names)
    if twice:
        raise BenchReportError(f"variant names must differ: {', '.join(twice)} repeats")
    measured = [variant for variant in variants if variant.get("failed") is None]
    concurrencies = sorted(
        {run["concurrency"] for variant in measured for run in variant["report"]["runs"]} - {1}
    )
    columns = [
        {"key": "kv_cache_tokens", "title": "KV tokens"},
        {"key": "max_concurrency", "title": "max concurrency"},
        {"key": "single_stream", "title": "single-stream"},
    ]
    columns.extend({"key": f"conc_{c}", "title": f"conc-{c}"} for c in concurrencies)
    columns.append({"key": "deep_single", "title": "deep single"})
    columns.append({"key": "tool_calls", "title": "tool-calls"})

    rows = []
    for variant in variants:
        report = variant.get("report") or {"runs": []}
        boot = variant.get("boot") or {}
        by_conc = {run["concurrency"]: run for run in report["runs"]}
        values = {
            "kv_cache_tokens": boot.get("kv_cache_tokens"),
            "max_concurrency": boot.get("max_concurrency"),
            "single_stream": (by_conc.get(1) or {}).get("output_throughput"),
        }
        for c in concurrencies:
            values[f"conc_{c}"] = (by_conc.get(c) or {}).get("output_throughput")
        values["deep_single"] = (report.get("summary") or {}).get("deep_single")
        values["tool_calls"] = (report.get("summary") or {}).get("tool_calls")
        rows.append(
            {
                "name": variant["name"],
                "overrides": dict(variant.get("overrides") or {}),
                "values": values,
                "failed": variant.get("failed"),
            }
        )

    best = {}
    for column in columns:
        key = column["key"]
        scored = []
        for row in rows:
            value = row["values"][key]
            value = _ratio(value) if key == "tool_calls" else value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                scored.append((value, row["name"]))
        top = max((value for value, _name in scored), default=None)
        best[key] = [name for value, name in scored if value == top]
    lab = any((variant.get("report") or {}).get("lab") for variant in variants)
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at,
        "lab": lab,
        "note": LAB_NOTE if lab else None,
        "columns": columns,
        "variants": rows,
        "best": best,
    }


STARTING_RECIPE = "the starting recipe"


def choose_sweep_final(variants, best, keep, rank_by) -> dict:
    """The recipe a sweep leaves the cluster on: ``{'name', 'overrides'}``.

    ``variants``: expand_sweep's result (each with ``name`` and ``overrides``); ``best``:
    compare_variants' ``best``. With ``keep`` ``'best'``, the first variant ``best`` names
    for the column ``rank_by`` (ties: the first one swept); with ``'start'``, or when no
    variant has a value in that column, the starting recipe (no overrides).
    """
    if keep not in ("start", "best"):
        raise BenchReportError(f"keep must be start or best, got {keep!r}")
    if not isinstance(best, dict):
        raise BenchReportError(f"best must be the comparison's mapping, got {type(best).__name__}")
    winners = (best.get(rank_by) or []) if keep == "best" else []
    if not winners:
        return {"name": STARTING_RECIPE, "overrides": {}}
    for variant in variants if isinstance(variants, list) else []:
        if isinstance(variant, dict) and variant.get("name") == winners[0]:
            return {"name": winners[0], "overrides": dict(variant.get("overrides") or {})}
    raise BenchReportError(f"the best variant {winners[0]!r} is not one of the variants swept")


def render_sweep_markdown(comparison) -> str:
    """sweep.md: one row per variant, the best value of each column in bold."""
    title = "# Sweep"
    if comparison.get("generated_at"):
        title += f", {comparison['generated_at']}"
    lines = [
        title,
        "",
        "Higher is better in every column: KV tokens and maximum concurrency from the boot log, "
        "aggregate output tokens/s, deep single decode tokens/s, well-formed tool calls. The "
        "best value of each column is in bold.",
        "",
    ]
    columns = comparison["columns"]
    rows = []
    for variant in comparison["variants"]:
        row = [cell(variant["name"] + (" (failed)" if variant.get("failed") else ""))]
        for column in columns:
            value = variant["values"].get(column["key"])
            text = cell(value) if not isinstance(value, int) else f"{value:,}"
            if value is not None and variant["name"] in comparison["best"].get(column["key"], []):
                text = f"**{text}**"
            row.append(text)
        rows.append(row)
    lines.extend(
        table(
            ["variant"] + [column["title"] for column in columns],
            rows,
            ["---"] + ["---:"] * len(columns),
        )
    )
    lines.append("")
    if comparison.get("lab"):
        lines.extend([f"**Lab:** {LAB_NOTE}", ""])
    lines.extend(["## Best per column", ""])
    for column in columns:
        names = comparison["best"].get(column["key"]) or []
        lines.append(f"- {column['title']}: {', '.join(names) if names else 'no value'}")
    lines.extend(["", "## Variants", ""])
    for variant in comparison["variants"]:
        overrides = variant.get("overrides") or {}
        text = (
            ", ".join(f"`{key}: {json.dumps(value)}`" for key, value in overrides.items())
            or "the recipe as it is"
        )
        if variant.get("failed"):
            text += f". **Failed:** {variant['failed']}"
        lines.append(f"- {variant['name']}: {text}")
    return "\n".join(lines) + "\n"


def _value_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def expand_sweep(sweep, recipe, concurrencies=None) -> List[dict]:
    """``bench_sweep_variants`` as the variants to deploy, in order.

    A mapping is a grid: every combination of its value lists, the first key varying
    slowest. A list holds one variant per item: an overrides mapping, or ``{'name': ...,
    'overrides': {...}}``. Each variant comes back as ``{'name', 'changes', 'overrides'}``:
    ``changes`` as the user wrote them (for the report), ``overrides`` as
    ``vllm_recipe_overrides`` over ``recipe`` (the recipe the sweep starts from, merged),
    with a field inside a JSON value (``num_speculative_tokens``) written back into that
    value, keys in their order, so a variant equal to the start renders the same command.
    Raises BenchReportError with every problem (check_bench_inputs') when the sweep is bad.
    """
    if not isinstance(recipe, dict) or not isinstance(recipe.get("defaults"), dict):
        raise BenchReportError("the recipe must be a mapping with a 'defaults' mapping")
    defaults = recipe["defaults"]
    problems = check_bench_inputs(
        concurrencies if concurrencies is not None else [1],
        defaults.get("max_num_seqs"),
        sweep,
        defaults,
    )
    if problems:
        raise BenchReportError(" ".join(problems))
    if isinstance(sweep, dict):
        keys = list(sweep)
        items = [
            {"changes": {key: combination[index] for index, key in enumerate(keys)}}
            for combination in itertools.product(*(sweep[key] for key in keys))
        ]
    else:
        items = [
            {"name": item.get("name"), "changes": item["overrides"]}
            if "overrides" in item
            else {"changes": item}
            for item in sweep
        ]
    fields = json_fields(defaults)
    variants = []
    for item in items:
        changes = item["changes"]
        overrides = {}
        for key, value in changes.items():
            target = None if key in defaults or key in RECIPE_TOP_LEVEL_KEYS else fields[key][0]
            if target is None:
                overrides[key] = value
                continue
            data = json_object(overrides.get(target, defaults[target]))
            data[key] = value
            overrides[target] = json.dumps(data, separators=(",", ":"))
        name = item.get("name") or ", ".join(
            f"{key}={_value_text(value)}" for key, value in changes.items()
        )
        variants.append({"name": str(name), "changes": dict(changes), "overrides": overrides})
    twice = repeated(variant["name"] for variant in variants)
    if twice:
        raise BenchReportError(
            f"bench_sweep_variants names {', '.join(twice)} more than once: give each "
            "variant its own name."
        )
    return variants
