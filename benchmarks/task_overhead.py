#!/usr/bin/env python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the gb10.serving.preload callback saves: site.yml in check mode on the lab, run with
the callbacks ansible.cfg enables and with the preload left out, in turn, so that both see
the same machine. Each run's wall time and the CPU time of ansible-playbook and every
process it waited for (its workers, ssh, the controller's modules).

Needs the lab up and converged (`make demo`, or `make lab-up` and site.yml): a check run on
fresh nodes stops at the engine stage. Writes reports/bench/task-overhead.json and .md.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "bench"
INVENTORY = ROOT / "inventory" / "lab"
ROUNDS = int(os.environ.get("GB10_BENCH_ROUNDS", "3"))
# The variants: the checkout's callbacks, and the same without the preload.
VARIANTS = {
    "with preload": "ansible.builtin.profile_tasks,gb10.serving.preload",
    "without preload": "ansible.builtin.profile_tasks",
}
RUNS = {
    "site.yml --check --tags vllm": ["--check", "--tags", "vllm"],
    "site.yml --check": ["--check"],
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(args: list[str], callbacks: str) -> dict:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_CALLBACKS_ENABLED": callbacks,
    }
    cpu, start = children_cpu(), time.monotonic()
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(INVENTORY), "site.yml", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall, cpu = time.monotonic() - start, children_cpu() - cpu
    if proc.returncode != 0:
        sys.exit(f"site.yml {' '.join(args)} failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}")
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}


def main() -> int:
    result = {"rounds": ROUNDS, "runs": {}}
    for label, args in RUNS.items():
        samples = {variant: [] for variant in VARIANTS}
        for _round in range(ROUNDS):
            for variant, callbacks in VARIANTS.items():
                samples[variant].append(timed_run(args, callbacks))
        result["runs"][label] = {
            variant: {
                "samples": runs,
                "median_wall_s": statistics.median(r["wall_s"] for r in runs),
                "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
            }
            for variant, runs in samples.items()
        }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "task-overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Task overhead: the preload callback",
        "",
        f"Medians of {ROUNDS} runs each, taken in turn, on the converged lab.",
        "",
        "| run | variant | wall (s) | CPU (s) |",
        "|---|---|---:|---:|",
    ]
    for label, variants in result["runs"].items():
        for variant, figures in variants.items():
            lines.append(
                f"| {label} | {variant} | {figures['median_wall_s']} | {figures['median_cpu_s']} |"
            )
    (OUT / "task-overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
