"""Bench stage on the lab: warm-up, vllm bench serve, deep request, tool calls, report."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import (
    LAB_VARS,
    REPORTS,
    ROOT,
    run_playbook,
)

BENCH = ROOT / "playbooks" / "bench.yml"
SWEEP = ROOT / "playbooks" / "sweep.yml"
ENGINES = ("gb10-lab-node0-vllm", "gb10-lab-node1-vllm")
# The bench settings the report was measured with (the lab's; the roles' defaults differ).
# Tokens the chat template puts around each random prompt (vllm bench serve's openai-chat
# backend counts the prompt as the engine saw it): a few, never this many.
TEMPLATE_TOKENS = 32
# roles/bench/tasks/measure.yml sends at least this many prompts per concurrency.
MIN_PROMPTS = 8


def engine_ids() -> list[str]:
    out = subprocess.run(
        ["docker", "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", *ENGINES],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split("\n")


def engine_label() -> str:
    return subprocess.run(
        [
            "docker",
            "inspect",
            "-f",
            '{{index .Config.Labels "io.gb10-serving.deployment"}}',
            ENGINES[0],
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def report_dirs() -> set:
    return {path for path in REPORTS.glob("*-*") if (path / "bench.json").exists()}


@pytest.fixture(scope="module")
def bench_run(converged):
    """The report site.yml wrote when it measured the deployment it started (the converge on
    the purged lab boots the engines, then benches them once: no second bench is run here)."""
    fingerprint = engine_label()[:12]
    reports = sorted(REPORTS.glob(f"*-{fingerprint}/bench.json"))
    assert reports, "site.yml left no report of the deployment it started"
    return converged, reports[-1].parent


def test_bench_json_holds_every_figure_and_the_fingerprint(bench_run):
    _run, dest = bench_run
    report = json.loads((dest / "bench.json").read_text())
    assert report["schema_version"] == 1
    assert report["lab"] is True
    assert [run["concurrency"] for run in report["runs"]] == [1, 4]  # the lab inventory's
    for run in report["runs"]:
        assert run["successful_requests"] >= 8
        assert run["failed_requests"] == 0
        assert run["output_throughput"] > 0
    assert report["warmup"]["requests"] == 4
    assert report["tool_calls"]["total"] == 3
    assert report["deep"]
    labels = engine_label()
    assert report["deployment"]["fingerprint"] == labels
    assert dest.name.endswith("-" + labels[:12])
    assert report["deployment"]["node_count"] == 2
    assert len(report["deployment"]["model_revision"]) == 40


def test_the_report_measured_the_inventory_s_lengths_and_prompt_counts(bench_run):
    """bench_input_len, bench_output_len, bench_prompts_per_concurrency, bench_deep_input_len
    and bench_deep_output_len, as the lab sets them, are what each run of the report shows
    (vllm bench serve ignores EOS, so every request generates exactly its output length)."""
    _run, dest = bench_run
    report = json.loads((dest / "bench.json").read_text())
    for run in report["runs"]:
        prompts = max(LAB_VARS["bench_prompts_per_concurrency"] * run["concurrency"], MIN_PROMPTS)
        assert run["successful_requests"] == prompts, run["concurrency"]
        assert run["total_generated_tokens"] == prompts * LAB_VARS["bench_output_len"]
        per_prompt = run["total_input_tokens"] / prompts
        assert (
            LAB_VARS["bench_input_len"]
            <= per_prompt
            < LAB_VARS["bench_input_len"] + TEMPLATE_TOKENS
        ), run["concurrency"]
    deep = report["deep"]
    assert deep["output_tokens"] == LAB_VARS["bench_deep_output_len"]
    assert (
        LAB_VARS["bench_deep_input_len"]
        <= deep["prompt_tokens"]
        < LAB_VARS["bench_deep_input_len"] + TEMPLATE_TOKENS
    )


def test_bench_md_has_the_field_report_columns_and_reference(bench_run):
    run, dest = bench_run
    text = (dest / "bench.md").read_text()
    for column in ("single-stream", "conc-4", "conc-8", "conc-16", "deep single", "tool-calls"):
        assert column in text
    assert "hybrid-v3" in text
    assert "tiny" in text  # the lab's figures say what they are
    assert (dest / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any(str(dest) in msg for msg in run.debug_messages)


# One representative: the checks themselves (an empty list, a concurrency above the running
# engine's max_num_seqs) are unit-tested; this proves the playbook stops before measuring.
def test_bad_bench_input_fails_before_anything_runs(converged, tmp_path):
    before_dirs, before_ids = report_dirs(), engine_ids()
    run = run_playbook(BENCH, tmp_path, extravars={"bench_concurrency": [1, 32]})
    assert run.status == "failed"
    assert run.count("changed") == 0
    assert "bench_concurrency" in "\n".join(run.failure_messages)
    assert report_dirs() == before_dirs
    assert engine_ids() == before_ids


# The sweep checks every variant before it redeploys anything (the checks themselves, an
# empty sweep, an unknown key, are unit-tested); a variant the vllm role's preflight refuses
# stops the whole sweep up front.
def test_a_bad_sweep_variant_fails_before_anything_is_redeployed(converged, tmp_path):
    before_dirs, before_ids = set(REPORTS.glob("*-sweep")), engine_ids()
    run = run_playbook(
        SWEEP, tmp_path, extravars={"bench_sweep_variants": {"tensor_parallel": [2, 3]}}
    )
    assert run.status == "failed"
    assert run.count("changed") == 0
    assert "tensor_parallel" in "\n".join(run.failure_messages)
    assert set(REPORTS.glob("*-sweep")) == before_dirs
    assert engine_ids() == before_ids
