# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read ``vllm bench serve`` results, score a tool-call check, build the benchmark report.

Private to gb10.serving: pure Python, no Ansible imports, so the filters, the
``gb10.serving.bench_report`` action and the unit tests share one implementation. Keep it
Python 3.8 compatible and free of anything outside the standard library; the chart (which
needs matplotlib) is drawn by the action, from the data built here.

What ``vllm bench serve`` prints and saves (vllm/benchmarks/serve.py, 0.11 to 0.34):

* a result block between a ``===== Serving Benchmark Result =====`` line and a line of 50
  ``=``; each row is ``"{:<40} {:<10}"`` (label padded to 40 columns, a space, the value
  left-justified in 10, so rows end in spaces), ``Label:`` then the value;
* rows in this order, some only in some runs: ``Successful requests``, ``Failed requests``
  (0.11 does not print it), ``Maximum request concurrency`` (only
  with ``--max-concurrency``), ``Request rate configured (RPS)``, ``Benchmark duration
  (s)``, ``Total input tokens``, ``Total generated tokens``, ``Request throughput
  (req/s)``, ``Request goodput (req/s)`` (only with ``--goodput``), ``Output token
  throughput (tok/s)``, ``Peak output token throughput (tok/s)`` and ``Peak concurrent
  requests`` (absent from very old builds), ``Total token throughput (tok/s)`` (0.11
  spells it ``Total Token throughput``, so labels are compared without case);
* sections under ``-----Title-----`` lines: ``Mean/Median/P<p> <metric> (ms)`` for TTFT,
  TPOT, ITL, E2EL and the client-side queue metrics, as ``--percentile-metrics`` and
  ``--metric-percentiles`` select them; a ``Speculative Decoding`` section (acceptance rate
  in %, acceptance length, drafts, draft tokens, accepted tokens, ``Per-position acceptance
  (%)`` then ``  Position i:`` rows in %) when the server exposes the counters;
* before the block, the tool prints its arguments, its own log records and, after a run
  with failures, ``Error i: <reason>`` lines: nothing outside the block is read.

``--save-result`` writes one JSON object: the run's setup (``backend``, ``model_id``,
``num_prompts``, ``max_concurrency``...), ``duration``, ``completed``, ``failed``,
``total_input_tokens``, ``total_output_tokens``, the throughputs, ``max_output_tokens_per_s``,
``max_concurrent_requests``, ``mean_<m>_ms``/``median_<m>_ms``/``std_<m>_ms``/``p<p>_<m>_ms``
per metric, ``spec_decode_*`` (acceptance rate in %, per-position rates as fractions), and
per-request arrays (``latencies``, ``queue_times``, and with ``--save-detailed`` also
``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``start_times``, ``generated_texts``,
``errors``). The arrays are dropped here; only the number of non-empty ``errors`` is kept.

Both readings give the same keys (:data:`RESULT_KEYS`): a figure the run did not print is
None. Throughputs are aggregate, over every request of the run. Per-position speculative
acceptance is kept as fractions (0..1), as the engine's ``SpecDecoding metrics`` log line
gives it; the overall acceptance rate stays in percent, as vLLM prints it.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import re
from typing import List, Optional

SCHEMA_VERSION = 1

# The normalized figures of one benchmark run, in this order.
RESULT_KEYS = (
    "successful_requests",
    "failed_requests",
    "max_concurrency",
    "duration_s",
    "total_input_tokens",
    "total_generated_tokens",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "peak_output_throughput",
    "peak_concurrent_requests",
    "total_token_throughput",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "median_itl_ms",
    "p99_itl_ms",
    "mean_e2el_ms",
    "median_e2el_ms",
    "p99_e2el_ms",
    "error_count",
    "spec_acceptance_rate",
    "spec_acceptance_length",
    "spec_num_drafts",
    "spec_draft_tokens",
    "spec_accepted_tokens",
    "spec_per_position_acceptance",
)
_INT_KEYS = frozenset(
    (
        "successful_requests",
        "failed_requests",
        "max_concurrency",
        "total_input_tokens",
        "total_generated_tokens",
        "error_count",
        "spec_num_drafts",
        "spec_draft_tokens",
        "spec_accepted_tokens",
    )
)

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

# The field report's own row (seed/000_bc98aef288f8a15b.txt, table "Metrics (warm, TP=2,
# short-prompt unless noted; aggregate tokens/s)", row "| hybrid-v3 (what we run) | ~43–48 |
# 111 | 153 | 242 | 43 | 3/3 |"). Single-stream is a range there (~43-48); the deep single
# request had about 108K tokens of context.
FIELD_REPORT_REFERENCE = {
    "name": "hybrid-v3 (field report)",
    "source": (
        "field report seed/000_bc98aef288f8a15b.txt, metrics table, row 'hybrid-v3 (what we run)'"
    ),
    "setup": (
        "2x GB10 (HP ZGX Nano), TP=2 over ConnectX-7 RoCE v2, "
        "DeepSeek-V4-Flash-DSpark NVFP4, warm, short prompts"
    ),
    "single_stream": [43, 48],
    "conc_4": 111,
    "conc_8": 153,
    "conc_16": 242,
    "deep_single": 43,
    "deep_context": "108K",
    "tool_calls": "3/3",
}

LAB_NOTE = (
    "These figures come from the lab's tiny CPU model (a random-weight Llama on vLLM's CPU "
    "build): they measure the pipeline, not a GB10."
)

# Keys a sweep variant may change besides the recipe's defaults (see check_bench_inputs).
RECIPE_TOP_LEVEL_KEYS = ("model", "container", "command", "env")


class BenchReportError(ValueError):
    """The input is not a benchmark result, or not the shape a report is built from."""


# --- vllm bench serve: printed block -----------------------------------------------------

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_HEADER_RE = re.compile(r"(?:^|[^=])=+ Serving Benchmark Result =+$")
_FOOTER_RE = re.compile(r"(?:^|[^=])={40,}$")
_ROW_RE = re.compile(r"^(?P<label>.*\S):\s+(?P<value>\S+)$")
_METRIC_RE = re.compile(
    r"(?:^|\s)(?P<stat>Mean|Median|P(?P<pct>\d+(?:\.\d+)?)) "
    r"(?P<metric>TTFT|TPOT|ITL|E2EL|Client Queue Time|E2EL incl\. Client Queue) \(ms\)$"
)
_POSITION_RE = re.compile(r"(?:^|\s)Position (?P<index>\d+)$")
_METRIC_KEYS = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2el"}

# Row label (lower case) -> result key.
_ROW_KEYS = {
    "successful requests": "successful_requests",
    "failed requests": "failed_requests",
    "maximum request concurrency": "max_concurrency",
    "benchmark duration (s)": "duration_s",
    "total input tokens": "total_input_tokens",
    "total generated tokens": "total_generated_tokens",
    "request throughput (req/s)": "request_throughput",
    "request goodput (req/s)": "request_goodput",
    "output token throughput (tok/s)": "output_throughput",
    "peak output token throughput (tok/s)": "peak_output_throughput",
    "peak concurrent requests": "peak_concurrent_requests",
    "total token throughput (tok/s)": "total_token_throughput",
    "acceptance rate (%)": "spec_acceptance_rate",
    "acceptance length": "spec_acceptance_length",
    "drafts": "spec_num_drafts",
    "draft tokens": "spec_draft_tokens",
    "accepted tokens": "spec_accepted_tokens",
}
# Longest first, so "peak output token throughput" wins over "output token throughput" when
# something (a log prefix) stands in front of the label.
_ROW_LABELS = sorted(_ROW_KEYS, key=len, reverse=True)


def _empty_result() -> dict:
    return dict.fromkeys(RESULT_KEYS)


def _row_key(label: str) -> Optional[str]:
    """The result key of a row label, allowing a prefix (timestamp, process) before it."""
    lowered = label.lower()
    for known in _ROW_LABELS:
        if lowered == known:
            return _ROW_KEYS[known]
        if lowered.endswith(known) and not lowered[-len(known) - 1].isalnum():
            return _ROW_KEYS[known]
    return None


def _number(key, value, where):
    """A printed or saved figure as int (counts) or float; non-finite -> None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BenchReportError(f"{where}: {key} is {value!r}, not a number")
    try:
        number = float(value)
    except ValueError:
        raise BenchReportError(f"{where}: {key} is {value!r}, not a number") from None
    if not math.isfinite(number):
        return None
    if key in _INT_KEYS:
        if number != int(number):
            raise BenchReportError(f"{where}: {key} is {value!r}, not a whole number")
        return int(number)
    return number


def _block_lines(text: str) -> List[str]:
    """The lines of the one result block in ``text`` (header and footer left out)."""
    lines = [_ANSI_RE.sub("", line).rstrip() for line in text.splitlines()]
    headers = [index for index, line in enumerate(lines) if _HEADER_RE.search(line)]
    if not headers:
        raise BenchReportError(
            "no 'Serving Benchmark Result' block: this is not the output of a finished "
            "`vllm bench serve` run (it prints the block at the end; look for an error "
            "before it)"
        )
    if len(headers) > 1:
        raise BenchReportError(
            f"{len(headers)} 'Serving Benchmark Result' blocks: give the output of one "
            "`vllm bench serve` run at a time"
        )
    block = []
    for line in lines[headers[0] + 1 :]:
        if _FOOTER_RE.search(line):
            return block
        block.append(line)
    raise BenchReportError(
        "the 'Serving Benchmark Result' block has no closing line of '=': the output was cut short"
    )


def parse_bench_serve_text(text: str) -> dict:
    """The figures of the result block ``vllm bench serve`` prints (see RESULT_KEYS).

    ``text`` is the tool's standard output, whole or from the block on; ANSI colour codes
    and a prefix before each line (a timestamp, a process name) are allowed. Raises
    BenchReportError when there is no complete block, or more than one.
    """
    if not isinstance(text, str):
        raise BenchReportError(
            f"expected the output of `vllm bench serve` as a string, got {type(text).__name__}"
        )
    result = _empty_result()
    positions = {}
    for line in _block_lines(text):
        match = _ROW_RE.match(line)
        if match is None:
            continue  # section titles, "Per-position acceptance (%):"
        label, value = match.group("label"), match.group("value")
        where = f"line {line.strip()!r}"
        metric = _METRIC_RE.search(label)
        if metric is not None:
            name = _METRIC_KEYS.get(metric.group("metric"))
            stat = metric.group("stat")
            if name is None:
                continue  # client-side queueing: not part of the report
            if stat in ("Mean", "Median"):
                key = f"{stat.lower()}_{name}_ms"
            elif metric.group("pct") == "99":
                key = f"p99_{name}_ms"
            else:
                continue  # other percentiles (--metric-percentiles 50,90)
            result[key] = _number(key, value, where)
            continue
        position = _POSITION_RE.search(label)
        if position is not None:
            percent = _number("per-position acceptance", value, where)
            positions[int(position.group("index"))] = (
                None if percent is None else round(percent / 100.0, 6)
            )
            continue
        key = _row_key(label)
        if key is not None:
            result[key] = _number(key, value, where)
    if result["successful_requests"] is None:
        raise BenchReportError(
            "the 'Serving Benchmark Result' block has no 'Successful requests' row: not a "
            "`vllm bench serve` result"
        )
    if positions:
        result["spec_per_position_acceptance"] = [
            positions.get(index) for index in range(max(positions) + 1)
        ]
    return result


# --- vllm bench serve: --save-result JSON --------------------------------------------------

# Result key -> the key `vllm bench serve --save-result` writes.
_JSON_KEYS = {
    "successful_requests": "completed",
    "failed_requests": "failed",
    "max_concurrency": "max_concurrency",
    "duration_s": "duration",
    "total_input_tokens": "total_input_tokens",
    "total_generated_tokens": "total_output_tokens",
    "request_throughput": "request_throughput",
    "request_goodput": "request_goodput",
    "output_throughput": "output_throughput",
    "peak_output_throughput": "max_output_tokens_per_s",
    "peak_concurrent_requests": "max_concurrent_requests",
    "total_token_throughput": "total_token_throughput",
    "spec_acceptance_rate": "spec_decode_acceptance_rate",
    "spec_acceptance_length": "spec_decode_acceptance_length",
    "spec_num_drafts": "spec_decode_num_drafts",
    "spec_draft_tokens": "spec_decode_draft_tokens",
    "spec_accepted_tokens": "spec_decode_accepted_tokens",
}
for _name in ("ttft", "tpot", "itl", "e2el"):
    for _stat in ("mean", "median", "p99"):
        _JSON_KEYS[f"{_stat}_{_name}_ms"] = f"{_stat}_{_name}_ms"
del _name, _stat


def normalize_bench_json(data) -> dict:
    """The figures of a ``vllm bench serve --save-result`` JSON object (see RESULT_KEYS).

    ``data`` is the parsed object (a dict). Per-request arrays are left out; ``error_count``
    is the number of non-empty ``errors`` entries (saved with ``--save-detailed`` only,
    else None). Raises BenchReportError when ``data`` is not such an object.
    """
    if not isinstance(data, dict):
        raise BenchReportError(
            f"expected the JSON object `vllm bench serve --save-result` writes, got "
            f"{type(data).__name__}"
        )
    if "completed" not in data:
        raise BenchReportError(
            "no 'completed' key: not a `vllm bench serve --save-result` JSON object (keys: "
            f"{', '.join(sorted(str(key) for key in data)[:12]) or 'none'})"
        )
    result = _empty_result()
    for key, source in _JSON_KEYS.items():
        value = data.get(source)
        if value is not None:
            result[key] = _number(key, value, f"JSON key {source!r}")
    errors = data.get("errors")
    if errors is not None:
        if not isinstance(errors, list):
            raise BenchReportError(f"JSON key 'errors' is {type(errors).__name__}, not a list")
        result["error_count"] = sum(1 for error in errors if error)
    rates = data.get("spec_decode_per_position_acceptance_rates")
    if rates is not None:
        if not isinstance(rates, list):
            raise BenchReportError(
                "JSON key 'spec_decode_per_position_acceptance_rates' is "
                f"{type(rates).__name__}, not a list"
            )
        result["spec_per_position_acceptance"] = [
            _number("per-position acceptance", rate, "JSON") for rate in rates
        ]
    return result


def parse_bench_serve(value) -> dict:
    """A ``vllm bench serve`` result as printed (str) or saved (dict, or its JSON text)."""
    if isinstance(value, dict):
        return normalize_bench_json(value)
    if isinstance(value, str):
        if value.lstrip().startswith("{"):
            try:
                data = json.loads(value)
            except ValueError as exc:
                raise BenchReportError(f"the text starts like JSON but is not: {exc}") from None
            return normalize_bench_json(data)
        return parse_bench_serve_text(value)
    raise BenchReportError(
        "expected the printed output (a string) or the --save-result JSON (a mapping) of "
        f"`vllm bench serve`, got {type(value).__name__}"
    )


# --- tool-call check ---------------------------------------------------------------------


def _cut(text, limit=80) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expected_call(item, index):
    """(function name, required argument names) from an ``expected`` entry."""
    if isinstance(item, str) and item:
        return item, ()
    if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]:
        required = item.get("required") or ()
        if not isinstance(required, (list, tuple)) or not all(
            isinstance(name, str) for name in required
        ):
            raise BenchReportError(
                f"expected[{index}].required must be a list of argument names, got {required!r}"
            )
        return item["name"], tuple(required)
    raise BenchReportError(
        f"expected[{index}] is {item!r}: give a function name, or a mapping with 'name' and "
        "optionally 'required' (argument names)"
    )


def _tool_call_failure(response, name, required) -> Optional[str]:
    """Why ``response`` does not call ``name`` well, or None when it does."""
    if not isinstance(response, dict):
        return f"the response is {type(response).__name__}, not a JSON object"
    if response.get("error") is not None:
        error = response["error"]
        if isinstance(error, dict):
            error = error.get("message") or error
        return f"the request failed: {_cut(error, 160)}"
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        return "the response has no choices"
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        return "choices[0] has no message"
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        reason = "no tool_calls"
        if isinstance(choice, dict) and choice.get("finish_reason"):
            reason += f" (finish_reason {choice['finish_reason']})"
        if message.get("content"):
            reason += f"; the model answered with text: {_cut(message['content'])!r}"
        return reason
    call = calls[0]
    if not isinstance(call, dict):
        return "tool_calls[0] is not an object"
    if call.get("type") != "function":
        return f"tool_calls[0] has type {call.get('type')!r}, not 'function'"
    function = call.get("function")
    if not isinstance(function, dict):
        return "tool_calls[0] has no function"
    if function.get("name") != name:
        return f"called {function.get('name')!r}, expected {name!r}"
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return f"the arguments are {type(arguments).__name__}, not a JSON string"
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return f"the arguments are not JSON: {_cut(arguments)!r}"
    if not isinstance(parsed, dict):
        return f"the arguments are JSON but not an object: {_cut(arguments)!r}"
    missing = [key for key in required if key not in parsed]
    if missing:
        return f"the arguments lack {', '.join(missing)}: {_cut(arguments)!r}"
    return None


def score_tool_calls(responses, expected) -> dict:
    """Score chat-completion responses against the functions they should call.

    ``responses``: OpenAI chat-completion response bodies (a dict with ``error`` stands for a
    failed request). ``expected``: for each response, the function name it must call, or a
    mapping ``{'name': ..., 'required': [argument names]}``. A response passes when
    ``choices[0].message.tool_calls[0]`` has type ``function``, names the function, and its
    ``arguments`` string is a JSON object (holding the required names).

    Returns ``{'passed', 'total', 'score': 'n/m', 'cases': [{'expected', 'called', 'passed',
    'reason'}]}``; ``reason`` is None for a pass and says what was wrong otherwise.
    """
    if not isinstance(responses, list) or not isinstance(expected, list):
        raise BenchReportError("responses and expected must both be lists")
    if len(responses) != len(expected):
        raise BenchReportError(
            f"{len(responses)} responses for {len(expected)} expected calls: give one "
            "expected function per response"
        )
    cases = []
    for index, response in enumerate(responses):
        name, required = _expected_call(expected[index], index)
        reason = _tool_call_failure(response, name, required)
        cases.append(
            {
                "expected": name,
                "called": _called_name(response),
                "passed": reason is None,
                "reason": reason,
            }
        )
    passed = sum(1 for case in cases if case["passed"])
    return {
        "passed": passed,
        "total": len(cases),
        "score": f"{passed}/{len(cases)}",
        "cases": cases,
    }


def _called_name(response) -> Optional[str]:
    try:
        name = response["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
    except (KeyError, IndexError, TypeError):
        return None
    return name if isinstance(name, str) else None


# --- the report --------------------------------------------------------------------------


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


def _repeated(values) -> list:
    """The values that occur more than once, sorted."""
    seen, twice = set(), set()
    for value in values:
        (twice if value in seen else seen).add(value)
    return sorted(twice)


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
    twice = _repeated(run["concurrency"] for run in runs)
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


# --- Markdown ----------------------------------------------------------------------------


def _cell(value) -> str:
    """A value as a Markdown table cell: no line breaks, pipes escaped."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        text = f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    elif isinstance(value, (list, tuple)):
        text = ", ".join(_plain(item) for item in value)
    else:
        text = str(value)
    return text.replace("\n", " ").replace("|", "\\|")


def _plain(value) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _throughput_cell(value) -> str:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return f"~{value[0]}\u2013{value[1]}"
    return _cell(value)


def _tokens(count) -> str:
    """A context length as the field report writes it (108K); text is kept as it is."""
    if isinstance(count, int) and count >= 1000:
        return f"{round(count / 1000)}K"
    return str(count)


def _table(header, rows, align=None) -> List[str]:
    align = align or ["---"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _summary_row(name, values, deep_context) -> List[str]:
    row = [_cell(name)]
    for key, _title in COLUMNS:
        value = values.get(key)
        if key == "deep_single":
            text = _throughput_cell(value)
            if value is not None and deep_context:
                text += f" @{_tokens(deep_context)}"
            row.append(text)
        elif key == "tool_calls":
            row.append(_cell(value))
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
    lines.extend(_table(header, rows, ["---"] + ["---:"] * len(COLUMNS)))
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
            f"{_cell(run['successful_requests'])}/{_cell(run['failed_requests'])}",
            _cell(run["output_throughput"]),
            _cell(run["total_token_throughput"]),
            _cell(run["median_ttft_ms"]),
            _cell(run["p99_ttft_ms"]),
            _cell(run["median_tpot_ms"]),
            _cell(run["p99_tpot_ms"]),
            _cell(run["median_itl_ms"]),
        ]
        if spec_column:
            row.append(_cell(run.get("spec_acceptance_length")))
        rows.append(row)
    if rows:
        lines.extend(_table(header, rows, ["---:"] * len(header)))
    else:
        lines.append("No benchmark runs.")
    if report.get("deep"):
        lines.extend(["", "## Deep single request", ""])
        lines.extend(
            _table(
                ["prompt tokens", "output tokens", "TTFT ms", "decode tok/s", "output tok/s"],
                [
                    [
                        _cell(deep.get("prompt_tokens")),
                        _cell(deep.get("output_tokens")),
                        _cell(deep.get("ttft_ms")),
                        _cell(deep.get("decode_tokens_per_s")),
                        _cell(deep.get("output_tokens_per_s")),
                    ]
                ],
                ["---:"] * 5,
            )
        )
    tool_calls = report.get("tool_calls")
    if tool_calls:
        lines.extend(["", f"## Tool calls: {tool_calls['score']}", ""])
        lines.extend(
            _table(
                ["expected", "called", "passed", "reason"],
                [
                    [
                        _cell(case.get("expected")),
                        _cell(case.get("called")),
                        "yes" if case.get("passed") else "no",
                        _cell(case.get("reason") or ""),
                    ]
                    for case in tool_calls.get("cases", [])
                ],
            )
        )
    lines.extend(["", "## Deployment", ""])
    deployment = report.get("deployment") or {}
    if deployment:
        lines.extend(_table(["", "value"], [[_cell(k), _cell(v)] for k, v in deployment.items()]))
    else:
        lines.append("No fingerprint given.")
    return "\n".join(lines) + "\n"


# --- sweep -------------------------------------------------------------------------------


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
    twice = _repeated(names)
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
        row = [_cell(variant["name"] + (" (failed)" if variant.get("failed") else ""))]
        for column in columns:
            value = variant["values"].get(column["key"])
            text = _cell(value) if not isinstance(value, int) else f"{value:,}"
            if value is not None and variant["name"] in comparison["best"].get(column["key"], []):
                text = f"**{text}**"
            row.append(text)
        rows.append(row)
    lines.extend(
        _table(
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


# --- bad input ---------------------------------------------------------------------------


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _variant_overrides(sweep) -> List[tuple]:
    """(label for messages, overrides) per sweep variant; a mapping is one grid."""
    if isinstance(sweep, dict):
        return [("bench_sweep_variants", sweep)]
    return [
        (
            f"bench_sweep_variants[{index}]",
            item.get("overrides") if isinstance(item, dict) and "overrides" in item else item,
        )
        for index, item in enumerate(sweep)
    ]


def check_bench_inputs(concurrencies, max_num_seqs, sweep=None, recipe_defaults=None) -> List[str]:
    """What is wrong with the bench inputs, as messages naming the variable and the fix.

    ``concurrencies``: ``bench_concurrency``, a non-empty list of distinct positive
    integers, none above ``max_num_seqs`` (the recipe's; None when the recipe leaves vLLM's
    default, which is then not checked). ``sweep``: ``bench_sweep_variants``, either a mapping of
    recipe key to the list of values to try (``{max_model_len: [393216, 500000]}``) or a
    list of variants, each an overrides mapping or ``{'name': ..., 'overrides': {...}}``.
    Its keys must be keys of the recipe: one of ``recipe_defaults`` (the recipe's
    ``defaults`` mapping; keys are not checked when it is None) or ``model``, ``container``,
    ``command``, ``env``. An empty list means nothing is wrong.
    """
    problems = []
    if not isinstance(concurrencies, list):
        problems.append(
            f"bench_concurrency is {type(concurrencies).__name__} ({concurrencies!r}), not a "
            "list: give the concurrencies to measure as a list, for example [1, 4, 8, 16]."
        )
        concurrencies = []
    elif not concurrencies:
        problems.append(
            "bench_concurrency is empty: give at least one concurrency to measure, for "
            "example [1, 4, 8, 16]."
        )
    good = []
    for index, value in enumerate(concurrencies):
        if not _positive_int(value):
            problems.append(
                f"bench_concurrency[{index}] is {value!r}: every concurrency must be a "
                "positive integer (number of requests in flight), for example 4."
            )
        elif value in good:
            problems.append(
                f"bench_concurrency lists {value} more than once: list each concurrency once."
            )
        else:
            good.append(value)
    if max_num_seqs is not None and not _positive_int(max_num_seqs):
        problems.append(
            f"the recipe's max_num_seqs is {max_num_seqs!r}, not a positive integer: fix "
            "max_num_seqs in vllm_recipe (or vllm_recipe_overrides)."
        )
    elif max_num_seqs is not None:
        for value in good:
            if value > max_num_seqs:
                problems.append(
                    f"bench_concurrency {value} is above the recipe's max_num_seqs "
                    f"({max_num_seqs}): the engine would queue the extra requests and measure "
                    f"{max_num_seqs} in flight; lower it to {max_num_seqs} or less, or raise "
                    "max_num_seqs in the recipe."
                )
    if sweep is None:
        return problems
    if not isinstance(sweep, (dict, list)) or not sweep:
        problems.append(
            f"bench_sweep_variants is {sweep!r}: give a mapping of recipe key to the values to try "
            "(for example {max_model_len: [393216, 500000]}) or a non-empty list of override "
            "mappings."
        )
        return problems
    known = fields = None
    if recipe_defaults is not None:
        known = set(recipe_defaults) | set(RECIPE_TOP_LEVEL_KEYS)
        fields = json_fields(recipe_defaults)
    for label, overrides in _variant_overrides(sweep):
        if not isinstance(overrides, dict) or not overrides:
            problems.append(
                f"{label} is {overrides!r}: give a non-empty mapping of recipe key to value "
                "(or {name: ..., overrides: {...}})."
            )
            continue
        for key, value in overrides.items():
            if isinstance(sweep, dict) and (not isinstance(value, list) or not value):
                problems.append(
                    f"bench_sweep_variants.{key} is {value!r}: give the values to try as a "
                    f"non-empty list, for example {key}: [{value!r}]."
                )
            if known is not None and key not in known:
                inside = fields.get(key, [])
                if len(inside) > 1:
                    problems.append(
                        f"{label} changes {key!r}, a field inside more than one of the "
                        f"recipe's JSON values ({', '.join(inside)}): sweep the one you mean "
                        "with whole values instead."
                    )
                elif not inside:
                    problems.append(_unknown_key_message(label, key, recipe_defaults))
            if key == "max_num_seqs" and good:
                values = value if isinstance(sweep, dict) and isinstance(value, list) else [value]
                for seqs in values:
                    if _positive_int(seqs) and max(good) > seqs:
                        problems.append(
                            f"{label} sets max_num_seqs {seqs}, below bench_concurrency "
                            f"{max(good)}: raise it or drop that concurrency."
                        )
    return problems


def _unknown_key_message(label, key, recipe_defaults) -> str:
    message = f"{label} changes {key!r}, which the recipe does not have"
    names = [str(name) for name in recipe_defaults] + sorted(json_fields(recipe_defaults))
    close = difflib.get_close_matches(str(key), names, n=1)
    if close:
        message += f" (did you mean {close[0]!r}?)"
    return (
        message + ": use one of the recipe's defaults keys, a field inside one of its JSON "
        "values (num_speculative_tokens inside speculative_config), or model, container, "
        "command, env (a new key would only add an unused default)."
    )


# --- sweep variants ----------------------------------------------------------------------


def json_fields(recipe_defaults) -> dict:
    """Field name -> the recipe defaults keys whose value is a JSON object holding it.

    The recipe keeps nested engine settings as JSON text (``speculative_config:
    '{"method":"dspark","num_speculative_tokens":3}'``); a sweep may name such a field
    directly (``num_speculative_tokens: [3, 5]``).
    """
    fields = {}
    for name, value in (recipe_defaults or {}).items():
        data = _json_object(value)
        for field in data or {}:
            fields.setdefault(field, []).append(str(name))
    return fields


def _json_object(value) -> Optional[dict]:
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


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
            data = _json_object(overrides.get(target, defaults[target]))
            data[key] = value
            overrides[target] = json.dumps(data, separators=(",", ":"))
        name = item.get("name") or ", ".join(
            f"{key}={_value_text(value)}" for key, value in changes.items()
        )
        variants.append({"name": str(name), "changes": dict(changes), "overrides": overrides})
    twice = _repeated(variant["name"] for variant in variants)
    if twice:
        raise BenchReportError(
            f"bench_sweep_variants names {', '.join(twice)} more than once: give each "
            "variant its own name."
        )
    return variants
