"""Three Sparks behind a switch, on the lab: a third node (`labctl.py up --nodes 3`) on both
fabric subnets. The preflight passes with a recipe split three ways; the firewall admits both
peers on each half; the fabric runs for real on all three (each half's GIDs, every pair on
every half). The engines are not booted three ways: the lab's tiny model
has two attention heads and two layers, so neither tensor nor pipeline parallel 3 can split
it (the unit tests prove the three-rank commands).

node0 and node1 end as they were: the fabric changes nothing there, the two-node firewall
run puts their rules back, no engine restarts, and node2 is removed (`labctl.py up`)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import HERE, LAB_INVENTORY, ROOT, engines_state, run_playbook, task_facts

FABRIC = ROOT / "playbooks" / "fabric.yml"
FIREWALL = ROOT / "playbooks" / "firewall.yml"
PREFLIGHT = ROOT / "playbooks" / "preflight.yml"
THREE = (LAB_INVENTORY, HERE / "inventories" / "three_nodes.yml")
THREE_WAYS = {"vllm_recipe_overrides": {"tensor_parallel": 1, "pipeline_parallel": 3}}
FACTS_TASK = "Set this node's fabric facts and engine environment"
LABCTL = [sys.executable, str(ROOT / "lab" / "labctl.py")]


@pytest.fixture(scope="module")
def three_nodes(converged, tmp_path_factory):
    """As site.yml orders them: the preflight, the firewall (the two nodes' rules gain
    node2, or they drop its pings), then the fabric. Afterwards the firewall of the two-node
    inventory puts node0's and node1's rules back, and node2 goes."""
    before = engines_state()
    subprocess.run([*LABCTL, "up", "--nodes", "3"], check=True, capture_output=True)
    runs = {}
    try:
        runs["preflight"] = run_playbook(
            PREFLIGHT, tmp_path_factory.mktemp("pre3"), inventories=THREE, extravars=THREE_WAYS
        )
        runs["firewall"] = run_playbook(
            FIREWALL, tmp_path_factory.mktemp("fw3"), inventories=THREE, diff=True
        )
        runs["fabric"] = run_playbook(FABRIC, tmp_path_factory.mktemp("fabric3"), inventories=THREE)
    finally:
        runs["restore"] = run_playbook(FIREWALL, tmp_path_factory.mktemp("fw2"))
        subprocess.run([*LABCTL, "up"], check=True, capture_output=True)
    runs["before"], runs["after"] = before, engines_state()
    return runs


def test_the_preflight_passes_three_nodes_with_a_recipe_for_three(three_nodes):
    run = three_nodes["preflight"]
    assert run.status == "successful", run.failure_messages
    assert set(run.stats["ok"]) == {"node0", "node1", "node2"}


def test_the_fabric_checks_every_pair_on_both_halves_and_changes_only_the_new_node(three_nodes):
    run = three_nodes["fabric"]
    assert run.status == "successful", run.failure_messages
    assert run.stats["changed"].get("node2", 0) > 0
    assert run.stats["changed"].get("node0", 0) == 0
    assert run.stats["changed"].get("node1", 0) == 0
    pings = {}
    for event in run.events_data:
        data = event.get("event_data", {})
        if event.get("event") == "runner_item_on_ok" and data.get("task", "").startswith(
            "Ping every peer on every half"
        ):
            interface, peer = (
                data["res"]["__fabric_path"][0]["interface"],
                data["res"]["__fabric_path"][1],
            )
            pings.setdefault(data["host"], set()).add((interface, peer))
    assert pings["node0"] == {
        ("enp1s0f1np1", "192.168.100.11"),
        ("enp1s0f1np1", "192.168.100.12"),
        ("enP2p1s0f1np1", "192.168.101.11"),
        ("enP2p1s0f1np1", "192.168.101.12"),
    }
    assert len(pings["node1"]) == len(pings["node2"]) == 4


def test_the_third_node_resolves_its_own_gids_on_each_half(three_nodes):
    facts = task_facts(three_nodes["fabric"], FACTS_TASK)
    node2 = facts["node2"]["fabric_node"]
    # lab/labctl.py lays node2's GIDs at 3 and 4: its halves differ, NCCL picks them.
    assert [(r["rdma_device"], r["gid_index"]) for r in node2["rails"]] == [
        ("rocep1s0f1", 3),
        ("roceP2p1s0f1", 4),
    ]
    assert node2["gid_selection"] == "auto"
    assert node2["peers"] == ["192.168.100.10", "192.168.100.11"]
    env = facts["node2"]["fabric_engine_env"]
    assert env["NCCL_IB_HCA"] == "=rocep1s0f1:1,roceP2p1s0f1:1"
    assert "NCCL_IB_GID_INDEX" not in env


def test_the_firewall_admits_both_peers_on_each_half(three_nodes):
    run = three_nodes["firewall"]
    assert run.status == "successful", run.failure_messages
    assert run.stats["changed"].get("node0", 0) > 0  # node0's rules gain node2
    after = {}
    for event in run.events_data:
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_ok" and data.get("task_action", "").endswith(
            "template"
        ):
            for diff in data["res"].get("diff") or []:
                if isinstance(diff, dict) and "chain input" in str(diff.get("after", "")):
                    after[data["host"]] = diff["after"]
    first, second = 'iifname "enp1s0f1np1" ip saddr', 'iifname "enP2p1s0f1np1" ip saddr'
    assert f"{first} {{ 192.168.100.11, 192.168.100.12 }} accept" in after["node0"]
    assert f"{second} {{ 192.168.101.11, 192.168.101.12 }} accept" in after["node0"]
    assert f"{second} {{ 192.168.101.10, 192.168.101.11 }} accept" in after["node2"]


def test_the_two_node_cluster_is_put_back_and_no_engine_restarted(three_nodes):
    restore = three_nodes["restore"]
    assert restore.status == "successful", restore.failure_messages
    assert restore.stats["changed"].get("node0", 0) > 0  # node2 leaves node0's rules
    assert three_nodes["after"] == three_nodes["before"]
    status = subprocess.run([*LABCTL, "status"], capture_output=True, text=True, check=True).stdout
    assert "gb10-lab-node2" not in status
