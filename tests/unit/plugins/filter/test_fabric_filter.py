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
