# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plan_fabric: every node's fabric variables checked together."""

from __future__ import annotations

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._fabric_plan import plan_fabric


def node(interface="enp1s0f1np1", address="192.168.100.10/24", mtu=9000):
    return {"fabric_interface": interface, "fabric_address": address, "fabric_mtu": mtu}


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
    }
    assert plan["nodes"]["node1"]["peer"] == "192.168.100.10"


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
        ["fabric_address 192.168.100.10 is set on node0 and node1"],
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
