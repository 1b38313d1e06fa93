# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._firewall: the plan from the inventory, and the live table against it.

The live table is a real capture: ``nft --json list table inet gb10_serving`` on a lab node
(nftables 1.0.6, Debian bookworm) after loading the rules the role renders for node0, with
192.0.2.0/24 added to the API set (fixtures/nftables/lab-node0-nft-1.0.6.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._fabric_plan import plan_fabric
from ansible_collections.gb10.serving.plugins.module_utils._firewall import (
    firewall_live_problems,
    firewall_plan,
)

LIVE = (Path(__file__).parent / "fixtures" / "nftables" / "lab-node0-nft-1.0.6.json").read_text()
NODES = {
    "node0": {"fabric_address": "192.168.100.10/24", "fabric_interface": "enp1s0f1np1"},
    "node1": {"fabric_address": "192.168.100.11/24", "fabric_interface": "enp1s0f1np1"},
}
GOOD = {
    "api_cidrs": ["10.219.0.1/32", "192.0.2.0/24"],
    "api_port": 8000,
    "engine_ports": [29500, 6379],
}


def plan(host="node0", nodes=None, **changes):
    args = {**GOOD, **changes}
    fabric = plan_fabric(NODES if nodes is None else nodes).to_dict()
    return firewall_plan(fabric, host, args["api_cidrs"], args["api_port"], args["engine_ports"])


def test_plan_for_the_head_names_its_peer_and_merges_nothing_needlessly():
    result = plan()
    assert result == {
        "errors": [],
        "api_port": 8000,
        "api_cidrs_v4": ["10.219.0.1/32", "192.0.2.0/24"],
        "api_cidrs_v6": [],
        "engine_ports": [6379, 29500],
        "fabric_interface": "enp1s0f1np1",
        "fabric_ipv4": "192.168.100.10",
        "peer_ipv4s": ["192.168.100.11"],
        "rails": [
            {"interface": "enp1s0f1np1", "ipv4": "192.168.100.10", "peer_ipv4s": ["192.168.100.11"]}
        ],
    }


def test_with_two_rails_each_half_admits_the_peers_on_that_half_only():
    nodes = {
        host: {**values, "fabric_rails": 2, "fabric_twin_address": f"192.168.101.1{n}/24"}
        for n, (host, values) in enumerate(NODES.items())
    }
    result = plan(nodes=nodes)
    assert result["rails"] == [
        {"interface": "enp1s0f1np1", "ipv4": "192.168.100.10", "peer_ipv4s": ["192.168.100.11"]},
        {"interface": "enP2p1s0f1np1", "ipv4": "192.168.101.10", "peer_ipv4s": ["192.168.101.11"]},
    ]
    # The captured table was loaded for one rail: the second half's rule is missing.
    assert firewall_live_problems(LIVE, result) == [
        "No rule accepts the peer 192.168.101.11 on enP2p1s0f1np1."
    ]


def test_plan_for_the_worker_names_the_head():
    result = plan("node1")
    assert (result["fabric_ipv4"], result["peer_ipv4s"]) == ("192.168.100.11", ["192.168.100.10"])


@pytest.mark.parametrize(
    ("cidrs", "v4", "v6"),
    [
        pytest.param(["10.0.0.0/8", "10.1.0.0/16"], ["10.0.0.0/8"], [], id="inner-network-merged"),
        pytest.param(["10.0.0.0/25", "10.0.0.128/25"], ["10.0.0.0/24"], [], id="halves-merged"),
        pytest.param(["192.0.2.7/32"], ["192.0.2.7/32"], [], id="one-address"),
        pytest.param(["0.0.0.0/0", "::/0"], ["0.0.0.0/0"], ["::/0"], id="everyone-both-families"),
        pytest.param(["2001:db8::/64"], [], ["2001:db8::/64"], id="v6"),
    ],
)
def test_allowed_networks_are_normalised_for_nftables(cidrs, v4, v6):
    result = plan(api_cidrs=cidrs)
    assert (result["api_cidrs_v4"], result["api_cidrs_v6"]) == (v4, v6)


@pytest.mark.parametrize(
    ("changes", "fragments"),
    [
        pytest.param({"api_cidrs": []}, ["firewall_api_allowed_cidrs is empty"], id="empty"),
        pytest.param(
            {"api_cidrs": ["192.0.2.7/24"]},
            ["firewall_api_allowed_cidrs[0]", "host bits", "192.0.2.0/24"],
            id="host-bits",
        ),
        pytest.param(
            {"api_cidrs": ["192.0.2.7"]}, ["without a prefix length", "192.0.2.7/32"], id="bare"
        ),
        pytest.param(
            {"api_cidrs": "10.0.0.0/8"},
            ["firewall_api_allowed_cidrs is", "not a list"],
            id="string",
        ),
        pytest.param(
            {"api_cidrs": ["10.0.0.0/33", "office"]},
            ["[0] is '10.0.0.0/33'", "[1] is 'office'", "10.0.0.0/24"],
            id="bad-entries-each-named",
        ),
        pytest.param({"api_port": 0}, ["firewall_api_port (0)"], id="port-zero"),
        pytest.param({"api_port": "http"}, ["firewall_api_port ('http')"], id="port-word"),
        pytest.param({"engine_ports": [29500, 70000]}, ["firewall_engine_ports (70000)"], id="big"),
        pytest.param(
            {"engine_ports": 29500}, ["firewall_engine_ports must be a list"], id="scalar"
        ),
        pytest.param(
            {"api_port": 29500},
            ["firewall_api_port (29500) is also in firewall_engine_ports"],
            id="clash",
        ),
    ],
)
def test_bad_input_names_the_variable(changes, fragments):
    errors = plan(**changes)["errors"]
    assert errors
    for fragment in fragments:
        assert fragment in " ".join(errors)


def test_the_fabric_plans_problems_are_passed_on():
    nodes = {**NODES, "node1": {"fabric_address": "", "fabric_interface": "enp1s0f1np1"}}
    assert "fabric_address is not set for node1" in plan(nodes=nodes)["errors"][0]


def test_a_host_outside_the_cluster_is_named():
    assert "node2 is not one of the cluster's nodes (node0, node1)" in plan("node2")["errors"][0]


def test_a_single_node_cluster_has_no_peer():
    errors = plan(nodes={"node0": NODES["node0"]})["errors"]
    assert "the fabric needs at least two nodes" in errors[0]


def test_the_captured_live_table_holds_the_plan():
    assert firewall_live_problems(LIVE, plan()) == []


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        pytest.param({"api_cidrs": ["10.219.0.1/32"]}, "Set api_v4 holds", id="extra-network-live"),
        pytest.param(
            {"api_cidrs": ["10.219.0.1/32", "192.0.2.0/24", "::1/128"]}, "Set api_v6", id="v6"
        ),
        pytest.param({"api_port": 8001}, "API port 8001", id="api-port"),
        pytest.param({"engine_ports": [29501, 6379]}, "engine's ports", id="engine-ports"),
    ],
)
def test_a_live_table_that_differs_is_named(changes, fragment):
    problems = firewall_live_problems(LIVE, plan(**changes))
    assert any(fragment in problem for problem in problems), problems


def test_the_peer_rule_is_checked():
    other = plan(
        nodes={**NODES, "node1": {**NODES["node1"], "fabric_address": "192.168.100.12/24"}}
    )
    assert firewall_live_problems(LIVE, other) == [
        "No rule accepts the peer 192.168.100.12 on enp1s0f1np1."
    ]


LIVE_THREE = (
    Path(__file__).parent / "fixtures" / "nftables" / "lab-node0-three-nodes-nft-1.0.6.json"
).read_text()
THREE = {
    f"node{n}": {
        "fabric_address": f"192.168.100.1{n}/24",
        "fabric_interface": "enp1s0f1np1",
        "fabric_rails": 2,
        "fabric_twin_address": f"192.168.101.1{n}/24",
    }
    for n in range(3)
}


def test_with_more_than_two_nodes_the_peers_are_a_set_in_the_rule():
    """node0's live table with three nodes on two rails (captured on the lab after the
    firewall ran with tests/integration/inventories/three_nodes.yml): each half's rule
    admits a set of two peers, and every peer of the plan is found in it."""
    three = plan(nodes=THREE, api_cidrs=["10.219.0.1/32"])
    assert firewall_live_problems(LIVE_THREE, three) == []
    four = plan(
        nodes={
            **THREE,
            "node3": {
                **THREE["node2"],
                "fabric_address": "192.168.100.13/24",
                "fabric_twin_address": "192.168.101.13/24",
            },
        },
        api_cidrs=["10.219.0.1/32"],
    )
    assert firewall_live_problems(LIVE_THREE, four) == [
        "No rule accepts the peer 192.168.100.13 on enp1s0f1np1.",
        "No rule accepts the peer 192.168.101.13 on enP2p1s0f1np1.",
    ]


def test_no_table_is_named():
    assert "not loaded" in firewall_live_problems("", plan())[0]
    items = json.loads(LIVE)["nftables"]
    without_chain = [item for item in items if "chain" not in item]
    assert "no chain on the input hook" in firewall_live_problems(without_chain, plan())[0]
