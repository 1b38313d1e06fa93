# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The doctor's verdicts on real captured input: the running lab engines' environments
(fixtures/doctor/engine-env-node*.json, from `docker inspect` on the converged lab) and
/proc/meminfo of the lab host (fixtures/doctor/meminfo-lab-host.txt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._doctor import (
    FAIL,
    OK,
    WARN,
    check_gid_drift,
    check_memory,
    check_regression,
    check_same_everywhere,
    check_socket_env,
    env_of,
    parse_meminfo,
    render_markdown,
    report,
)

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"
ENV = {
    node: env_of(json.loads((FIXTURES / f"engine-env-{node}.json").read_text())["env"])
    for node in ("node0", "node1")
}
MEMINFO = (FIXTURES / "meminfo-lab-host.txt").read_text()
# The lab's halves as the fabric resolves them (lab/labctl.py NODES): node0 3 and 3, node1 4 and 3.
RAILS = {
    "node0": [
        {"rdma_device": "rocep1s0f1", "rdma_port": 1, "gid_index": 3},
        {"rdma_device": "roceP2p1s0f1", "rdma_port": 1, "gid_index": 3},
    ],
    "node1": [
        {"rdma_device": "rocep1s0f1", "rdma_port": 1, "gid_index": 4},
        {"rdma_device": "roceP2p1s0f1", "rdma_port": 1, "gid_index": 3},
    ],
}
FABRIC_ENV = {
    "node0": {
        "NCCL_SOCKET_IFNAME": "enp1s0f1np1",
        "GLOO_SOCKET_IFNAME": "enp1s0f1np1",
        "TP_SOCKET_IFNAME": "enp1s0f1np1",
        "VLLM_HOST_IP": "192.168.100.10",
    },
}


def statuses(verdicts):
    return {v.check: v.status for v in verdicts}


@pytest.mark.parametrize("node", ["node0", "node1"])
def test_the_running_lab_engines_match_their_gids(node):
    assert statuses(check_gid_drift(node, RAILS[node], ENV[node])) == {"gid index": OK}


def test_a_gid_index_moved_under_a_pinned_engine_fails_naming_both():
    moved = [{**RAILS["node0"][0], "gid_index": 5}, RAILS["node0"][1]]
    (verdict,) = check_gid_drift("node0", moved, ENV["node0"])
    assert verdict.status == FAIL
    assert "NCCL_IB_GID_INDEX=3" in verdict.evidence
    assert "rocep1s0f1:1 5, roceP2p1s0f1:1 3" in verdict.evidence
    assert "site.yml" in verdict.fix


def test_a_device_set_that_changed_fails():
    one_rail = RAILS["node1"][:1]
    verdicts = check_gid_drift("node1", one_rail, ENV["node1"])
    assert statuses(verdicts) == {"rdma devices": FAIL, "gid index": OK}
    assert "NCCL_IB_HCA==rocep1s0f1:1,roceP2p1s0f1:1" in verdicts[0].evidence


def test_the_engine_s_control_traffic_is_on_the_cable():
    assert check_socket_env("node0", FABRIC_ENV["node0"], ENV["node0"]).status == OK
    baked = {**ENV["node0"], "GLOO_SOCKET_IFNAME": "enP7s7"}
    verdict = check_socket_env("node0", FABRIC_ENV["node0"], baked)
    assert verdict.status == FAIL
    assert "GLOO_SOCKET_IFNAME=enP7s7 (the fabric says enp1s0f1np1)" in verdict.evidence


def test_an_image_that_differs_between_nodes_fails_naming_each():
    same = check_same_everywhere(
        "engine", "image", {"node0": "sha256:a", "node1": "sha256:a"}, "image"
    )
    assert same.status == OK
    other = check_same_everywhere(
        "engine", "image", {"node0": "sha256:a", "node1": "sha256:b"}, "image"
    )
    assert other.status == FAIL
    assert "sha256:a on node0; sha256:b on node1" in other.evidence


def test_meminfo_is_read_in_kibibytes():
    info = parse_meminfo(MEMINFO)
    assert info["MemTotal"] == 24683772
    assert info["SwapTotal"] == 0
    assert "HugePages_Total" in info  # a count without unit is kept as it is


def test_memory_checks_on_the_lab_host():
    info = parse_meminfo(MEMINFO)
    assert statuses(check_memory("host", info, need_gib=4)) == {
        "memory available": OK,
        "swap": OK,
        "page cache": OK,
    }
    (available, _swap, _cache) = check_memory("host", info, need_gib=100)
    assert available.status == FAIL
    assert "below the 100.0 that must stay available" in available.evidence
    cached = {**info, "Cached": info["MemTotal"] // 2, "SwapTotal": 4 << 20, "SwapFree": 1 << 20}
    assert statuses(check_memory("host", cached, need_gib=4)) == {
        "memory available": OK,
        "swap": WARN,
        "page cache": WARN,
    }


def test_a_regression_beyond_the_threshold_fails():
    first = {"single_stream": 60.0, "throughput": 400.0}
    verdicts = check_regression(first, {"single_stream": 50.0, "throughput": 396.0}, 10)
    assert statuses(verdicts) == {"single_stream": FAIL, "throughput": OK}
    assert "(-16.7%)" in verdicts[0].evidence


def test_the_report_takes_the_worst_status_and_prints_failures_first():
    verdicts = [
        *check_gid_drift("node0", RAILS["node0"], ENV["node0"]),
        check_socket_env(
            "node0", FABRIC_ENV["node0"], {**ENV["node0"], "VLLM_HOST_IP": "10.0.0.10"}
        ),
    ]
    doc = report(verdicts)
    assert doc["status"] == FAIL
    assert doc["counts"] == {OK: 1, WARN: 0, FAIL: 1}
    text = render_markdown(doc)
    assert text.startswith("# gb10.serving doctor: fail\n")
    rows = [
        line for line in text.splitlines() if line.startswith("| fail") or line.startswith("| ok")
    ]
    assert rows[0].startswith("| fail | fabric | control traffic | node0 |")
    assert report([])["status"] == OK
