#!/usr/bin/env python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark gb10.serving.tree_owner's walk (module_utils/_tree_owner.py) against find.

Builds a tree of 1,000 directories x 100 small files (100,000 files) in a temporary
directory, all owned by root (creation not timed), then times:

  find_before   find DIR -not -uid 1000 | wc -l, before the repair (every entry listed)
  first_repair  repair_tree(DIR, 1000, 1000), every entry wrong (timed once: it changes
                the tree)
  rerun         repair_tree again, nothing wrong
  find_floor    find DIR -not -uid 1000 -o -not -gid 1000 | wc -l after the repair: the
                same walk and lstat per entry in C, the floor for a re-run

Non-destructive timings run 3 times and report the median. The tree is in the page cache
(just written), as a re-run on a node usually finds it. Needs root (chown to 1000).
Prints a table and writes reports/bench/tree_owner.json. Run from the repository root.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE_UTILS = ROOT / "plugins" / "module_utils" / "_tree_owner.py"
REPORT = ROOT / "reports" / "bench" / "tree_owner.json"
DIRS = 1000
FILES_PER_DIR = 100
UID = GID = 1000
REPEATS = 3


def load_tree_owner():
    """module_utils/_tree_owner.py imported by path (no ansible_collections needed)."""
    spec = importlib.util.spec_from_file_location("_tree_owner", MODULE_UTILS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def build_tree(top):
    """DIRS directories of FILES_PER_DIR 16-byte files under top/tree; returns its path."""
    tree = os.path.join(top, "tree")
    payload = b"0123456789abcdef"
    for index in range(DIRS):
        directory = os.path.join(tree, f"d{index:04d}")
        os.makedirs(directory)
        for number in range(FILES_PER_DIR):
            with open(os.path.join(directory, f"f{number:03d}"), "wb") as handle:
                handle.write(payload)
    return tree


def timed(func):
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def find_count(*predicates):
    """A function running find TREE PREDICATES | wc -l, returning the count."""

    def run(tree):
        find = subprocess.Popen(["find", tree, *predicates], stdout=subprocess.PIPE)
        out = subprocess.run(["wc", "-l"], stdin=find.stdout, capture_output=True, check=True)
        find.stdout.close()
        if find.wait() != 0:
            raise RuntimeError(f"find exited with {find.returncode}")
        return int(out.stdout)

    return run


def median_of(func, repeats=REPEATS):
    """(median seconds, every run's seconds, the last value) of repeats runs."""
    runs, value = [], None
    for _attempt in range(repeats):
        seconds, value = timed(func)
        runs.append(seconds)
    return statistics.median(runs), runs, value


def main():
    if os.geteuid() != 0:
        print("benchmarks/tree_owner.py: needs root (it changes owners); skipped")
        return 0
    tree_owner = load_tree_owner()
    find_wrong_uid = find_count("-not", "-uid", str(UID))
    find_wrong = find_count("-not", "-uid", str(UID), "-o", "-not", "-gid", str(GID))

    top = tempfile.mkdtemp(prefix="gb10-bench-tree-owner-")
    try:
        build_seconds, tree = timed(lambda: build_tree(top))
        entries = 1 + DIRS + DIRS * FILES_PER_DIR

        find_before, find_before_runs, wrong_before = median_of(lambda: find_wrong_uid(tree))
        first, report = timed(lambda: tree_owner.repair_tree(tree, UID, GID))
        assert (report.scanned, report.fixed, report.error_count) == (entries, entries, 0)
        rerun, rerun_runs, again = median_of(lambda: tree_owner.repair_tree(tree, UID, GID))
        assert (again.scanned, again.fixed) == (entries, 0)
        floor, floor_runs, wrong_after = median_of(lambda: find_wrong(tree))
        assert (wrong_before, wrong_after) == (entries, 0)
    finally:
        shutil.rmtree(top)

    figures = {
        "benchmark": "tree_owner",
        "files": DIRS * FILES_PER_DIR,
        "directories": DIRS,
        "entries": entries,
        "owner": f"{UID}:{GID}",
        "repeats": REPEATS,
        "build_seconds": round(build_seconds, 4),
        "first_repair_seconds": round(first, 4),
        "rerun_seconds": round(rerun, 4),
        "rerun_runs": [round(value, 4) for value in rerun_runs],
        "find_floor_seconds": round(floor, 4),
        "find_floor_runs": [round(value, 4) for value in floor_runs],
        "find_before_seconds": round(find_before, 4),
        "find_before_runs": [round(value, 4) for value in find_before_runs],
        "rerun_over_find": round(rerun / floor, 2),
        "first_over_find": round(first / floor, 2),
        "entries_per_second_rerun": round(entries / rerun),
        "entries_per_second_first": round(entries / first),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")

    median = f"median of {REPEATS}"
    print(f"tree_owner: {entries} entries ({DIRS} dirs x {FILES_PER_DIR} files)")
    rows = [
        ("find -not -uid, before repair", find_before, median),
        ("first repair (all wrong)", first, "once"),
        ("re-run (nothing wrong)", rerun, median),
        ("find floor (-not -uid -o -not -gid)", floor, median),
    ]
    for label, seconds, how in rows:
        print(f"  {label:<38} {seconds:8.3f} s  {how}")
    print(f"  re-run / find floor {rerun / floor:.2f}x, first / find floor {first / floor:.2f}x")
    print(f"  written: {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
