# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The benchmark report (bench.json): the runs, the deep request, the tool calls and the
deployment as one model, with what a reader must know before trusting it.

Private to gb10.serving, like every ``_bench_*`` module (see ``_bench_common``).
"""

from __future__ import annotations

from typing import List, Optional

from ansible_collections.gb10.serving.plugins.module_utils._bench_common import (
    LAB_NOTE,
    SCHEMA_VERSION,
    BenchReportError,
    repeated,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_serve import RESULT_KEYS

# The field report's table, column by column: (key in the report, title as the report
# prints it).
COLUMNS = (
    ("single_stream", "single-stream"),
    ("conc_4", "conc-4"),
    ("conc_8", "conc-8"),
    ("conc_16", "conc-16"),
    ("deep_single", "deep single"),
    ("tool_calls", "tool-calls"),
)
# The concurrency each throughput column is measured at.
COLUMN_CONCURRENCY = {"single_stream": 1, "conc_4": 4, "conc_8": 8, "conc_16": 16}


def _run(run, index) -> dict:
    if not isinstance(run, dict):
        raise BenchReportError(f"runs[{index}] is {type(run).__name__}, not a mapping")
    concurrency = run.get("concurrency")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise BenchReportError(
            f"runs[{index}] has concurrency {concurrency!r}: every run needs the concurrency "
            "it was measured at, a positive integer"
        )
    unknown = sorted(set(run) - set(RESULT_KEYS) - {"concurrency"})
    if unknown:
        raise BenchReportError(
            f"runs[{index}] has keys a normalized result does not: {', '.join(unknown)} "
            "(parse each run with parse_bench_serve first)"
        )
    out = {"concurrency": concurrency}
    for key in RESULT_KEYS:
        value = run.get(key)
        if key == "spec_per_position_acceptance" and value is not None:
            value = list(value)
        out[key] = value
    return out


def _deep(deep) -> Optional[dict]:
    """The deep single request's figures (see build_report)."""
    if deep is None:
        return None
    if not isinstance(deep, dict):
        raise BenchReportError(f"deep is {type(deep).__name__}, not a mapping")
    if "successful_requests" in deep:
        ok = deep.get("successful_requests") or 0
        tpot = deep.get("median_tpot_ms")
        return {
            "prompt_tokens": (
                int(round(deep["total_input_tokens"] / ok))
                if ok and deep.get("total_input_tokens") is not None
                else None
            ),
            "output_tokens": (
                int(round(deep["total_generated_tokens"] / ok))
                if ok and deep.get("total_generated_tokens") is not None
                else None
            ),
            "ttft_ms": deep.get("median_ttft_ms") if ok else None,
            "decode_tokens_per_s": 1000.0 / tpot if ok and tpot else None,
            "output_tokens_per_s": deep.get("output_throughput") if ok else None,
            "failed_requests": deep.get("failed_requests"),
        }
    known = ("prompt_tokens", "output_tokens", "ttft_ms", "decode_tokens_per_s")
    unknown = sorted(set(deep) - set(known) - {"output_tokens_per_s", "failed_requests"})
    if unknown or "decode_tokens_per_s" not in deep:
        raise BenchReportError(
            "deep must be a normalized bench result (parse_bench_serve) or a mapping of "
            f"{', '.join(known)} (decode_tokens_per_s required), optionally "
            f"output_tokens_per_s and failed_requests; got keys {', '.join(sorted(deep))}"
        )
    out = dict.fromkeys(known + ("output_tokens_per_s", "failed_requests"))
    out.update(deep)
    return out


_SUMMARY_KEYS = (
    "lines",
    "busy_lines",
    "peak_generation_tokens_per_s",
    "peak_prompt_tokens_per_s",
    "mean_generation_tokens_per_s",
    "peak_running",
)


def _engine_throughput(throughput) -> Optional[dict]:
    """The engine's own throughput log lines during the run.

    Either the boot-log parser's ``throughput_summary`` (a mapping with ``lines``), or
    parsed lines: one mapping (``generation_tokens_per_s``, ``prompt_tokens_per_s``...) or a
    list of them.
    """
    if throughput is None:
        return None
    if isinstance(throughput, dict) and "lines" in throughput:
        if not all(key in throughput for key in _SUMMARY_KEYS):
            raise BenchReportError(
                "throughput, as the log parser's throughput_summary, needs the keys "
                f"{', '.join(_SUMMARY_KEYS)}; got {', '.join(sorted(throughput))}"
            )
        return {
            "samples": throughput["lines"],
            "busy_samples": throughput["busy_lines"],
            "peak_generation_tokens_per_s": throughput["peak_generation_tokens_per_s"],
            "peak_prompt_tokens_per_s": throughput["peak_prompt_tokens_per_s"],
            "mean_generation_tokens_per_s": throughput["mean_generation_tokens_per_s"],
            "peak_running": throughput["peak_running"],
        }
    samples = [throughput] if isinstance(throughput, dict) else throughput
    if not isinstance(samples, list) or not all(isinstance(item, dict) for item in samples):
        raise BenchReportError(
            "throughput must be the log parser's throughput_summary, one parsed engine "
            "throughput line (a mapping with generation_tokens_per_s, prompt_tokens_per_s) or "
            "a list of them"
        )
    if not samples:
        return None

    def peak(key):
        values = [item.get(key) for item in samples if item.get(key) is not None]
        return max(values) if values else None

    return {
        "samples": len(samples),
        "peak_generation_tokens_per_s": peak("generation_tokens_per_s"),
        "peak_prompt_tokens_per_s": peak("prompt_tokens_per_s"),
        "last": dict(samples[-1]),
    }


def _summary(runs, deep, tool_calls) -> dict:
    by_concurrency = {run["concurrency"]: run for run in runs}
    summary = {}
    for key, concurrency in COLUMN_CONCURRENCY.items():
        run = by_concurrency.get(concurrency)
        summary[key] = run["output_throughput"] if run else None
    summary["deep_single"] = deep["decode_tokens_per_s"] if deep else None
    summary["tool_calls"] = tool_calls["score"] if tool_calls else None
    return summary


def _problems(runs, deep, warmup, tool_calls) -> List[str]:
    """What a reader must know before trusting the figures."""
    problems = []
    if not warmup or not warmup.get("requests"):
        problems.append(
            "No warm-up before measuring: the first minutes after a boot run about 30% slow "
            "(cold kernels), so these figures under-report."
        )
    for run in runs:
        failed = run.get("failed_requests") or 0
        if failed:
            total = failed + (run.get("successful_requests") or 0)
            problems.append(
                f"Concurrency {run['concurrency']}: {failed} of {total} requests failed."
            )
    if deep and deep.get("failed_requests"):
        problems.append("The deep single request failed.")
    if tool_calls and tool_calls["passed"] < tool_calls["total"]:
        problems.append(f"Tool calls: only {tool_calls['score']} were well-formed.")
    missing = [f"{c}" for c in sorted(COLUMN_CONCURRENCY.values()) if c not in _concs(runs)]
    if missing:
        problems.append(
            f"Not measured at concurrency {', '.join(missing)}: those columns are empty."
        )
    return problems


def _concs(runs):
    return {run["concurrency"] for run in runs}


def build_report(
    *,
    runs,
    deep,
    tool_calls,
    warmup,
    spec_decode,
    throughput,
    deployment,
    reference,
    lab,
    generated_at,
) -> dict:
    """The benchmark report (bench.json) from its parts; pure: nothing is read or written.

    ``runs``: normalized results (parse_bench_serve), each with the ``concurrency`` it was
    measured at (distinct). ``deep``: the deep single request, either its normalized result
    or a mapping ``{prompt_tokens, output_tokens, ttft_ms, decode_tokens_per_s[,
    output_tokens_per_s, failed_requests]}``; None when not measured. Its figure in the
    table is the decode speed (1000 / median TPOT, tokens/s after the first token): at 108K
    tokens the prefill would otherwise dominate, and the field report's 43 t/s at 108K sits
    next to its single-stream figure, so it too reads as a decode speed.
    ``tool_calls``: score_tool_calls' result or None. ``warmup``: ``{'requests': n,
    'seconds': s}``. ``spec_decode``: the ``speculative`` mapping of the engine-log facts
    (method, num_tokens, mean_acceptance_length, per_position_acceptance,
    avg_draft_acceptance_rate) or None. ``throughput``: the engine's own throughput line
    (``last_throughput`` of the log facts) or a list of them sampled during the run.
    ``deployment``: the fingerprint (recipe hash, image, model, revision, node count...).
    ``reference``: FIELD_REPORT_REFERENCE (or another row of the same keys), or None.
    ``lab``: the figures come from the lab's tiny CPU model. ``generated_at``: a timestamp
    string, chosen by the caller.
    """
    if not isinstance(runs, list):
        raise BenchReportError(f"runs is {type(runs).__name__}, not a list of results")
    runs = sorted((_run(run, index) for index, run in enumerate(runs)), key=_concurrency)
    twice = repeated(run["concurrency"] for run in runs)
    if twice:
        raise BenchReportError(
            f"runs measured twice at concurrency {', '.join(map(str, twice))}: give one run "
            "per concurrency"
        )
    deep = _deep(deep)
    if tool_calls is not None and not (
        isinstance(tool_calls, dict) and {"passed", "total", "score"} <= set(tool_calls)
    ):
        raise BenchReportError("tool_calls must be the result of score_tool_calls, or None")
    if warmup is not None and not isinstance(warmup, dict):
        raise BenchReportError(f"warmup is {type(warmup).__name__}, not a mapping")
    if spec_decode is not None and not isinstance(spec_decode, dict):
        raise BenchReportError(f"spec_decode is {type(spec_decode).__name__}, not a mapping")
    if not isinstance(deployment, dict):
        raise BenchReportError(f"deployment is {type(deployment).__name__}, not a mapping")
    if reference is not None and not isinstance(reference, dict):
        raise BenchReportError(f"reference is {type(reference).__name__}, not a mapping")
    if not isinstance(lab, bool):
        raise BenchReportError(f"lab is {lab!r}, not a boolean")
    if not isinstance(generated_at, str) or not generated_at:
        raise BenchReportError("generated_at must be a timestamp string")
    warmup = {
        "requests": (warmup or {}).get("requests", 0),
        "seconds": (warmup or {}).get("seconds"),
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at,
        "lab": lab,
        "note": LAB_NOTE if lab else None,
        "units": {
            "throughput": "output tokens/s, aggregate over all requests of a run",
            "deep_single": "decode tokens/s of one request (1000 / median TPOT)",
            "latency": "ms",
            "spec_per_position_acceptance": "fraction (0..1)",
        },
        "summary": _summary(runs, deep, tool_calls),
        "reference": dict(reference) if reference is not None else None,
        "problems": _problems(runs, deep, warmup, tool_calls),
        "warmup": warmup,
        "runs": runs,
        "deep": deep,
        "tool_calls": tool_calls,
        "spec_decode": dict(spec_decode) if spec_decode is not None else None,
        "engine_throughput": _engine_throughput(throughput),
        "deployment": dict(deployment),
    }


def _concurrency(run):
    return run["concurrency"]
