# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.fabric_plan: the parser's plan as plain data."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.fabric import FilterModule


def fabric_plan(*args):
    return FilterModule().filters()["fabric_plan"](*args)


def test_returns_errors_and_nodes_as_plain_data():
    plan = fabric_plan(
        {
            "node0": {"fabric_interface": "enp1s0f1np1", "fabric_address": "10.9.0.1/30"},
            "node1": {"fabric_interface": "enp1s0f1np1", "fabric_address": "10.9.0.2/30"},
        }
    )
    assert plan["errors"] == []
    assert plan["nodes"]["node0"]["peer"] == "10.9.0.2"
    assert plan["nodes"]["node1"]["mtu"] == 9000  # the default when not given


def test_bad_input_comes_back_as_errors_not_an_exception():
    plan = fabric_plan({"node0": {}, "node1": {}})
    assert plan["nodes"] == {}
    assert any("fabric_interface is not set for node0" in e for e in plan["errors"])


def test_hosts_are_read_from_hostvars_with_the_default_mtu():
    hostvars = {
        "node0": {"fabric_interface": "enp1s0f1np1", "fabric_address": "10.9.0.1/30"},
        "node1": {
            "fabric_interface": "enp1s0f1np1",
            "fabric_address": "10.9.0.2/30",
            "unrelated": "ignored",
        },
    }
    plan = fabric_plan(["node0", "node1"], hostvars, 9000)
    assert plan["errors"] == []
    assert plan["nodes"]["node1"]["peer"] == "10.9.0.1"
    assert plan["nodes"]["node0"]["mtu"] == 9000


def test_a_list_of_hosts_without_hostvars_raises_filter_error():
    with pytest.raises(AnsibleFilterError, match="needs hostvars"):
        fabric_plan(["node0", "node1"])


@pytest.mark.parametrize("value", ["node0", 42, None])
def test_neither_mapping_nor_host_list_raises_filter_error(value):
    with pytest.raises(AnsibleFilterError, match="expects a mapping"):
        fabric_plan(value)


def test_hosts_without_fabric_rails_take_the_default_rails():
    """The firewall and the fabric pass the cluster's fabric_rails; a host that does not
    set its own gets it, so both halves are planned from the twin addresses."""
    hostvars = {
        f"node{n}": {
            "fabric_interface": "enp1s0f1np1",
            "fabric_address": f"10.9.0.{n + 1}/30",
            "fabric_twin_address": f"10.9.1.{n + 1}/30",
        }
        for n in range(2)
    }
    plan = fabric_plan(["node0", "node1"], hostvars, 9000, 2)
    assert plan["errors"] == []
    assert [r["interface"] for r in plan["nodes"]["node0"]["rails"]] == [
        "enp1s0f1np1",
        "enP2p1s0f1np1",
    ]
    assert len(fabric_plan(["node0", "node1"], hostvars, 9000, 1)["nodes"]["node0"]["rails"]) == 1


def test_fabric_facts_takes_the_registered_loop_and_names_its_own_errors():
    facts = FilterModule().filters()["fabric_facts"]
    node = {
        "interface": "a",
        "ipv4": "10.9.0.1",
        "prefix": 30,
        "mtu": 9000,
        "peer": "10.9.0.2",
        "peers": ["10.9.0.2"],
    }
    selected = {
        "device": "rocep1s0f1",
        "port": 1,
        "index": 3,
        "netdev": "a",
        "ipv4": "10.9.0.1",
        "gid": "g",
    }
    result = facts(node, {"results": [{"selected": selected, "rows": [], "source": "sysfs"}]})
    assert result["env"]["NCCL_IB_HCA"] == "=rocep1s0f1:1"
    assert result["node"]["gid_source"] == "sysfs"
    with pytest.raises(
        AnsibleFilterError, match="fabric_facts: 1 rails planned but GIDs resolved for 0"
    ):
        facts(node, {"results": []})
    with pytest.raises(AnsibleFilterError, match="the rails' roce_gid_info results"):
        facts(node, "text")


def test_a_twin_interface_from_hostvars_is_the_second_half_of_the_plan():
    """fabric_twin_interface read from hostvars as the fabric and firewall roles read it."""
    hostvars = {
        f"node{n}": {
            "fabric_interface": "eth1",
            "fabric_address": f"10.9.0.{n + 1}/30",
            "fabric_twin_interface": "eth2",
            "fabric_twin_address": f"10.9.1.{n + 1}/30",
        }
        for n in range(2)
    }
    plan = fabric_plan(["node0", "node1"], hostvars, 9000, 2)
    assert plan["nodes"]["node1"]["rails"][1] == {
        "interface": "eth2",
        "ipv4": "10.9.1.2",
        "prefix": 30,
        "network": "10.9.1.0/30",
        "peers": ["10.9.1.1"],
    }
