# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""bench.md: the field report's table with this run's row and the reference row, then details.

Private to gb10.serving, like every ``_bench_*`` module (see ``_bench_common``).
"""

from __future__ import annotations

from typing import List

from ansible_collections.gb10.serving.plugins.module_utils._bench_common import (
    LAB_NOTE,
    cell,
    table,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_report import COLUMNS


def _throughput_cell(value) -> str:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return f"~{value[0]}\u2013{value[1]}"
    return cell(value)


def _tokens(count) -> str:
    """A context length as the field report writes it (108K); text is kept as it is."""
    if isinstance(count, int) and count >= 1000:
        return f"{round(count / 1000)}K"
    return str(count)


def _summary_row(name, values, deep_context) -> List[str]:
    row = [cell(name)]
    for key, _title in COLUMNS:
        value = values.get(key)
        if key == "deep_single":
            text = _throughput_cell(value)
            if value is not None and deep_context:
                text += f" @{_tokens(deep_context)}"
            row.append(text)
        elif key == "tool_calls":
            row.append(cell(value))
        else:
            row.append(_throughput_cell(value))
    return row


def _spec_line(spec) -> str:
    if not spec:
        return "Speculative decoding: none reported by the engine log."
    parts = []
    if spec.get("method") or spec.get("num_tokens"):
        parts.append(
            f"{spec.get('method') or 'method not logged'}, "
            f"{spec.get('num_tokens') if spec.get('num_tokens') is not None else '?'} tokens"
        )
    if spec.get("mean_acceptance_length") is not None:
        parts.append(f"mean acceptance length {spec['mean_acceptance_length']:.2f}")
    per_position = spec.get("per_position_acceptance")
    if per_position:
        parts.append("per position " + ", ".join(f"{rate:.2f}" for rate in per_position))
    if spec.get("avg_draft_acceptance_rate") is not None:
        parts.append(f"draft acceptance {spec['avg_draft_acceptance_rate']:.1f}%")
    if len(parts) < 2:
        parts.append("no acceptance metrics logged during the run")
    return "Speculative decoding: " + "; ".join(parts) + "."


def _busy_mean(engine) -> str:
    mean = engine.get("mean_generation_tokens_per_s")
    if mean is None:
        return ""
    return f", mean {mean:.1f} tokens/s over the {engine['busy_samples']} busy one(s)"


def render_markdown(report) -> str:
    """bench.md: the field report's table with our row and its hybrid-v3 row, then details."""
    lines = [f"# Benchmark report, {report['generated_at']}", ""]
    summary = report["summary"]
    deep = report.get("deep") or {}
    reference = report.get("reference")
    lines.append(
        "Aggregate output tokens/s at each concurrency (all requests together), warm; "
        "deep single is one long request's decode speed; tool-calls counts well-formed calls."
    )
    lines.append("")
    rows = [_summary_row("this run", summary, deep.get("prompt_tokens"))]
    if reference:
        rows.append(_summary_row(reference.get("name"), reference, reference.get("deep_context")))
    header = [""] + [title for _key, title in COLUMNS]
    lines.extend(table(header, rows, ["---"] + ["---:"] * len(COLUMNS)))
    lines.append("")
    if report.get("lab"):
        lines.extend([f"**Lab:** {LAB_NOTE}", ""])
    if reference and reference.get("setup"):
        lines.extend([f"Reference: {reference['setup']} ({reference.get('source')}).", ""])
    warmup = report.get("warmup") or {}
    if warmup.get("requests"):
        seconds = warmup.get("seconds")
        took = f" in {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
        lines.append(
            f"Warm-up: {warmup['requests']} requests{took} before anything was measured "
            "(they are not in the figures)."
        )
    else:
        lines.append("Warm-up: none.")
    lines.extend(["", _spec_line(report.get("spec_decode"))])
    engine = report.get("engine_throughput")
    if engine and engine.get("peak_generation_tokens_per_s") is not None:
        lines.extend(
            [
                "",
                "Engine log: peak 'Avg generation throughput' "
                f"{engine['peak_generation_tokens_per_s']:.1f} tokens/s over "
                f"{engine['samples']} log line(s) during the run" + _busy_mean(engine) + ".",
            ]
        )
    if report.get("problems"):
        lines.extend(["", "## Read this first", ""])
        lines.extend(f"- {problem}" for problem in report["problems"])
    lines.extend(["", "## Per concurrency", ""])
    spec_column = any(run.get("spec_acceptance_length") is not None for run in report["runs"])
    header = [
        "concurrency",
        "requests ok/failed",
        "output tok/s",
        "total tok/s",
        "median TTFT ms",
        "p99 TTFT ms",
        "median TPOT ms",
        "p99 TPOT ms",
        "median ITL ms",
    ]
    if spec_column:
        header.append("acceptance length")
    rows = []
    for run in report["runs"]:
        row = [
            str(run["concurrency"]),
            f"{cell(run['successful_requests'])}/{cell(run['failed_requests'])}",
            cell(run["output_throughput"]),
            cell(run["total_token_throughput"]),
            cell(run["median_ttft_ms"]),
            cell(run["p99_ttft_ms"]),
            cell(run["median_tpot_ms"]),
            cell(run["p99_tpot_ms"]),
            cell(run["median_itl_ms"]),
        ]
        if spec_column:
            row.append(cell(run.get("spec_acceptance_length")))
        rows.append(row)
    if rows:
        lines.extend(table(header, rows, ["---:"] * len(header)))
    else:
        lines.append("No benchmark runs.")
    if report.get("deep"):
        lines.extend(["", "## Deep single request", ""])
        lines.extend(
            table(
                ["prompt tokens", "output tokens", "TTFT ms", "decode tok/s", "output tok/s"],
                [
                    [
                        cell(deep.get("prompt_tokens")),
                        cell(deep.get("output_tokens")),
                        cell(deep.get("ttft_ms")),
                        cell(deep.get("decode_tokens_per_s")),
                        cell(deep.get("output_tokens_per_s")),
                    ]
                ],
                ["---:"] * 5,
            )
        )
    tool_calls = report.get("tool_calls")
    if tool_calls:
        lines.extend(["", f"## Tool calls: {tool_calls['score']}", ""])
        lines.extend(
            table(
                ["expected", "called", "passed", "reason"],
                [
                    [
                        cell(case.get("expected")),
                        cell(case.get("called")),
                        "yes" if case.get("passed") else "no",
                        cell(case.get("reason") or ""),
                    ]
                    for case in tool_calls.get("cases", [])
                ],
            )
        )
    lines.extend(["", "## Deployment", ""])
    deployment = report.get("deployment") or {}
    if deployment:
        lines.extend(table(["", "value"], [[cell(k), cell(v)] for k, v in deployment.items()]))
    else:
        lines.append("No fingerprint given.")
    return "\n".join(lines) + "\n"
