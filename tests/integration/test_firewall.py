"""Firewall stage on the lab: nftables in each node, proven by connections from outside.

An "outsider" is a container on the lab's management network at an address that is not in
vllm_allowed_cidrs (the lab allows only this machine, the bridge's gateway). The engines
share their node's network namespace, so the node's rules are what a client meets.
"""

from __future__ import annotations

import json
import socket
import subprocess

import pytest
from conftest import NODE_CONTAINERS, ROOT, run_playbook

FIREWALL = ROOT / "playbooks" / "firewall.yml"
MGMT_NETWORK = "gb10-lab-mgmt"
OUTSIDER_IP = "10.219.0.200"
HEAD_FABRIC_IP = "192.168.100.10"
API_PORT, MASTER_PORT = 8000, 29500
ENGINES = {node: f"gb10-lab-{node}-vllm" for node in NODE_CONTAINERS}
# Run inside a container: try each target once, print what happened to each.
PROBE = """
import json, socket, sys
result = {}
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        result[target] = "open"
    except ConnectionRefusedError:
        result[target] = "refused"
    except OSError as exc:
        result[target] = type(exc).__name__
print(json.dumps(result))
"""


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


def mgmt_ip(node: str) -> str:
    fmt = f'{{{{(index .NetworkSettings.Networks "{MGMT_NETWORK}").IPAddress}}}}'
    return docker("inspect", "-f", fmt, NODE_CONTAINERS[node]).strip()


def engine_ids() -> dict:
    return {
        node: docker("inspect", "-f", "{{.Id}}", name).strip() for node, name in ENGINES.items()
    }


def outsider_probe(*targets: str) -> dict:
    """Connect from OUTSIDER_IP, routing the fabric subnet through the head's management side.

    The route stands for a machine on the office network that knows the cable's subnet: the
    head's kernel would accept such packets for its fabric address (weak host model) were it
    not for the rules.
    """
    image = docker("inspect", "-f", "{{.Config.Image}}", NODE_CONTAINERS["node0"]).strip()
    script = (
        f"ip route add 192.168.100.0/24 via {mgmt_ip('node0')} && "
        f"exec python3 -c '{PROBE}' {' '.join(targets)}"
    )
    out = docker(
        "run",
        "--rm",
        "--network",
        MGMT_NETWORK,
        "--ip",
        OUTSIDER_IP,
        "--cap-add",
        "NET_ADMIN",
        "--entrypoint",
        "sh",
        image,
        "-c",
        script,
    )
    return json.loads(out)


def node_probe(node: str, *targets: str) -> dict:
    out = docker("exec", NODE_CONTAINERS[node], "python3", "-c", PROBE, *targets)
    return json.loads(out)


def node_sh(node: str, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["docker", "exec", NODE_CONTAINERS[node], "sh", "-c", script],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("node", sorted(NODE_CONTAINERS))
def test_the_rules_are_loaded_and_load_at_boot(converged, node):
    unit = node_sh(
        node,
        "systemctl is-enabled gb10-serving-firewall; systemctl is-active gb10-serving-firewall",
    )
    assert unit.stdout.split() == ["enabled", "active"]
    table = node_sh(node, "nft --json list set inet gb10_serving api_v4")
    assert table.returncode == 0, table.stderr
    (entry,) = [item["set"] for item in json.loads(table.stdout)["nftables"] if "set" in item]
    assert entry["elem"] == ["10.219.0.1"]  # the lab's vllm_allowed_cidrs, 10.219.0.1/32


def test_an_outsider_is_refused_the_api_and_the_engine(converged):
    head = mgmt_ip("node0")
    api, master, fabric = (
        f"{head}:{API_PORT}",
        f"{head}:{MASTER_PORT}",
        f"{HEAD_FABRIC_IP}:{MASTER_PORT}",
    )
    assert outsider_probe(api, master, fabric) == {
        api: "refused",
        master: "refused",
        fabric: "refused",
    }
    # The same ports are open where they should be: this machine (an allowed address)
    # reaches the API, the worker reaches the head's rendezvous port over the cable.
    socket.create_connection((head, API_PORT), timeout=3).close()
    assert node_probe("node1", fabric) == {fabric: "open"}


def unit_active_since(node: str) -> str:
    """When the firewall unit last became active: a restart changes it, a reload does not."""
    script = "systemctl show -p ActiveEnterTimestampMonotonic gb10-serving-firewall"
    return node_sh(node, script).stdout.strip()


def test_the_allowed_list_decides_and_changing_it_restarts_no_engine(converged, tmp_path):
    before = engine_ids()
    active_since = unit_active_since("node0")
    api = f"{mgmt_ip('node0')}:{API_PORT}"
    wider = run_playbook(
        FIREWALL,
        tmp_path / "wider",
        extravars={"vllm_allowed_cidrs": ["10.219.0.1/32", f"{OUTSIDER_IP}/32"]},
    )
    assert wider.status == "successful", wider.failure_messages
    assert wider.stats["changed"].get("node0", 0) > 0
    assert outsider_probe(api) == {api: "open"}
    # The new rules were loaded by a reload (one nft transaction), not a restart, whose
    # stop would have left the node without its table for a moment.
    assert unit_active_since("node0") == active_since
    back = run_playbook(FIREWALL, tmp_path / "back")
    assert back.status == "successful", back.failure_messages
    assert outsider_probe(api) == {api: "refused"}
    assert engine_ids() == before


def test_a_flushed_table_is_loaded_again(converged, tmp_path):
    assert node_sh("node1", "nft delete table inet gb10_serving").returncode == 0
    run = run_playbook(FIREWALL, tmp_path)
    assert run.status == "successful", run.failure_messages
    assert run.stats["changed"].get("node1", 0) == 1
    assert run.stats["changed"].get("node0", 0) == 0
    assert node_sh("node1", "nft list table inet gb10_serving").returncode == 0
    again = run_playbook(FIREWALL, tmp_path / "again")
    assert again.count("changed") == 0
