#!/usr/bin/env python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Three lab engines at pipeline parallel 3: does this machine hold a three-Spark cluster?

Issue 16 asks for the boot time and peak memory of three nodes running the real CPU engine.
The lab's tiny model (2 layers, 2 attention heads) cannot be split three ways, so this
benchmark lays a 3-layer variant of it (the same generator, ``LAYERS = 3``; the engine image
is not changed) into three caches and starts three engine containers from the lab's engine
image, each in its own network namespace on a Docker network standing for the switch (MTU
9000), as the lab's two-node measurement in lab/engine/README.md does: ranks 2 and 1
headless first, then the head; vLLM's mp executor, ``--nnodes 3``, ``-pp 3 -tp 1``, ``-O0``.

It measures the time from the first container's start to the head's ``/health`` answering,
the peak of the three containers' memory together (``docker stats``, every 2 s), and whether a
completion comes back within COMPLETION_TIMEOUT (curl prints 000 when it does not).
Figures go to reports/bench/three-node-engines.{json,md}. It needs the
engine image (`python3 lab/labctl.py image --only engine`) and nothing else of the lab; run it
on a quiet machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "bench"
IMAGE = "gb10-lab-engine:lab"
NETWORK = "gb10-bench-switch"
SUBNET = "192.168.78.0/24"
PREFIX = "gb10-bench-pp3-"
REPO = "gb10-lab/tiny-llama-3l"
NODES = 3
UID = "1000:1000"
TIMEOUT = 900
# How long a completion through the three-stage pipeline may take.
COMPLETION_TIMEOUT = 900
LAY_MODEL = (
    "import sys; sys.path.insert(0, '/opt/lab'); import tiny_model as t; t.LAYERS = 3; "
    f"sys.exit(t.main(['--cache', '/cache/huggingface', '--repo', '{REPO}']))"
)


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check)


def address(rank: int) -> str:
    return f"192.168.78.{10 + rank}"


def cleanup() -> None:
    names = [
        n
        for n in docker("ps", "-a", "--format", "{{.Names}}").stdout.split()
        if n.startswith(PREFIX)
    ]
    if names:
        docker("rm", "-f", *names, check=False)
    docker("network", "rm", NETWORK, check=False)


def lay_model(cache: Path) -> str:
    cache.mkdir(parents=True)
    shutil.chown(cache, 1000, 1000)
    proc = docker(
        "run",
        "--rm",
        "--user",
        UID,
        "-v",
        f"{cache}:/cache/huggingface",
        IMAGE,
        "python",
        "-c",
        LAY_MODEL,
    )
    return proc.stdout.split()[0]


def start(rank: int, cache: Path, revision: str) -> None:
    role = ["--host", "127.0.0.1", "--port", "8000"] if rank == 0 else ["--headless"]
    docker(
        "run",
        "-d",
        "--name",
        f"{PREFIX}{rank}",
        "--network",
        NETWORK,
        "--ip",
        address(rank),
        "--shm-size=1g",
        "--user",
        UID,
        "-v",
        f"{cache}:/cache/huggingface",
        "-e",
        "HF_HOME=/cache/huggingface",
        "-e",
        "HF_HUB_OFFLINE=1",
        "-e",
        "VLLM_CPU_KVCACHE_SPACE=1",
        "-e",
        "OMP_NUM_THREADS=1",
        "-e",
        f"VLLM_CPU_OMP_THREADS_BIND={rank % 2}",
        "-e",
        "GLOO_SOCKET_IFNAME=eth0",
        "-e",
        f"VLLM_HOST_IP={address(rank)}",
        "-e",
        "XDG_CACHE_HOME=/cache/huggingface/jitcache",
        IMAGE,
        "vllm",
        "serve",
        REPO,
        "--revision",
        revision,
        "--max-model-len",
        "512",
        "--dtype",
        "bfloat16",
        "--tensor-parallel-size",
        "1",
        "--pipeline-parallel-size",
        str(NODES),
        "--nnodes",
        str(NODES),
        "--node-rank",
        str(rank),
        "--master-addr",
        address(0),
        "--master-port",
        "29500",
        "--distributed-executor-backend",
        "mp",
        "-O0",
        *role,
    )


def memory_mib() -> dict[str, float]:
    proc = docker(
        "stats",
        "--no-stream",
        "--format",
        "{{.Name}} {{.MemUsage}}",
        *(f"{PREFIX}{r}" for r in range(NODES)),
        check=False,
    )
    found = {}
    for line in proc.stdout.splitlines():
        name, used = line.split()[0], line.split()[1]
        scale = {"GiB": 1024.0, "MiB": 1.0, "KiB": 1 / 1024}
        unit = next((u for u in scale if used.endswith(u)), None)
        if unit:
            found[name] = float(used[: -len(unit)]) * scale[unit]
    return found


def running(rank: int) -> bool:
    return (
        docker("inspect", "-f", "{{.State.Running}}", f"{PREFIX}{rank}", check=False).stdout.strip()
        == "true"
    )


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    cleanup()
    docker(
        "network", "create", "--subnet", SUBNET, "-o", "com.docker.network.driver.mtu=9000", NETWORK
    )
    work = Path(tempfile.mkdtemp(prefix="gb10-pp3-"))
    result = {"nodes": NODES, "tensor_parallel": 1, "pipeline_parallel": NODES, "model": REPO}
    try:
        revisions = [lay_model(work / f"cache{rank}") for rank in range(NODES)]
        began = time.monotonic()
        for rank in reversed(range(NODES)):
            start(rank, work / f"cache{rank}", revisions[rank])
        peak_total, peak_each = 0.0, {}
        while True:
            elapsed = time.monotonic() - began
            sample = memory_mib()
            peak_total = max(peak_total, sum(sample.values()))
            for name, value in sample.items():
                peak_each[name] = max(peak_each.get(name, 0.0), value)
            health = docker(
                "exec", f"{PREFIX}0", "curl", "-sf", "http://127.0.0.1:8000/health", check=False
            )
            if health.returncode == 0:
                result["boot_seconds"] = round(elapsed, 1)
                break
            stopped = [rank for rank in range(NODES) if not running(rank)]
            if stopped or elapsed > TIMEOUT:
                rank = stopped[0] if stopped else 0
                tail = docker("logs", "--tail", "20", f"{PREFIX}{rank}", check=False)
                result["failure"] = (
                    f"rank {rank} {'stopped' if stopped else 'timed out'} after {elapsed:.0f} s"
                )
                result["log_tail"] = (tail.stdout + tail.stderr).splitlines()[-20:]
                break
            time.sleep(2)
        if "boot_seconds" in result:
            body = json.dumps({"model": REPO, "prompt": "Hello", "max_tokens": 8})
            answer = docker(
                "exec",
                f"{PREFIX}0",
                "curl",
                "-s",
                "--max-time",
                str(COMPLETION_TIMEOUT),
                "-w",
                "\n%{http_code} %{time_total}",
                "-H",
                "Content-Type: application/json",
                "-d",
                body,
                "http://127.0.0.1:8000/v1/completions",
                check=False,
            )
            body_text, tail = (["", *answer.stdout.rsplit("\n", 1)])[-2:]
            status, seconds = ([*tail.split(" ", 1), ""])[:2]
            result["completion_status"] = status
            result["completion_seconds"] = float(seconds or 0)
            if status != "200":
                result["completion_body"] = body_text[:500]
            log = docker("logs", f"{PREFIX}0", check=False)
            head_lines = (log.stdout + log.stderr).splitlines()
            result["head_log_world"] = [line for line in head_lines if "world_size=" in line][:1]
            if status != "200":
                result["head_log_errors"] = [
                    line for line in head_lines if "ERROR" in line or "Error" in line
                ][-10:]
        result["peak_memory_mib_total"] = round(peak_total)
        result["peak_memory_mib"] = {
            name: round(value) for name, value in sorted(peak_each.items())
        }
    finally:
        cleanup()
        shutil.rmtree(work, ignore_errors=True)
    (OUT / "three-node-engines.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Three lab engines, pipeline parallel 3", ""]
    lines += [f"- {key}: {value}" for key, value in result.items() if key != "log_tail"]
    (OUT / "three-node-engines.md").write_text("\n".join(lines) + "\n")
    print(json.dumps(result, indent=2))
    # The figures asked for are the boot and its memory; the completion's fate is reported.
    return 0 if "boot_seconds" in result else 1


if __name__ == "__main__":
    sys.exit(main())
