"""Fabric stage on the lab: bad input stops before any change; faults fail with the cause."""

from __future__ import annotations

import contextlib
import json
import subprocess

import pytest
from conftest import (
    HERE,
    LAB_INVENTORY,
    NODE_CONTAINERS,
    ROOT,
    assert_stopped_before_any_change,
    run_guarded,
    run_playbook,
)

SITE = ROOT / "site.yml"
FABRIC = ROOT / "playbooks" / "fabric.yml"
FABRIC_IF = "enp1s0f1np1"


def node_exec(node: str, *cmd: str) -> str:
    return subprocess.run(
        ["docker", "exec", NODE_CONTAINERS[node], *cmd],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def cable_end(node: str) -> str:
    """The host-side interface of a node's cable (its veth peer on the lab bridge)."""
    peer_index = node_exec(node, "cat", f"/sys/class/net/{FABRIC_IF}/iflink").strip()
    links = json.loads(
        subprocess.run(
            ["ip", "-j", "link", "show"], capture_output=True, text=True, check=True
        ).stdout
    )
    (name,) = [link["ifname"] for link in links if str(link["ifindex"]) == peer_index]
    return name


@contextlib.contextmanager
def host_link(name: str, *settings: str, restore: tuple[str, ...]):
    subprocess.run(["ip", "link", "set", "dev", name, *settings], check=True)
    try:
        yield
    finally:
        subprocess.run(["ip", "link", "set", "dev", name, *restore], check=True)


BAD_INPUT = [
    pytest.param(
        {"inventories": (LAB_INVENTORY, HERE / "inventories" / "fabric_no_interface.yml")},
        ["fabric_interface is not set for node1"],
        id="missing-interface",
    ),
    pytest.param(
        {"extravars": {"fabric_address": "192.168.100.10/24"}},
        ["fabric_address 192.168.100.10 is set on node0 and node1"],
        id="same-address",
    ),
    pytest.param(
        {"inventories": (LAB_INVENTORY, HERE / "inventories" / "fabric_two_subnets.yml")},
        ["not in one subnet (node0 192.168.100.0/24, node1 192.168.101.0/24)"],
        id="two-subnets",
    ),
    pytest.param(
        {"extravars": {"fabric_mtu": 20000}},
        ["fabric_mtu 20000 on node0 is out of range 1280..9978"],
        id="mtu-out-of-range",
    ),
    pytest.param(
        {"extravars": {"fabric_mtu": "jumbo"}},
        ["fabric_mtu"],
        id="mtu-not-an-int",
    ),
    pytest.param(
        {"extravars": {"fabric_address": "192.168.100.10"}},
        ["has no prefix length"],
        id="address-without-prefix",
    ),
    pytest.param(
        {"extravars": {"fabric_netplan_renderer": "ifupdown"}},
        ["fabric_netplan_renderer", "networkd, NetworkManager"],
        id="unknown-renderer",
    ),
]


@pytest.mark.parametrize(("kwargs", "expected"), BAD_INPUT)
def test_bad_fabric_input_fails_in_preflight_before_any_change(tmp_path, kwargs, expected):
    assert_stopped_before_any_change(run_guarded(tmp_path, **kwargs), expected)


def test_converged_fabric_is_idempotent(converged, tmp_path):
    run = run_playbook(SITE, tmp_path)
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 0


def test_drifted_mtu_is_repaired_by_the_next_run(converged, tmp_path):
    node_exec("node1", "ip", "link", "set", "dev", FABRIC_IF, "mtu", "1500")
    run = run_playbook(FABRIC, tmp_path)
    assert run.status == "successful", run.failure_messages
    assert run.stats["changed"].get("node1", 0) > 0
    assert run.stats["changed"].get("node0", 0) == 0
    assert node_exec("node1", "cat", f"/sys/class/net/{FABRIC_IF}/mtu").strip() == "9000"


def test_mtu_mismatch_on_the_path_is_named_and_the_next_run_converges(converged, tmp_path):
    # The cable's far end toward node1 carries only 1500 bytes: small pings pass, jumbo not.
    with host_link(cable_end("node1"), "mtu", "1500", restore=("mtu", "9000")):
        run = run_playbook(FABRIC, tmp_path / "broken")
        assert run.status == "failed"
        assert "MTU mismatch on the fabric" in "\n".join(run.failure_messages)
    run = run_playbook(FABRIC, tmp_path / "fixed")
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 0


def test_link_down_is_named_and_the_next_run_converges(converged, tmp_path):
    # Pull the cable: the host end of node1's cable goes down, node1's port loses carrier.
    with host_link(cable_end("node1"), "down", restore=("up",)):
        run = run_playbook(FABRIC, tmp_path / "down", extravars={"fabric_link_timeout": 4})
        assert run.status == "failed"
        joined = "\n".join(run.failure_messages)
        assert f"The fabric link {FABRIC_IF} on node1 is" in joined
        assert "check the cable" in joined
    run = run_playbook(FABRIC, tmp_path / "up")
    assert run.status == "successful", run.failure_messages


def test_acceptance_tag_in_the_lab_says_it_is_skipped(converged, tmp_path):
    run = run_playbook(FABRIC, tmp_path, tags="fabric_acceptance")
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 0
    joined = "\n".join(run.debug_messages)
    assert "fabric acceptance is skipped (gb10_platform: lab)" in joined
