# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The field report's own row of figures, which every bench report prints beside its own.

Data only, written once: the ``gb10.serving.bench_report`` action puts it into each report
(``build_report``'s ``reference``), and the Markdown and the chart read it from there. The
unit test reads the field report's table (a capture of it, fixtures/bench) and requires
these figures to be that table's ``hybrid-v3 (what we run)`` row. Single-stream is a range
there; ``deep_context`` is the deep single request's context length, from its column title.
"""

from __future__ import annotations

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
