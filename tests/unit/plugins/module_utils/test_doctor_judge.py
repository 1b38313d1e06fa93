# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The doctor's judgement of a whole cluster, on what its observe entry points really read.

fixtures/doctor/observed-lab-healthy.json is fabric_observed, node_observed and
vllm_observed of both nodes of the converged lab (playbooks/doctor.yml's first play, dumped);
each fault case changes that capture the way the fault changes what a node shows, and the
report must name it, on the right node, with a fix. engine-probe-node0.txt is the probe's
output inside the lab's head engine, ip-link-node0.json `ip -j link show` on node0, and
bench-lab.json a bench report site.yml wrote on the lab.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._doctor import (
    FAIL,
    OK,
    WARN,
    bench_figures,
    check_gpu,
    engine_shape,
    expected_workers,
    judge,
    parse_link,
    render_markdown,
    safe_env,
    summary_lines,
    worker_processes,
)

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"
HEALTHY = json.loads((FIXTURES / "observed-lab-healthy.json").read_text())
SETTINGS = {"head": "node0", "min_available_gib": 2, "min_free_gib": 20}
BENCH = (FIXTURES / "bench-lab.json").read_text()


def failing(doc):
    return {(c["check"], c["host"]) for c in doc["checks"] if c["status"] == FAIL}


def find(doc, check, host):
    return next(c for c in doc["checks"] if c["check"] == check and c["host"] == host)


def test_the_healthy_lab_passes_every_check():
    doc = judge(HEALTHY, SETTINGS)
    assert doc["status"] == OK, summary_lines(doc)
    assert doc["counts"][FAIL] == doc["counts"][WARN] == 0
    # Both halves' links and pings, per node, and the cluster-wide checks, all present.
    checks = {(c["check"], c["host"]) for c in doc["checks"]}
    for host, peer in (("node0", "192.168.100.11"), ("node1", "192.168.100.10")):
        assert (f"ping enp1s0f1np1 -> {peer}", host) in checks
        assert ("ranks", host) in checks
        assert ("gid index", host) in checks
    for check in ("deployment", "image", "nccl", "/health", "/v1/models", "canary completion"):
        assert (check, None) in checks
    assert doc["deployment"] == HEALTHY["node0"]["engine"]["deployment"]


def _gid_moved(seen):
    # node0's first half now holds its RoCE v2 IPv4 GID at index 5 (a netplan change).
    gids = seen["node0"]["fabric"]["gids"][0]
    gids["selected"]["index"] = 5
    for row in gids["rows"]:
        if row.get("ipv4") == gids["selected"]["ipv4"] and row.get("version") == "v2":
            row["index"] = 5


def _gid_gone(seen):
    seen["node1"]["fabric"]["gids"][1]["selected"] = None


def _mtu_mismatch(seen):
    link = json.loads(seen["node1"]["fabric"]["links"][0]["stdout"])
    link[0]["mtu"] = 1500
    seen["node1"]["fabric"]["links"][0]["stdout"] = json.dumps(link)
    seen["node0"]["fabric"]["pings"][0].update(full_rc=1, small_rc=0)


def _no_path(seen):
    seen["node0"]["fabric"]["pings"][1].update(full_rc=1, small_rc=1)


def _link_down(seen):
    link = json.loads(seen["node0"]["fabric"]["links"][1]["stdout"])
    link[0]["operstate"] = "DOWN"
    seen["node0"]["fabric"]["links"][1]["stdout"] = json.dumps(link)


def _interface_gone(seen):
    seen["node1"]["fabric"]["links"][1].update(
        rc=1, stdout="", stderr='Device "enP2p1s0f1np1" does not exist.'
    )


def _wrong_socket_ifname(seen):
    env = seen["node0"]["engine"]["env"]
    env[:] = ["GLOO_SOCKET_IFNAME=eth0" if e.startswith("GLOO_") else e for e in env]


def _worker_dead(seen):
    seen["node1"]["engine"]["workers"] = []


def _restarted_alone(seen):
    seen["node1"]["engine"]["started_at"] = "2026-12-07T09:32:57.074472563Z"
    seen["node1"]["engine"]["restart_count"] = 1


def _other_image(seen):
    seen["node1"]["engine"]["image_id"] = "sha256:" + "0" * 64


def _other_deployment(seen):
    seen["node1"]["engine"]["deployment"] = "f" * 64


def _engine_absent(seen):
    seen["node1"]["engine"].update(exists=False, status="absent", workers=[], env=[])


def _engine_exited(seen):
    seen["node0"]["engine"].update(status="exited", exit_code=137, workers=[])


def _owner_drift(seen):
    seen["node1"]["node"]["owner"].update(
        fixed=2, fixed_sample=["/var/lib/gb10-lab/node1/huggingface/hub/stray"]
    )


def _node_unread(seen):
    seen["node1"] = {"fabric": None, "node": None, "engine": None}


def _canary_fails(seen):
    seen["node0"]["engine"]["api"]["canary"] = {
        "status": 500,
        "seconds": 3,
        "tokens": None,
        "msg": "Status code was 500 and not [200]: HTTP Error 500: Internal Server Error",
    }


def _health_down(seen):
    seen["node0"]["engine"]["api"]["health"] = None


def _nccl_error(seen):
    seen["node1"]["engine"]["errors"] = [
        {
            "kind": "nccl",
            "line": "NCCL WARN NET/IB : Got completion from peer with error 12",
            "hint": "the fabric dropped a transfer: check the link and the GID index",
            "count": 1,
        }
    ]


FAULTS = [
    (_gid_moved, ("gid index", "node0"), "NCCL_IB_GID_INDEX=3"),
    (_gid_gone, ("gid index", "node1"), "enP2p1s0f1np1"),
    (_mtu_mismatch, ("link enp1s0f1np1", "node1"), "MTU 1500"),
    (_mtu_mismatch, ("ping enp1s0f1np1 -> 192.168.100.11", "node0"), "MTU mismatch"),
    (_no_path, ("ping enP2p1s0f1np1 -> 192.168.101.11", "node0"), "no path"),
    (_link_down, ("link enP2p1s0f1np1", "node0"), "is DOWN"),
    (_interface_gone, ("link enP2p1s0f1np1", "node1"), "does not exist"),
    (_wrong_socket_ifname, ("control traffic", "node0"), "GLOO_SOCKET_IFNAME=eth0"),
    (_worker_dead, ("ranks", "node1"), "0 of 1 worker processes"),
    (_restarted_alone, ("started together", "node1"), "after the head's"),
    (_other_image, ("image", None), "differs between nodes"),
    (_other_deployment, ("deployment", None), "differs between nodes"),
    (_engine_absent, ("container", "node1"), "does not exist"),
    (_engine_exited, ("container", "node0"), "exited (exit code 137)"),
    (_owner_drift, ("cache owner", "node1"), "2 of 78 entries"),
    (_node_unread, ("read", "node1"), "nothing was read"),
    (_canary_fails, ("canary completion", None), "500"),
    (_health_down, ("/health", None), "answered nothing"),
    (_nccl_error, ("log errors", "node1"), "nccl"),
]


@pytest.mark.parametrize(
    ("fault", "failed", "evidence"), FAULTS, ids=[f"{f.__name__[1:]}-{c[0]}" for f, c, _e in FAULTS]
)
def test_each_fault_is_named_on_its_node_with_a_fix(fault, failed, evidence):
    seen = copy.deepcopy(HEALTHY)
    fault(seen)
    doc = judge(seen, SETTINGS)
    assert doc["status"] == FAIL
    assert failed in failing(doc), summary_lines(doc)
    verdict = find(doc, *failed)
    assert evidence in verdict["evidence"]
    assert verdict["fix"]
    # Nothing else on the healthy node is blamed for it.
    if failed[1]:
        other = {"node0": "node1", "node1": "node0"}[failed[1]]
        blamed = {c for c, h in failing(doc) if h == other}
        assert not blamed or fault in (_mtu_mismatch,), blamed


def test_an_error_of_no_known_kind_warns():
    seen = copy.deepcopy(HEALTHY)
    seen["node1"]["engine"]["errors"] = [
        {"kind": "other", "line": "ERROR x", "hint": "", "count": 1}
    ]
    assert find(judge(seen, SETTINGS), "log errors", "node1")["status"] == WARN


def test_the_doctor_s_thresholds_are_the_settings():
    doc = judge(HEALTHY, dict(SETTINGS, min_free_gib=10**6, min_available_gib=10**3))
    assert ("free disk", "node0") in failing(doc)
    assert ("memory available", "node1") in failing(doc)


def test_a_bench_regression_past_the_threshold_fails():
    slower = json.loads(BENCH)
    slower["summary"]["single_stream"] *= 0.8
    first = {"content": base64.b64encode(BENCH.encode()).decode()}
    last = {"content": base64.b64encode(json.dumps(slower).encode()).decode()}
    figures = bench_figures([first, last])
    # Only the numeric figures of the summary: the unmeasured and the tool-call score drop out.
    assert set(figures["first"]) == {"single_stream", "conc_4", "deep_single"}
    doc = judge(HEALTHY, dict(SETTINGS, bench=figures, max_regression_pct=10))
    assert ("single_stream", None) in failing(doc)
    assert find(doc, "conc_4", None)["status"] == OK
    assert judge(HEALTHY, dict(SETTINGS, bench=figures, max_regression_pct=25))["status"] == OK


def test_one_bench_report_or_an_unreadable_one_compares_nothing():
    assert bench_figures([json.loads(BENCH)]) == {}
    assert bench_figures([{"content": "not base64!"}, json.loads(BENCH)]) == {}


def test_the_probe_finds_the_lab_head_s_worker():
    probe = (FIXTURES / "engine-probe-node0.txt").read_text()
    assert worker_processes(probe) == ["VLLM::Worker_TP0"]
    # The probe's own command line and the EngineCore are no workers.
    assert "VLLM::EngineCore" in probe


@pytest.mark.parametrize(
    ("argv", "shape", "workers"),
    [
        (HEALTHY["node0"]["engine"]["argv"], {"tp": 2, "pp": 1, "nnodes": 2}, 1),
        (["vllm", "serve", "m", "--tensor-parallel-size=2", "-pp", "2", "--nnodes", "2"], None, 2),
        (["vllm", "serve", "m"], {"tp": 1, "pp": 1, "nnodes": 1}, 1),
    ],
)
def test_the_world_size_comes_from_the_head_s_argv(argv, shape, workers):
    if shape:
        assert engine_shape(argv) == shape
    assert expected_workers(argv, 2) == workers


def test_the_link_read_is_ip_s_json():
    shown = parse_link((FIXTURES / "ip-link-node0.json").read_text())
    assert (shown["operstate"], shown["mtu"]) == ("UP", 9000)
    assert parse_link("") == {}
    assert parse_link("not json") == {}


def test_no_key_survives_the_environment_filter():
    env = list(json.loads((FIXTURES / "engine-env-node0.json").read_text())["env"])
    env += ["VLLM_API_KEY=sk-secret-0123456789", "HF_TOKEN=hf_secret"]
    kept = safe_env(env)
    assert "VLLM_HOST_IP=192.168.100.10" in kept
    assert "NCCL_IB_GID_INDEX=3" in kept
    assert not [e for e in kept if "secret" in e or e.startswith(("HF_", "VLLM_API"))]


# nvidia-smi --query-gpu=temperature.gpu,clocks.sm,clocks.max.sm,power.draw,
# clocks_throttle_reasons.active --format=csv,noheader,nounits prints one line per GPU in this
# shape; no Spark's capture is in the fixtures yet, so the values are written by hand.
@pytest.mark.parametrize(
    ("line", "status"),
    [
        ("52, 2405, 3003, 38.12, 0x0000000000000000", OK),
        ("91, 1200, 3003, 95.40, 0x0000000000000040", WARN),
        ("60, 1800, 3003, [N/A], 0x0000000000000004", WARN),
    ],
)
def test_a_hot_or_held_back_gpu_warns(line, status):
    (verdict,) = check_gpu("spark1", line, 85)
    assert verdict.status == status


def test_the_summary_and_page_put_failures_first():
    seen = copy.deepcopy(HEALTHY)
    _worker_dead(seen)
    doc = judge(seen, SETTINGS)
    lines = summary_lines(doc)
    assert lines[0].startswith("doctor: fail (")
    assert lines[1].startswith("FAIL engine: ranks on node1:")
    page = render_markdown(doc)
    rows = [line for line in page.splitlines() if line.startswith("| ")][2:]
    assert rows[0].startswith("| fail | engine | ranks | node1 |")


def _planned(seen, host, **plan):
    seen[host]["engine"]["plan"] = dict(
        {"deployment": seen[host]["engine"]["deployment"], "differences": []}, **plan
    )


def test_an_engine_running_the_deployment_planned_now_passes():
    seen = copy.deepcopy(HEALTHY)
    doc = judge(seen, SETTINGS)
    for host in ("node0", "node1"):
        verdict = find(doc, "plan", host)
        assert verdict["status"] == OK
        assert seen[host]["engine"]["deployment"][:12] in verdict["evidence"]


def test_an_engine_the_inventory_no_longer_plans_fails_saying_what_differs():
    seen = copy.deepcopy(HEALTHY)
    _planned(
        seen,
        "node1",
        deployment="e" * 64,
        differences=["NCCL_IB_GID_INDEX: runs '3', the plan not set"],
    )
    doc = judge(seen, SETTINGS)
    verdict = find(doc, "plan", "node1")
    assert verdict["status"] == FAIL
    running = seen["node1"]["engine"]["deployment"][:12]
    assert verdict["evidence"].startswith(
        f"runs deployment {running}, the inventory now plans {'e' * 12}: NCCL_IB_GID_INDEX"
    )
    assert "run site.yml" in verdict["fix"]
    assert find(doc, "plan", "node0")["status"] == OK
    # No difference the container shows: the evidence says where else it can be.
    seen["node1"]["engine"]["plan"]["differences"] = []
    assert "the keys, the API users" in find(judge(seen, SETTINGS), "plan", "node1")["evidence"]


def test_a_plan_that_cannot_be_made_warns_and_a_stopped_engine_is_not_compared():
    seen = copy.deepcopy(HEALTHY)
    seen["node0"]["engine"]["plan"] = {"error": "vllm_port must be a port number"}
    seen["node1"]["engine"].update(status="exited", exit_code=1, workers=[])
    doc = judge(seen, SETTINGS)
    verdict = find(doc, "plan", "node0")
    assert verdict["status"] == WARN
    assert "vllm_port must be a port number" in verdict["evidence"]
    assert not [c for c in doc["checks"] if c["check"] == "plan" and c["host"] == "node1"]
    # An observe that was given no plan (the entry point used alone) judges no plan.
    for host in ("node0", "node1"):
        del seen[host]["engine"]["plan"]
    assert not [c for c in judge(seen, SETTINGS)["checks"] if c["check"] == "plan"]
