# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._bench_report and _bench_reference: the report model and its reference row.

The captures and the lab report the cases use are in bench_cases.py.
"""

from __future__ import annotations

import json
import re

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._bench_common import (
    LAB_NOTE,
    BenchReportError,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_markdown import render_markdown
from ansible_collections.gb10.serving.plugins.module_utils._bench_reference import (
    FIELD_REPORT_REFERENCE,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_report import (
    COLUMNS,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_serve import (
    normalize_bench_json,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.bench_cases import (
    C4,
    DEPLOYMENT,
    FAILED,
    SPECULATIVE,
    STAMP,
    THROUGHPUT,
    lab_report,
    saved,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import load_capture

# --- the report ----------------------------------------------------------------------------


def field_report_table():
    """The field report's metrics table (fixtures/bench/field_report_metrics.txt): its
    column titles, and each row's name with its cells. The report writes one cell per line,
    each ending in ' |', and starts a row with '| name |'.
    """
    cells = [
        cell.strip()
        for line in load_capture("bench", "field_report_metrics.txt").splitlines()[1:]
        for cell in line.split("|")
        if cell.strip()
    ]
    titles, rows = cells[:6], cells[6:]
    return titles, {rows[at]: rows[at + 1 : at + 7] for at in range(0, len(rows), 7)}


def _figure(cell):
    """A cell of the table as the reference holds it: '~43–48' is a range, '3/3' a score."""
    low_high = re.fullmatch(r"~(\d+)\u2013(\d+)", cell)
    if low_high:
        return [int(low_high[1]), int(low_high[2])]
    return int(cell) if cell.isdigit() else cell


def test_field_report_reference_is_the_hybrid_v3_row_of_the_report():
    titles, rows = field_report_table()
    reference = FIELD_REPORT_REFERENCE
    # The report's columns in its order; the deep single's title names its context.
    assert titles == [
        f"{title} @{reference['deep_context']}" if key == "deep_single" else title
        for key, title in COLUMNS
    ]
    cells = rows["hybrid-v3 (what we run)"]
    assert {key: reference[key] for key, _title in COLUMNS} == {
        key: _figure(cells[at]) for at, (key, _title) in enumerate(COLUMNS)
    }


def test_report_from_the_lab_captures():
    report = lab_report()
    assert report["schema_version"] == 1
    assert report["generated_at"] == STAMP
    assert report["lab"] is True
    assert report["note"] == LAB_NOTE
    assert [run["concurrency"] for run in report["runs"]] == [1, 4]  # sorted
    assert report["runs"][1] == {"concurrency": 4, **normalize_bench_json(saved(C4))}
    summary = report["summary"]
    assert summary["single_stream"] == 366.0699446302817  # c1 JSON output_throughput
    assert summary["conc_4"] == 780.9115493883487  # c4 JSON output_throughput
    assert summary["conc_8"] is None
    assert summary["conc_16"] is None
    assert summary["deep_single"] == pytest.approx(436.56, abs=0.01)  # 1000 / 2.2906 ms TPOT
    assert summary["tool_calls"] == "0/3"
    assert report["deep"] == {
        "prompt_tokens": 456,
        "output_tokens": 32,
        "ttft_ms": 25.95576600106142,
        "decode_tokens_per_s": pytest.approx(436.56, abs=0.01),
        "output_tokens_per_s": 326.1183154951999,
        "failed_requests": 0,
    }
    assert report["warmup"] == {"requests": 30, "seconds": 12.5}
    assert report["spec_decode"] == SPECULATIVE
    assert report["engine_throughput"] == {
        "samples": 2,
        "peak_generation_tokens_per_s": 13.0,
        "peak_prompt_tokens_per_s": 49.4,
        "last": THROUGHPUT[1],
    }
    assert report["deployment"] == DEPLOYMENT
    assert report["reference"] == FIELD_REPORT_REFERENCE
    assert report["problems"] == [
        "Tool calls: only 0/3 were well-formed.",
        "Not measured at concurrency 8, 16: those columns are empty.",
    ]
    json.dumps(report, allow_nan=False)  # bench.json is plain JSON


def test_report_problems_failed_requests_and_no_warmup():
    report = lab_report(
        runs=[{**normalize_bench_json(saved(FAILED)), "concurrency": c} for c in (1, 4, 8, 16)],
        warmup=None,
        tool_calls=None,
    )
    assert report["warmup"] == {"requests": 0, "seconds": None}
    assert report["problems"][0].startswith("No warm-up before measuring")
    assert "Concurrency 4: 2 of 6 requests failed." in report["problems"]
    assert report["summary"]["tool_calls"] is None
    assert report["summary"]["conc_16"] == 221.75018828710867


def test_report_deep_as_a_plain_mapping_and_absent():
    deep = {
        "prompt_tokens": 108000,
        "output_tokens": 256,
        "ttft_ms": 21000.0,
        "decode_tokens_per_s": 43.0,
    }
    report = lab_report(deep=deep)
    assert report["summary"]["deep_single"] == 43.0
    assert report["deep"]["output_tokens_per_s"] is None
    assert lab_report(deep=None)["summary"]["deep_single"] is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param({"runs": {}}, "runs is dict, not a list", id="runs-mapping"),
        pytest.param(
            {"runs": [normalize_bench_json(saved(C4))]},
            "needs the concurrency",
            id="no-concurrency",
        ),
        pytest.param(
            {"runs": [{**normalize_bench_json(saved(C4)), "concurrency": 0}]},
            "concurrency 0",
            id="zero",
        ),
        pytest.param(
            {
                "runs": [
                    {**normalize_bench_json(saved(C4)), "concurrency": 4},
                    {**normalize_bench_json(saved(C4)), "concurrency": 4},
                ]
            },
            "measured twice at concurrency 4",
            id="twice",
        ),
        pytest.param({"runs": [{**saved(C4), "concurrency": 4}]}, "parse each run", id="raw-json"),
        pytest.param({"deep": {"prompt_tokens": 1}}, "deep must be", id="deep-shape"),
        pytest.param({"tool_calls": "3/3"}, "tool_calls must be", id="tool-calls-text"),
        pytest.param({"lab": "yes"}, "lab is 'yes'", id="lab-text"),
        pytest.param({"generated_at": None}, "generated_at", id="no-stamp"),
        pytest.param({"deployment": None}, "deployment is NoneType", id="no-deployment"),
        pytest.param({"throughput": "51 tokens/s"}, "throughput must be", id="throughput-text"),
    ],
)
def test_report_bad_input(changes, message):
    with pytest.raises(BenchReportError, match=message):
        lab_report(**changes)


def test_report_takes_the_log_parsers_throughput_summary():
    summary = {
        "lines": 5,
        "busy_lines": 3,
        "peak_generation_tokens_per_s": 1178.2,
        "peak_prompt_tokens_per_s": 2356.0,
        "mean_generation_tokens_per_s": 640.3,
        "peak_running": 16,
    }
    report = lab_report(throughput=summary)
    assert report["engine_throughput"] == {
        "samples": 5,
        "busy_samples": 3,
        "peak_generation_tokens_per_s": 1178.2,
        "peak_prompt_tokens_per_s": 2356.0,
        "mean_generation_tokens_per_s": 640.3,
        "peak_running": 16,
    }
    assert (
        "Engine log: peak 'Avg generation throughput' 1178.2 tokens/s over 5 log line(s) "
        "during the run, mean 640.3 tokens/s over the 3 busy one(s)."
    ) in render_markdown(report).splitlines()
    with pytest.raises(BenchReportError, match="needs the keys lines, busy_lines"):
        lab_report(throughput={"lines": 5})
