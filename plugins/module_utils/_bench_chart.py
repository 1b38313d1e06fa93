# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""bench.png and sweep.png: aggregate output tokens/s against concurrency, as PNG bytes.

Private to gb10.serving. The one ``_bench_*`` module that needs more than the standard
library: matplotlib, imported when a chart is drawn (MatplotlibMissing when it cannot be),
on the controller only (the ``gb10.serving.bench_report`` action). Same report, same bytes.
"""

from __future__ import annotations

import io

from ansible_collections.gb10.serving.plugins.module_utils._bench_report import COLUMN_CONCURRENCY


class MatplotlibMissing(Exception):
    """matplotlib cannot be imported on the controller."""


def _pyplot_free_figure():
    """A new matplotlib Figure on the Agg canvas (no pyplot: no global state, no display)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import NullFormatter
    except ImportError as exc:
        raise MatplotlibMissing(str(exc)) from exc
    figure = Figure(figsize=(8, 5), dpi=100)
    FigureCanvasAgg(figure)
    return figure, NullFormatter


def _finish(figure, axes, ticks, null_formatter, title, lab, stamp):
    axes.set_xscale("log", base=2)
    if ticks:
        axes.set_xticks(ticks)
        axes.set_xticklabels([str(tick) for tick in ticks])
        axes.xaxis.set_minor_formatter(null_formatter())
    axes.set_xlabel("concurrent requests")
    axes.set_ylabel("output tokens/s, all requests together")
    axes.set_title(title)
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best", fontsize=8)
    if stamp:
        figure.text(0.99, 0.01, stamp, ha="right", va="bottom", fontsize=7, color="gray")
    if lab:
        figure.text(
            0.01,
            0.01,
            "lab: tiny CPU model (measures the pipeline, not a GB10)",
            ha="left",
            va="bottom",
            fontsize=8,
            color="firebrick",
        )
    buffer = io.BytesIO()
    # No Software/date metadata: the same report gives the same bytes.
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def bench_png(report):
    """bench.png: this run's aggregate output tokens/s against concurrency, and the reference."""
    figure, null_formatter = _pyplot_free_figure()
    axes = figure.add_subplot(1, 1, 1)
    points = [
        (run["concurrency"], run["output_throughput"])
        for run in report["runs"]
        if run.get("output_throughput") is not None
    ]
    ticks = {concurrency for concurrency, _value in points}
    if points:
        axes.plot(
            [c for c, _v in points],
            [v for _c, v in points],
            "o-",
            color="tab:blue",
            label="this run",
        )
    reference = report.get("reference")
    if reference:
        name = reference.get("name") or "reference"
        ref_points = [
            (concurrency, reference.get(key))
            for key, concurrency in COLUMN_CONCURRENCY.items()
            if isinstance(reference.get(key), (int, float))
        ]
        if ref_points:
            axes.plot(
                [c for c, _v in ref_points],
                [v for _c, v in ref_points],
                "s--",
                color="tab:orange",
                label=name,
            )
            ticks.update(c for c, _v in ref_points)
        single = reference.get("single_stream")
        if isinstance(single, list) and len(single) == 2:
            low, high = single
            axes.errorbar(
                [1],
                [(low + high) / 2.0],
                yerr=[[(high - low) / 2.0], [(high - low) / 2.0]],
                fmt="none",
                ecolor="tab:orange",
                capsize=5,
                label=f"{name}, single-stream range",
            )
            ticks.add(1)
    return _finish(
        figure,
        axes,
        sorted(ticks),
        null_formatter,
        "Aggregate output throughput against concurrency",
        report.get("lab"),
        report.get("generated_at"),
    )


def sweep_png(comparison):
    """sweep.png: one line per variant, aggregate output tokens/s against concurrency."""
    figure, null_formatter = _pyplot_free_figure()
    axes = figure.add_subplot(1, 1, 1)
    ticks = set()
    for variant in comparison["variants"]:
        points = []
        for column in comparison["columns"]:
            key = column["key"]
            if key == "single_stream":
                concurrency = 1
            elif key.startswith("conc_"):
                concurrency = int(key[len("conc_") :])
            else:
                continue
            value = variant["values"].get(key)
            if isinstance(value, (int, float)):
                points.append((concurrency, value))
        if points:
            axes.plot([c for c, _v in points], [v for _c, v in points], "o-", label=variant["name"])
            ticks.update(c for c, _v in points)
    return _finish(
        figure,
        axes,
        sorted(ticks),
        null_formatter,
        "Sweep: aggregate output throughput against concurrency",
        comparison.get("lab"),
        comparison.get("generated_at"),
    )
