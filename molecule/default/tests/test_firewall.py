"""Verify the firewall stage on both lab nodes: the table loaded, its unit enabled, its file."""

from __future__ import annotations

import json

import pytest
from _lab import lab_host

PEERS = {"node0": "192.168.100.11", "node1": "192.168.100.10"}
# The peer's second PCIe half (fabric_rails: 2), admitted on this node's second half only.
TWIN_PEERS = {"node0": "192.168.101.11", "node1": "192.168.101.10"}


@pytest.fixture(scope="module", params=sorted(PEERS))
def lab_node(request):
    return request.param, lab_host(request.param)


def test_the_unit_loads_the_rules_at_boot(lab_node):
    _name, host = lab_node
    unit = host.service("gb10-serving-firewall")
    assert unit.is_enabled
    assert unit.is_running  # a oneshot that remains active after loading
    rules = host.file("/etc/gb10-serving/firewall.nft")
    assert (rules.user, rules.group, rules.mode) == ("root", "root", 0o644)
    assert "delete table inet gb10_serving" in rules.content_string


def test_the_live_table_allows_the_api_to_the_lab_host_and_the_cable_to_the_peer(lab_node):
    name, host = lab_node
    out = host.check_output("nft --json list table inet gb10_serving")
    items = json.loads(out)["nftables"]
    sets = {item["set"]["name"]: item["set"].get("elem", []) for item in items if "set" in item}
    assert sets == {"api_v4": ["10.219.0.1"], "api_v6": []}
    listing = host.check_output("nft list chain inet gb10_serving input")
    assert f'iifname "enp1s0f1np1" ip saddr {PEERS[name]} accept' in listing
    assert f'iifname "enP2p1s0f1np1" ip saddr {TWIN_PEERS[name]} accept' in listing
    # The production-shaped inventory moves the API to 8100 and the master port to 29600,
    # which is refused anywhere but the fabric link.
    assert "tcp dport 8100 reject with tcp reset" in listing
    engine_rejects = [line for line in listing.splitlines() if "dport {" in line]
    assert any("29600" in line and "reject" in line for line in engine_rejects), listing
    assert "29500" not in listing
