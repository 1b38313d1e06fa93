# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read what ``vllm bench serve`` prints and saves, as one normalized result.

Private to gb10.serving, like every ``_bench_*`` module (see ``_bench_common``).

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

import json
import math
import re
from typing import List, Optional

from ansible_collections.gb10.serving.plugins.module_utils._bench_common import BenchReportError

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
