# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""fabric_facts: a node's facts and engine environment from its rails and their GID tables.

The tables are real ``show_gids`` output of a GB10 (fixtures/rdma/show_gids_sample2...:
host gb10-1, both halves of its first port addressed, each RoCE v2 IPv4 GID at index 3),
parsed and selected the way the roce_gid_info module does it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._fabric_env import (
    FabricEnvError,
    fabric_facts,
)
from ansible_collections.gb10.serving.plugins.module_utils._roce_gids import (
    parse_show_gids,
    select_rocev2_ipv4,
    sort_rows,
)

FIXTURES = Path(__file__).parent / "fixtures" / "rdma"
GB10_1 = (FIXTURES / "show_gids_sample2_dgx_spark_gb10_rocep1s0f0.txt").read_text()
# gb10-1's halves of its first port, with the addresses its table shows.
FIRST = {
    "interface": "enp1s0f0np0",
    "ipv4": "192.168.100.10",
    "prefix": 24,
    "peers": ["192.168.100.11"],
}
SECOND = {
    "interface": "enP2p1s0f0np0",
    "ipv4": "192.168.100.14",
    "prefix": 24,
    "peers": ["192.168.100.15"],
}
MAPPED_14 = "0000:0000:0000:0000:0000:ffff:c0a8:640e"  # ::ffff:192.168.100.14
GLOBAL_V6 = "fd00:0000:0000:0001:0000:0000:0000:0014"


def gid_line(index, gid, version, ipv4=""):
    """One show_gids row of roceP2p1s0f0 (tab-separated, as show_gids prints it)."""
    return f"roceP2p1s0f0\t1\t{index}\t{gid}\t{ipv4}\t{version}\tenP2p1s0f0np0"


def with_second_half(*lines):
    """gb10-1's table with roceP2p1s0f0's IPv4 rows replaced by ``lines``."""
    kept = [
        line
        for line in GB10_1.splitlines()
        if not (line.startswith("roceP2p1s0f0") and MAPPED_14 in line)
        and not line.startswith("n_gids_found=")
    ]
    rows = [line for line in kept if line.startswith("roce")]
    return "\n".join([*kept, *lines, f"n_gids_found={len(rows) + len(lines)}"]) + "\n"


# The same table after a global IPv6 address came to enP2p1s0f0np0 before its IPv4 one:
# the kernel gives each address a v1/v2 pair in the first free slots, so the IPv6 pair takes
# 2/3 and the IPv4 pair moves to 4/5 (the halves' indexes now differ: 3 and 5).
MOVED = with_second_half(
    gid_line(2, GLOBAL_V6, "v1"),
    gid_line(3, GLOBAL_V6, "v2"),
    gid_line(4, MAPPED_14, "v1", "192.168.100.14"),
    gid_line(5, MAPPED_14, "v2", "192.168.100.14"),
)


def plan(*rails):
    first = rails[0]
    return {
        "interface": first["interface"],
        "ipv4": first["ipv4"],
        "prefix": first["prefix"],
        "mtu": 9000,
        "peer": first["peers"][0],
        "peers": first["peers"],
        "rails": list(rails),
    }


def found(table, *rails):
    """What roce_gid_info registers for each rail (looped): source, rows, selected."""
    rows = sort_rows(parse_show_gids(table))
    return [
        {
            "source": "show_gids",
            "rows": [row.to_dict() for row in rows],
            "selected": select_rocev2_ipv4(rows, rail["interface"], rail["ipv4"]).to_dict(),
        }
        for rail in rails
    ]


def test_one_rail_gives_exactly_the_single_device_environment():
    """fabric_rails: 1 keeps the environment the engine was started with before rails."""
    facts = fabric_facts(plan(FIRST), found(GB10_1, FIRST))
    assert facts["env"] == {
        "NCCL_SOCKET_IFNAME": "enp1s0f0np0",
        "GLOO_SOCKET_IFNAME": "enp1s0f0np0",
        "TP_SOCKET_IFNAME": "enp1s0f0np0",
        "UCX_NET_DEVICES": "rocep1s0f0:1",
        "NCCL_IB_HCA": "=rocep1s0f0:1",
        "NCCL_IB_GID_INDEX": "3",
        "VLLM_HOST_IP": "192.168.100.10",
    }
    node = facts["node"]
    assert (node["rdma_device"], node["gid_index"], node["gid_selection"]) == (
        "rocep1s0f0",
        3,
        "index",
    )
    assert node["gid"] == "0000:0000:0000:0000:0000:ffff:c0a8:640a"


def test_two_halves_at_one_index_list_both_devices_and_pin_the_index():
    facts = fabric_facts(plan(FIRST, SECOND), found(GB10_1, FIRST, SECOND))
    env = facts["env"]
    assert env["NCCL_IB_HCA"] == "=rocep1s0f0:1,roceP2p1s0f0:1"
    assert env["UCX_NET_DEVICES"] == "rocep1s0f0:1,roceP2p1s0f0:1"
    assert env["NCCL_IB_GID_INDEX"] == "3"
    assert "NCCL_IB_ADDR_FAMILY" not in env
    # Sockets and the advertised address stay on the first half.
    assert (env["NCCL_SOCKET_IFNAME"], env["VLLM_HOST_IP"]) == ("enp1s0f0np0", "192.168.100.10")
    rails = facts["node"]["rails"]
    assert [(r["rdma_device"], r["gid_index"], r["peers"]) for r in rails] == [
        ("rocep1s0f0", 3, ["192.168.100.11"]),
        ("roceP2p1s0f0", 3, ["192.168.100.15"]),
    ]
    assert "at index 3" in facts["node"]["gid_selection_reason"]


def test_halves_at_different_indexes_leave_the_index_to_nccl():
    facts = fabric_facts(plan(FIRST, SECOND), found(MOVED, FIRST, SECOND))
    env = facts["env"]
    assert "NCCL_IB_GID_INDEX" not in env
    assert (env["NCCL_IB_ADDR_FAMILY"], env["NCCL_IB_ROCE_VERSION_NUM"]) == ("AF_INET", "2")
    assert env["NCCL_IB_HCA"] == "=rocep1s0f0:1,roceP2p1s0f0:1"
    node = facts["node"]
    assert node["gid_selection"] == "auto"
    assert [r["gid_index"] for r in node["rails"]] == [3, 5]
    assert "rocep1s0f0:1 3, roceP2p1s0f0:1 5" in node["gid_selection_reason"]


def test_nccl_is_not_left_to_choose_between_two_ipv4_gids_on_one_half():
    """A second IPv4 on a half (a 169.254.x.x link-local one, say) is a GID NCCL's own
    choice could take: with differing indexes that is an error naming the address."""
    second_ipv4 = with_second_half(
        gid_line(2, "0000:0000:0000:0000:0000:ffff:a9fe:0e01", "v1", "169.254.14.1"),
        gid_line(3, "0000:0000:0000:0000:0000:ffff:a9fe:0e01", "v2", "169.254.14.1"),
        gid_line(4, MAPPED_14, "v1", "192.168.100.14"),
        gid_line(5, MAPPED_14, "v2", "192.168.100.14"),
    )
    with pytest.raises(FabricEnvError) as caught:
        fabric_facts(plan(FIRST, SECOND), found(second_ipv4, FIRST, SECOND))
    message = str(caught.value)
    assert "roceP2p1s0f0 (enP2p1s0f0np0) also holds 169.254.14.1 at index 3" in message
    assert "remove that address from enP2p1s0f0np0" in message


def test_a_device_with_only_link_local_gids_is_never_listed():
    """rocep1s0f1 (enp1s0f1np1) holds only fe80 GIDs in this table: no selection exists,
    so no rail can carry it into NCCL_IB_HCA."""
    unaddressed = {**SECOND, "interface": "enp1s0f1np1"}
    with pytest.raises(ValueError, match="no RoCE v2 IPv4 GID matches"):
        found(GB10_1, FIRST, unaddressed)


def test_a_selection_of_another_netdev_is_refused():
    results = found(GB10_1, FIRST, SECOND)
    with pytest.raises(FabricEnvError, match="is of enp1s0f0np0"):
        fabric_facts(plan(FIRST, SECOND), [results[0], results[0]])


def test_two_rails_on_one_device_are_refused():
    results = found(GB10_1, FIRST, FIRST)
    with pytest.raises(FabricEnvError, match="two rails resolve to one RDMA device"):
        fabric_facts(plan(FIRST, FIRST), results)


def test_a_rail_count_that_differs_from_the_results_is_refused():
    with pytest.raises(FabricEnvError, match="2 rails planned but GIDs resolved for 1"):
        fabric_facts(plan(FIRST, SECOND), found(GB10_1, FIRST))
