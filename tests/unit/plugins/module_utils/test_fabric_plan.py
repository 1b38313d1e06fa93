# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plan_fabric: every node's fabric variables checked together."""

from __future__ import annotations

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._fabric_plan import (
    plan_fabric,
    twin_interface,
)


def node(interface="enp1s0f1np1", address="192.168.100.10/24", mtu=9000, **twin):
    return {"fabric_interface": interface, "fabric_address": address, "fabric_mtu": mtu, **twin}


def twin(n, address=None, **more):
    """Node n of a two-rail cluster: 192.168.100.1n on the first half, .101.1n on the second."""
    return node(
        address=f"192.168.100.{10 + n}/24",
        fabric_rails=2,
        fabric_twin_address=address or f"192.168.101.{10 + n}/24",
        **more,
    )


LAB = {
    "node0": node(address="192.168.100.10/24"),
    "node1": node(address="192.168.100.11/24"),
}


def test_lab_inventory_plans_both_nodes_with_each_other_as_peer():
    plan = plan_fabric(LAB).to_dict()
    assert plan["errors"] == []
    assert plan["nodes"]["node0"] == {
        "host": "node0",
        "interface": "enp1s0f1np1",
        "ipv4": "192.168.100.10",
        "prefix": 24,
        "network": "192.168.100.0/24",
        "mtu": 9000,
        "peer": "192.168.100.11",
        "peers": ["192.168.100.11"],
        "rails": [
            {
                "interface": "enp1s0f1np1",
                "ipv4": "192.168.100.10",
                "prefix": 24,
                "network": "192.168.100.0/24",
                "peers": ["192.168.100.11"],
            }
        ],
    }
    assert plan["nodes"]["node1"]["peer"] == "192.168.100.10"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("enp1s0f1np1", "enP2p1s0f1np1"),
        ("enp1s0f0np0", "enP2p1s0f0np0"),
        ("eth0", None),
        ("enP2p1s0f1np1", None),
    ],
)
def test_the_twin_of_a_gb10_netdev_is_its_pci_domain_2_name(first, second):
    """Names as a GB10 shows them (ibdev2netdev in tests/unit/.../fixtures/rdma)."""
    assert twin_interface(first) == second


def test_two_rails_plan_both_halves_each_with_its_peers():
    plan = plan_fabric({"node0": twin(0), "node1": twin(1)}).to_dict()
    assert plan["errors"] == []
    node0 = plan["nodes"]["node0"]
    assert node0["interface"] == "enp1s0f1np1"
    assert node0["peers"] == ["192.168.100.11"]
    assert node0["rails"][1] == {
        "interface": "enP2p1s0f1np1",
        "ipv4": "192.168.101.10",
        "prefix": 24,
        "network": "192.168.101.0/24",
        "peers": ["192.168.101.11"],
    }
    assert plan["nodes"]["node1"]["rails"][1]["peers"] == ["192.168.101.10"]


def test_a_twin_interface_set_in_the_inventory_wins_over_the_derived_name():
    nodes = {
        "a": twin(0, interface="eth1", fabric_twin_interface="eth2"),
        "b": twin(1, interface="eth1", fabric_twin_interface="eth2"),
    }
    plan = plan_fabric(nodes)
    assert plan.errors == []
    assert [r["interface"] for r in plan.nodes["a"].rails] == ["eth1", "eth2"]


def test_three_nodes_on_two_rails_check_every_pair_on_both_halves():
    plan = plan_fabric({f"node{n}": twin(n) for n in range(3)})
    assert plan.errors == []
    rails = plan.nodes["node1"].rails
    assert rails[0]["peers"] == ["192.168.100.10", "192.168.100.12"]
    assert rails[1]["peers"] == ["192.168.101.10", "192.168.101.12"]


def test_through_a_switch_every_node_checks_every_other():
    """Four nodes on one fabric subnet: the link checks ping every pair (roles/fabric/tasks/
    verify.yml loops over peers), each node all three others, in inventory order."""
    four = {f"node{n}": node(address=f"192.168.100.{10 + n}/24") for n in range(4)}
    plan = plan_fabric(four)
    assert plan.errors == []
    for n in range(4):
        others = [f"192.168.100.{10 + m}" for m in range(4) if m != n]
        assert plan.nodes[f"node{n}"].peers == others
    pairs = {frozenset((a.ipv4, peer)) for a in plan.nodes.values() for peer in a.peers}
    assert len(pairs) == 6


def test_point_to_point_slash_31_and_link_local_are_accepted():
    plan = plan_fabric(
        {"a": node(address="169.254.35.62/31"), "b": node(address="169.254.35.63/31")}
    )
    assert plan.errors == []
    assert plan.nodes["a"].peer == "169.254.35.63"


def test_mtu_given_as_string_from_inventory_is_accepted():
    plan = plan_fabric({"a": node(mtu="9000"), "b": node(address="192.168.100.11/24")})
    assert plan.errors == []
    assert plan.nodes["a"].mtu == 9000


BAD = [
    pytest.param(
        {"node0": node(interface=None), "node1": LAB["node1"]},
        ["fabric_interface is not set for node0", "enp1s0f1np1"],
        id="missing-interface",
    ),
    pytest.param(
        {"node0": node(interface="enp1s0f1np1 "), "node1": LAB["node1"]},
        ["fabric_interface 'enp1s0f1np1 ' on node0 is not an interface name"],
        id="interface-with-space",
    ),
    pytest.param(
        {"node0": node(interface="averyveryverylongname0"), "node1": LAB["node1"]},
        ["is not an interface name"],
        id="interface-too-long",
    ),
    pytest.param(
        {"node0": node(address=None), "node1": LAB["node1"]},
        ["fabric_address is not set for node0"],
        id="missing-address",
    ),
    pytest.param(
        {"node0": node(address="192.168.100.10"), "node1": LAB["node1"]},
        ["fabric_address '192.168.100.10' on node0 has no prefix length", "192.168.100.10/24"],
        id="no-prefix",
    ),
    pytest.param(
        {"node0": node(address="192.168.100.300/24"), "node1": LAB["node1"]},
        ["is not an IPv4 address with a prefix"],
        id="bad-octet",
    ),
    pytest.param(
        {"node0": node(address="fd00::10/64"), "node1": LAB["node1"]},
        ["fabric_address 'fd00::10/64' on node0 is IPv6"],
        id="ipv6",
    ),
    pytest.param(
        {"node0": node(address="127.0.0.5/8"), "node1": LAB["node1"]},
        ["cannot be used on a link"],
        id="loopback",
    ),
    pytest.param(
        {"node0": node(address="192.168.100.10/32"), "node1": LAB["node1"]},
        ["has prefix /32"],
        id="slash-32",
    ),
    pytest.param(
        {"node0": node(address="192.168.100.0/24"), "node1": LAB["node1"]},
        ["network or broadcast address of 192.168.100.0/24"],
        id="network-address",
    ),
    pytest.param(
        {"node0": LAB["node0"], "node1": node(address="192.168.100.10/24")},
        ["the address 192.168.100.10 is set on node0 (fabric_address) and node1 (fabric_address)"],
        id="same-address",
    ),
    pytest.param(
        {"node0": LAB["node0"], "node1": node(address="192.168.101.11/24")},
        ["not in one subnet (node0 192.168.100.0/24, node1 192.168.101.0/24)"],
        id="two-subnets",
    ),
    pytest.param(
        {"node0": LAB["node0"], "node1": node(address="192.168.100.11/25")},
        ["not in one subnet"],
        id="different-prefix",
    ),
    pytest.param(
        {"node0": node(mtu=100000), "node1": node(address="192.168.100.11/24", mtu=100000)},
        ["fabric_mtu 100000 on node0 is out of range 1280..9978", "set it to 9000"],
        id="mtu-too-big",
    ),
    pytest.param(
        {"node0": node(mtu=576), "node1": node(address="192.168.100.11/24", mtu=576)},
        ["fabric_mtu 576 on node0 is out of range"],
        id="mtu-too-small",
    ),
    pytest.param(
        {"node0": node(mtu="jumbo"), "node1": LAB["node1"]},
        ["fabric_mtu 'jumbo' on node0 is not a number"],
        id="mtu-not-a-number",
    ),
    pytest.param(
        {"node0": LAB["node0"], "node1": node(address="192.168.100.11/24", mtu=1500)},
        ["fabric_mtu differs between nodes (node0 9000, node1 1500)"],
        id="mtu-mismatch",
    ),
    pytest.param(
        {"node0": LAB["node0"]},
        ["the fabric needs at least two nodes, the inventory has 1"],
        id="single-node",
    ),
    pytest.param(
        {"node0": node(fabric_rails=3), "node1": node(address="192.168.100.11/24", fabric_rails=3)},
        ["fabric_rails '3' on node0 is not 1 or 2", "set 2 to use both PCIe halves"],
        id="rails-3",
    ),
    pytest.param(
        {"node0": twin(0), "node1": LAB["node1"]},
        ["fabric_rails differs between nodes (node0 2, node1 1)"],
        id="rails-mismatch",
    ),
    pytest.param(
        {"node0": node(fabric_rails=2), "node1": twin(1)},
        ["fabric_twin_address is not set for node0", "192.168.101.10/24"],
        id="twin-address-missing",
    ),
    pytest.param(
        {"node0": twin(0, interface="eth1"), "node1": twin(1, interface="eth1")},
        [
            "fabric_twin_interface is not set for node0 and cannot be derived from "
            "fabric_interface 'eth1'"
        ],
        id="twin-interface-not-derivable",
    ),
    pytest.param(
        {"node0": twin(0, fabric_twin_interface="enp1s0f1np1"), "node1": twin(1)},
        ["fabric_twin_interface 'enp1s0f1np1' on node0 is fabric_interface itself"],
        id="twin-interface-is-the-first",
    ),
    pytest.param(
        {
            "node0": twin(0, address="192.168.100.20/24"),
            "node1": twin(1, address="192.168.100.21/24"),
        },
        [
            "fabric_twin_address 192.168.100.20/24 on node0 overlaps the subnet of fabric_address",
            "ARP",
        ],
        id="twin-in-the-first-subnet",
    ),
    pytest.param(
        {"node0": twin(0, address="192.168.100.11/24"), "node1": twin(1)},
        [
            "the address 192.168.100.11 is set on node1 (fabric_address) and "
            "node0 (fabric_twin_address)"
        ],
        id="twin-address-taken",
    ),
    pytest.param(
        {"node0": twin(0), "node1": twin(1, address="192.168.102.11/24")},
        [
            "fabric_twin_address values are not in one subnet "
            "(node0 192.168.101.0/24, node1 192.168.102.0/24)"
        ],
        id="twins-in-two-subnets",
    ),
    pytest.param(
        {"node0": twin(0, address="192.168.101.10"), "node1": twin(1)},
        ["fabric_twin_address '192.168.101.10' on node0 has no prefix length"],
        id="twin-no-prefix",
    ),
]


@pytest.mark.parametrize(("nodes", "fragments"), BAD)
def test_bad_input_is_reported_with_the_variable_and_no_plan(nodes, fragments):
    plan = plan_fabric(nodes)
    assert plan.nodes == {}
    joined = " ".join(plan.errors)
    for fragment in fragments:
        assert fragment in joined


def test_every_problem_is_reported_at_once():
    plan = plan_fabric(
        {
            "node0": node(interface="", address="192.168.100.10"),
            "node1": node(address="192.168.100.11/24", mtu=99),
        }
    )
    assert len(plan.errors) == 3
    assert [e.split(" ")[0] for e in plan.errors] == [
        "fabric_interface",
        "fabric_address",
        "fabric_mtu",
    ]
