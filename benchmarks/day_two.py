#!/usr/bin/env python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Day two on the lab: how long the doctor takes on a healthy cluster, and how long the
watchdog takes from a killed worker to serving again.

Needs the lab up (`make lab-up`); it runs site.yml first (a cold boot on a fresh lab, a no-op
on a converged one), then playbooks/doctor.yml three times, then installs the watchdog with
a 5 s canary and 2 failures, kills node1's worker processes, and times the first completion
that comes back through the API. It removes the watchdog at the end. Writes
reports/bench/day-two.json and .md.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "bench"
INVENTORY = ROOT / "inventory" / "lab"
KEY_FILE = ROOT / ".cache" / "lab" / "vllm-api-key"
WORKER_ENGINE = "gb10-lab-node1-vllm"
HEAD_NODE = "gb10-lab-node0"
WATCHDOG = {
    "watchdog_enabled": True,
    "watchdog_interval": 5,
    "watchdog_failures": 2,
    "watchdog_canary_timeout": 4,
    "watchdog_boot_timeout": 600,
}
DEADLINE = 900  # seconds the recovery may take before the benchmark gives up


def playbook(path: str, *args: str) -> float:
    began = time.monotonic()
    subprocess.run(
        ["ansible-playbook", "-i", str(INVENTORY), str(ROOT / path), *args],
        check=True,
        stdout=subprocess.DEVNULL,
        env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")),
    )
    return time.monotonic() - began


def head_address() -> str:
    return subprocess.run(
        [
            "docker",
            "inspect",
            "-f",
            '{{(index .NetworkSettings.Networks "gb10-lab-mgmt").IPAddress}}',
            HEAD_NODE,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def completes(url: str, key: str) -> bool:
    body = json.dumps({"model": "gb10-lab/tiny-llama", "prompt": "Hi", "max_tokens": 2}).encode()
    request = urllib.request.Request(  # noqa: S310 (the lab's own head)
        url,
        data=body,
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + key},
    )
    try:
        with urllib.request.urlopen(request, timeout=4) as answer:  # noqa: S310
            return answer.status == 200
    except (OSError, ValueError):
        return False


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    playbook("site.yml")
    doctor = [playbook("playbooks/doctor.yml") for _number in range(3)]
    result = {
        "doctor_seconds": [round(s, 1) for s in doctor],
        "doctor_median_seconds": round(statistics.median(doctor), 1),
    }
    playbook("site.yml", "--tags", "watchdog", "-e", json.dumps(WATCHDOG))
    try:
        url = f"http://{head_address()}:8000/v1/completions"
        key = KEY_FILE.read_text().strip()
        script = (
            "for p in /proc/[0-9]*; do case \"$(tr '\\0' ' ' < $p/cmdline)\" in "
            "VLLM::Worker*) kill -9 ${p#/proc/};; esac; done"
        )
        subprocess.run(["docker", "exec", WORKER_ENGINE, "sh", "-c", script], check=True)
        killed = time.monotonic()
        time.sleep(5)
        while not completes(url, key):
            if time.monotonic() - killed > DEADLINE:
                result["recovery"] = f"not serving after {DEADLINE} s"
                break
            time.sleep(2)
        else:
            result["killed_worker_to_serving_seconds"] = round(time.monotonic() - killed, 1)
        result["watchdog"] = {k: v for k, v in WATCHDOG.items() if k != "watchdog_enabled"}
    finally:
        playbook("site.yml", "--tags", "watchdog")
    (OUT / "day-two.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Day two on the lab: the doctor and the watchdog", ""]
    lines += [f"- {key}: {value}" for key, value in result.items()]
    (OUT / "day-two.md").write_text("\n".join(lines) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if "killed_worker_to_serving_seconds" in result else 1


if __name__ == "__main__":
    sys.exit(main())
