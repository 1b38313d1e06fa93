"""playbooks/sweep.yml on the lab: variants deployed in turn, measured, compared, kept."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import ROOT, run_playbook

SWEEP = ROOT / "playbooks" / "sweep.yml"
SITE = ROOT / "site.yml"
REPORTS = ROOT / "reports"
HEAD = "gb10-lab-node0-vllm"
# Small bench settings: the sweep's pipeline is the point, not the figures.
SMALL = {
    "bench_concurrency": [1, 4],
    "bench_warmup_requests": 2,
    "bench_deep_input_len": 200,
}


def head_state() -> tuple[str, str, str]:
    """The head engine's ID, deployment label and command line."""
    out = subprocess.run(
        [
            "docker",
            "inspect",
            "-f",
            '{{.Id}}|{{index .Config.Labels "io.gb10-serving.deployment"}}|{{json .Config.Cmd}}',
            HEAD,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    container_id, label, command = out.split("|", 2)
    return container_id, label, " ".join(json.loads(command))


def sweep_dirs() -> set:
    return set(REPORTS.glob("*-sweep"))


@pytest.fixture(scope="module")
def sweep_run(converged, tmp_path_factory):
    before_dirs, before = sweep_dirs(), head_state()
    # In this order the sweep boots twice: "start" is what runs (no restart), "broken" fails
    # and stops the engines, "short" boots and, being the best, stays; site.yml restores.
    variants = [
        {"name": "start", "overrides": {"max_model_len": 512}},
        {"name": "broken", "overrides": {"dtype": "bfloat16 --no-such-flag"}},
        {"name": "short", "overrides": {"max_model_len": 256}},
    ]
    run = run_playbook(
        SWEEP,
        tmp_path_factory.mktemp("sweep"),
        extravars={
            **SMALL,
            "bench_sweep_variants": variants,
            "bench_sweep_keep": "best",
            "bench_sweep_rank_by": "max_concurrency",
        },
    )
    after = head_state()
    new = sorted(sweep_dirs() - before_dirs)
    # Whatever happened, put the lab back on the inventory's recipe for the tests after these.
    restore = run_playbook(SITE, tmp_path_factory.mktemp("restore"))
    return run, new, before, after, restore


def test_the_sweep_compares_every_variant(sweep_run):
    run, new, _before, _after, _restore = sweep_run
    assert run.status == "successful", run.failure_messages
    assert len(new) == 1, new
    sweep = json.loads((new[0] / "sweep.json").read_text())
    rows = {row["name"]: row for row in sweep["variants"]}
    assert list(rows) == ["start", "broken", "short"]
    # Boot facts per variant, from each variant's own boot log: half the context, twice the
    # requests the same KV pool holds.
    start, short = rows["start"]["values"], rows["short"]["values"]
    assert start["kv_cache_tokens"] == short["kv_cache_tokens"] > 0
    assert short["max_concurrency"] == pytest.approx(2 * start["max_concurrency"], rel=0.01)
    for values in (start, short):
        assert values["single_stream"] > 0
        assert values["conc_4"] > 0
    assert sweep["best"]["max_concurrency"] == ["short"]
    # The broken variant is recorded with its cause; the sweep went on.
    assert "--no-such-flag" in rows["broken"]["failed"]
    assert set(rows["broken"]["values"].values()) == {None}
    markdown = (new[0] / "sweep.md").read_text()
    assert "| broken (failed) |" in markdown
    assert "- max concurrency: short" in markdown
    assert (new[0] / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for index in ("01", "03"):
        assert json.loads((new[0] / index / "bench.json").read_text())["runs"]


def test_the_sweep_leaves_the_best_variant_running_and_site_restores(sweep_run):
    _run, _new, before, after, restore = sweep_run
    assert "--max-model-len 256" in after[2]
    assert after[1] != before[1]
    assert restore.status == "successful", restore.failure_messages
    restored = head_state()
    assert restored[1] == before[1]  # the inventory's deployment fingerprint again
    assert "--max-model-len 512" in restored[2]


# The other bad inputs (a scalar where a grid wants a list, max_num_seqs below a concurrency,
# an unknown rank column) are the same checks, unit-tested in test_bench_report.py.
@pytest.mark.parametrize(
    ("extravars", "fragment"),
    [
        ({}, "bench_sweep_variants is empty"),
        (
            {"bench_sweep_variants": {"max_model_length": [256]}},
            "did you mean 'max_model_len'",
        ),
        (
            {"bench_sweep_variants": {"tensor_parallel": [2, 3]}},
            "tensor_parallel",
        ),
    ],
    ids=["empty", "unknown-key", "tp-3"],
)
def test_bad_sweep_input_fails_before_anything_is_redeployed(
    converged, tmp_path, extravars, fragment
):
    before_dirs, before = sweep_dirs(), head_state()
    run = run_playbook(SWEEP, tmp_path, extravars=extravars)
    assert run.status == "failed"
    assert run.count("changed") == 0
    assert fragment in "\n".join(run.failure_messages)
    assert sweep_dirs() == before_dirs
    assert head_state() == before
