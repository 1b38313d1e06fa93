"""Fabric stage on the lab: bad input stops before any change; faults fail with the cause."""

from __future__ import annotations

import contextlib
import json
import subprocess

from conftest import (
    NODE_CONTAINERS,
    ROOT,
    run_playbook,
)

FABRIC = ROOT / "playbooks" / "fabric.yml"
FABRIC_IF = "enp1s0f1np1"
TWIN_IF = "enP2p1s0f1np1"


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


def test_drifted_mtu_and_a_lost_address_are_repaired_by_the_next_run(converged, tmp_path):
    """One half's MTU lowered by hand, the other half's address lost (fabric_rails: 2):
    the next run re-applies the configuration on that node only."""
    node_exec("node1", "ip", "link", "set", "dev", FABRIC_IF, "mtu", "1500")
    node_exec("node1", "ip", "addr", "flush", "dev", TWIN_IF)
    run = run_playbook(FABRIC, tmp_path)
    assert run.status == "successful", run.failure_messages
    assert run.stats["changed"].get("node1", 0) > 0
    assert run.stats["changed"].get("node0", 0) == 0
    assert node_exec("node1", "cat", f"/sys/class/net/{FABRIC_IF}/mtu").strip() == "9000"
    assert "192.168.101.11/24" in node_exec(
        "node1", "ip", "-4", "-o", "addr", "show", "dev", TWIN_IF
    )


def test_mtu_mismatch_on_the_path_is_named_and_the_next_run_converges(converged, tmp_path):
    # The cable's far end toward node1 carries only 1500 bytes: small pings pass, jumbo not.
    with host_link(cable_end("node1"), "mtu", "1500", restore=("mtu", "9000")):
        run = run_playbook(FABRIC, tmp_path / "broken")
        assert run.status == "failed"
        assert "MTU mismatch on the fabric" in "\n".join(run.failure_messages)
    run = run_playbook(FABRIC, tmp_path / "fixed")
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 0


def test_acceptance_tag_in_the_lab_says_it_is_skipped(converged, tmp_path):
    run = run_playbook(FABRIC, tmp_path, tags="fabric_acceptance")
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 0
    joined = "\n".join(run.debug_messages)
    assert "fabric acceptance is skipped (gb10_platform: lab)" in joined
