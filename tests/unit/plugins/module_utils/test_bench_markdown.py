# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._bench_markdown: bench.md.

The captures and the lab report the cases use are in bench_cases.py.
"""

from __future__ import annotations

from ansible_collections.gb10.serving.plugins.module_utils._bench_common import (
    LAB_NOTE,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_markdown import render_markdown
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.bench_cases import (
    STAMP,
    lab_report,
)


def test_markdown_table_has_the_field_report_columns_and_rows():
    markdown = render_markdown(lab_report())
    lines = markdown.splitlines()
    assert lines[0] == f"# Benchmark report, {STAMP}"
    header = "|  | single-stream | conc-4 | conc-8 | conc-16 | deep single | tool-calls |"
    index = lines.index(header)
    assert lines[index + 1] == "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    assert lines[index + 2] == "| this run | 366.1 | 780.9 | n/a | n/a | 436.6 @456 | 0/3 |"
    assert lines[index + 3] == (
        "| hybrid-v3 (field report) | ~43\u201348 | 111 | 153 | 242 | 43 @108K | 3/3 |"
    )
    assert f"**Lab:** {LAB_NOTE}" in lines
    assert (
        "Warm-up: 30 requests in 12.5 s before anything was measured (they are not in the figures)."
        in lines
    )
    assert (
        "Speculative decoding: eagle3, 3 tokens; mean acceptance length 2.98; per position "
        "0.82, 0.68, 0.48; draft acceptance 66.0%."
    ) in lines
    assert (
        "Engine log: peak 'Avg generation throughput' 13.0 tokens/s over 2 log line(s) "
        "during the run." in lines
    )
    # Per concurrency: medians of TTFT and TPOT, from the JSON (c1: 12.71 ms / 2.30 ms).
    assert "| 1 | 4/0 | 366.1 | 1189.7 | 12.7 | 27.2 | 2.30 | 2.33 | 2.32 |" in lines
    assert "| 4 | 8/0 | 780.9 | 2550.2 | 44.4 | 71.6 | 3.69 | 3.75 | 3.47 |" in lines
    assert "## Tool calls: 0/3" in lines
    assert "| model_revision | 0adf534279f0e40a872d9223a09c76585ea0b53b |" in lines
    assert "| node_count | 2 |" in lines
    # Order: the table, then warm-up, speculative decoding, per concurrency, deployment.
    order = [
        lines.index(header),
        lines.index(
            "Warm-up: 30 requests in 12.5 s before anything was measured (they are not in the "
            "figures)."
        ),
        next(i for i, line in enumerate(lines) if line.startswith("Speculative decoding:")),
        lines.index("## Per concurrency"),
        lines.index("## Deployment"),
    ]
    assert order == sorted(order)


def test_markdown_without_lab_reference_or_spec():
    markdown = render_markdown(
        lab_report(lab=False, reference=None, spec_decode=None, deployment={})
    )
    assert LAB_NOTE not in markdown
    assert "hybrid-v3" not in markdown
    assert "Speculative decoding: none reported by the engine log." in markdown
    assert "No fingerprint given." in markdown


def test_markdown_escapes_pipes_in_cells():
    report = lab_report(deployment={"command": "vllm serve a | tee log"})
    assert "| command | vllm serve a \\| tee log |" in render_markdown(report)
