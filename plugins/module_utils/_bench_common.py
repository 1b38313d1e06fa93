# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the bench modules share: their error, the report schema's version, the lab's note and
the two Markdown helpers every page uses.

Private to gb10.serving: pure Python, standard library only, Python 3.8 compatible (as are
all the ``_bench_*`` modules: the filters, the ``gb10.serving.bench_report`` action and the
unit tests share them).
"""

from __future__ import annotations

from typing import List

# The version of bench.json and sweep.json; a reader refuses another.
SCHEMA_VERSION = 1

LAB_NOTE = (
    "These figures come from the lab's tiny CPU model (a random-weight Llama on vLLM's CPU "
    "build): they measure the pipeline, not a GB10."
)


class BenchReportError(ValueError):
    """The input is not a benchmark result, or not the shape a report is built from."""


def repeated(values) -> list:
    """The values that occur more than once, sorted."""
    seen, twice = set(), set()
    for value in values:
        (twice if value in seen else seen).add(value)
    return sorted(twice)


def cell(value) -> str:
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


def table(header, rows, align=None) -> List[str]:
    align = align or ["---"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines
