#!/usr/bin/env python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark the vLLM log parser (module_utils/_vllm_log.py) against grep.

Builds a log of --size-mb MB (default 1024) in a temporary directory by repeating the real
lines of every fixtures/vllm/*.log capture, all files one after the other (boot logs of
0.11 to 0.32, the lab's CPU engine, stats and SpecDecoding lines, the error samples with
their tracebacks), so KV cache lines, throughput lines and errors all recur. Then, with the
file in the page cache (just written):

  grep      grep -c 'KV cache size' FILE, LC_ALL=C (wall time of the process)
  parse     in a child process: the file read in 64 KiB binary chunks and fed the way the
            vllm_boot_info module feeds a container log with a TTY (demux, per-stream
            lines, VllmLogParser.feed_bytes), timed with time.perf_counter; the child's
            peak resident set (ru_maxrss) before and after the parse
  framed    the same in a child, for a container without a TTY: the first --framed-mb MB
            as Docker frames it (one 8-byte header per line, as the json-file log driver
            sends it), demultiplexed first (0 skips it)
  serving   in a child, --serving-mb MB of what a serving engine mostly logs (uvicorn's
            access log, throughput and SpecDecoding lines, from the same captures; 0
            skips it), parsed the tty way: the usual case, next to the error-dense mixture
  traced    in another child: the first --tracemalloc-mb MB parsed under tracemalloc, for
            the peak of Python allocations (tracemalloc slows the parse; the peak does not
            depend on the size, as nothing is kept per line)

and checks that the parser counted as many KV cache size lines as grep. Prints a table and
writes reports/bench/vllm_log_parse.json. Run from anywhere; `make bench` runs it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE_UTILS = ROOT / "plugins" / "module_utils"
FIXTURES = ROOT / "tests" / "unit" / "plugins" / "module_utils" / "fixtures" / "vllm"
REPORT = ROOT / "reports" / "bench" / "vllm_log_parse.json"
CHUNK = 1 << 16  # what the module asks the Docker socket for at a time
MB = 1000 * 1000
TARGET_MB_S = 150
TARGET_PEAK_MB = 64


def load(name):
    """plugins/module_utils/<name>.py imported by path (no ansible_collections needed)."""
    spec = importlib.util.spec_from_file_location(name, MODULE_UTILS / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build_log(path, size_mb):
    """Write the fixtures' lines over and over until size_mb MB; returns (bytes, copies)."""
    block = b""
    for fixture in sorted(FIXTURES.glob("*.log")):
        data = fixture.read_bytes()
        block += data if data.endswith(b"\n") else data + b"\n"
    copies = max(1, -(-size_mb * MB // len(block)))
    with open(path, "wb") as out:
        for _copy in range(copies):
            out.write(block)
    return copies * len(block), copies


def build_serving_log(path, size_mb):
    """A serving engine's log: the lab log's lines between startup and shutdown (uvicorn's
    access log, throughput lines) and the SpecDecoding samples, repeated; returns bytes."""
    lab = (FIXTURES / "vllm_cpu_tiny_llama_boot_v0.32.log").read_bytes()
    start = lab.index(b"INFO:     Application startup complete.")
    serving = lab[start : lab.index(b"[shutdown]", start)]
    serving = serving[: serving.rindex(b"\n") + 1]
    samples = (FIXTURES / "vllm_stats_and_specdecode_lines_samples.log").read_bytes()
    spec = b"".join(
        line for line in samples.splitlines(keepends=True) if b"SpecDecoding metrics" in line
    )
    block = serving + spec
    copies = max(1, -(-size_mb * MB // len(block)))
    with open(path, "wb") as out:
        for _copy in range(copies):
            out.write(block)
    return copies * len(block)


def frame_file(source, path, size_mb):
    """The first size_mb MB of source (whole lines), one Docker frame per line; returns
    the bytes of log it holds (headers not counted)."""
    limit = size_mb * MB
    done = 0
    with open(source, "rb") as src, open(path, "wb") as out:
        for line in src:
            out.write(b"\x01\x00\x00\x00" + len(line).to_bytes(4, "big") + line)
            done += len(line)
            if done >= limit:
                break
    return done


def child(path, mode, limit_mb):
    """Parse in this (child) process; print a JSON line of figures."""
    docker_logs = load("_docker_logs")
    vllm_log = load("_vllm_log")
    tracing = mode == "traced"
    if tracing:
        import tracemalloc

        tracemalloc.start()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    limit = limit_mb * MB if limit_mb else None

    def chunks(handle):
        read = 0
        while limit is None or read < limit:
            chunk = handle.read(CHUNK)
            if not chunk:
                return
            read += len(chunk)
            yield chunk

    parser = vllm_log.VllmLogParser()
    with open(path, "rb") as handle:
        start = time.perf_counter()
        for block in docker_logs.log_blocks(chunks(handle), tty=(mode != "framed")):
            parser.feed_bytes(block)
        result = parser.result()
        seconds = time.perf_counter() - start
        size = handle.tell()
    figures = {
        "seconds": seconds,
        "bytes": size,
        "lines": result["lines"],
        "kv_lines": result["kv_lines"],
        "errors": len(result["errors"]),
        "maxrss_before_kib": rss_before,
        "maxrss_after_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    if tracing:
        figures["tracemalloc_peak_bytes"] = tracemalloc.get_traced_memory()[1]
    print(json.dumps(figures))
    return 0


def run_child(path, mode, limit_mb=0):
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--limit-mb", str(limit_mb), str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def grep_count(path):
    start = time.perf_counter()
    out = subprocess.run(
        ["grep", "-c", "KV cache size", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, LC_ALL="C"),
    )
    seconds = time.perf_counter() - start
    if out.returncode not in (0, 1):
        raise RuntimeError(f"grep failed: {out.stderr}")
    return seconds, int(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="log size in MB (10^6 bytes)")
    parser.add_argument("--framed-mb", type=int, default=128, help="framed part, MB (0: skip)")
    parser.add_argument("--tracemalloc-mb", type=int, default=256, help="traced part, MB")
    parser.add_argument(
        "--serving-mb", type=int, default=256, help="serving-shaped log, MB (0: skip)"
    )
    parser.add_argument("--child", choices=["raw", "framed", "traced"], help=argparse.SUPPRESS)
    parser.add_argument("--limit-mb", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("file", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.file, args.child, args.limit_mb)

    top = tempfile.mkdtemp(prefix="gb10-bench-vllm-log-")
    try:
        log = os.path.join(top, "engine.log")
        build_start = time.perf_counter()
        size, copies = build_log(log, args.size_mb)
        build_seconds = time.perf_counter() - build_start
        grep_seconds, grep_kv = grep_count(log)
        raw = run_child(log, "raw")
        framed = None
        if args.framed_mb:
            framed_path = os.path.join(top, "engine.framed")
            framed_log_bytes = frame_file(log, framed_path, args.framed_mb)
            framed = run_child(framed_path, "framed")
            framed["log_bytes"] = framed_log_bytes
            os.unlink(framed_path)
        traced = run_child(log, "traced", args.tracemalloc_mb)
        serving = None
        if args.serving_mb:
            os.unlink(log)
            serving_path = os.path.join(top, "serving.log")
            build_serving_log(serving_path, args.serving_mb)
            serving = run_child(serving_path, "raw")
    finally:
        shutil.rmtree(top)

    mb_s = raw["bytes"] / MB / raw["seconds"]
    rss_delta_mib = (raw["maxrss_after_kib"] - raw["maxrss_before_kib"]) / 1024
    traced_peak_mib = traced["tracemalloc_peak_bytes"] / (1 << 20)
    figures = {
        "benchmark": "vllm_log_parse",
        "size_bytes": size,
        "fixture_copies": copies,
        "lines": raw["lines"],
        "build_seconds": round(build_seconds, 3),
        "grep_seconds": round(grep_seconds, 3),
        "grep_kv_lines": grep_kv,
        "parser_seconds": round(raw["seconds"], 3),
        "parser_mb_per_s": round(mb_s, 1),
        "parser_lines_per_s": round(raw["lines"] / raw["seconds"]),
        "parser_kv_lines": raw["kv_lines"],
        "kv_lines_match_grep": raw["kv_lines"] == grep_kv,
        "parser_over_grep": round(raw["seconds"] / grep_seconds, 1),
        "maxrss_before_parse_mib": round(raw["maxrss_before_kib"] / 1024, 1),
        "maxrss_after_parse_mib": round(raw["maxrss_after_kib"] / 1024, 1),
        "maxrss_delta_mib": round(rss_delta_mib, 1),
        "tracemalloc_mb_parsed": round(traced["bytes"] / MB, 1),
        "tracemalloc_peak_mib": round(traced_peak_mib, 2),
        "target_mb_per_s": TARGET_MB_S,
        "target_peak_mib": TARGET_PEAK_MB,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    if framed is not None:
        figures["framed_log_mb_parsed"] = round(framed["log_bytes"] / MB, 1)
        figures["framed_stream_mb"] = round(framed["bytes"] / MB, 1)
        figures["framed_log_mb_per_s"] = round(framed["log_bytes"] / MB / framed["seconds"], 1)
    if serving is not None:
        figures["serving_log_mb"] = round(serving["bytes"] / MB, 1)
        figures["serving_log_mb_per_s"] = round(serving["bytes"] / MB / serving["seconds"], 1)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")

    print(
        f"vllm_log_parse: {size / MB:.0f} MB, {raw['lines']} lines"
        f" ({copies} copies of the fixtures)"
    )
    rows = [
        ("grep -c 'KV cache size' (LC_ALL=C)", f"{grep_seconds:8.2f} s", f"{grep_kv} lines"),
        (
            "parser, 64 KiB chunks (tty path)",
            f"{raw['seconds']:8.2f} s",
            f"{mb_s:.1f} MB/s, {raw['kv_lines']} KV lines",
        ),
    ]
    if framed is not None:
        rows.append(
            (
                f"parser, Docker frames ({framed['log_bytes'] / MB:.0f} MB of log)",
                f"{framed['seconds']:8.2f} s",
                f"{figures['framed_log_mb_per_s']:.1f} MB/s of log (non-tty path)",
            )
        )
    if serving is not None:
        rows.append(
            (
                f"parser, serving-shaped log ({serving['bytes'] / MB:.0f} MB)",
                f"{serving['seconds']:8.2f} s",
                f"{figures['serving_log_mb_per_s']:.1f} MB/s (access log + stats lines)",
            )
        )
    rows += [
        (
            "peak RSS of the parsing child",
            f"{raw['maxrss_after_kib'] / 1024:8.1f} MiB",
            f"{rss_delta_mib:+.1f} MiB during the parse (ru_maxrss)",
        ),
        (
            f"tracemalloc peak ({traced['bytes'] / MB:.0f} MB parsed)",
            f"{traced_peak_mib:8.2f} MiB",
            "Python allocations only",
        ),
    ]
    for label, value, note in rows:
        print(f"  {label:<40} {value}  {note}")
    print(
        f"  parser / grep {raw['seconds'] / grep_seconds:.1f}x; KV lines match grep:"
        f" {raw['kv_lines'] == grep_kv}; targets: >= {TARGET_MB_S} MB/s"
        f" ({'met' if mb_s >= TARGET_MB_S else 'NOT met'}), peak < {TARGET_PEAK_MB} MiB"
        f" ({'met' if raw['maxrss_after_kib'] / 1024 < TARGET_PEAK_MB else 'NOT met'})"
    )
    print(f"  written: {REPORT.relative_to(ROOT)}")
    return 0 if raw["kv_lines"] == grep_kv else 1


if __name__ == "__main__":
    sys.exit(main())
