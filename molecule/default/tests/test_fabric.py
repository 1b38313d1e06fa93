"""Verify the fabric stage's real state on both lab nodes after converge."""

from __future__ import annotations

import pytest
from _lab import ansible_host, lab_host

FABRIC_IF = "enp1s0f1np1"
TWIN_IF = "enP2p1s0f1np1"
LAB_SYSFS = "/var/lib/gb10-lab/sys"
# node: (fabric IPv4, RoCE v2 IPv4 GID index the lab tree holds, as on the field's cluster)
EXPECTED = {"node0": ("192.168.100.10", 3), "node1": ("192.168.100.11", 4)}
# The port's second half (fabric_rails: 2): node0's at the same index as its first half,
# node1's not (lab/labctl.py NODES).
TWIN = {"node0": ("192.168.101.10", 3), "node1": ("192.168.101.11", 3)}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def lab_node(request):
    return request.param, lab_host(request.param)


@pytest.mark.parametrize("source", ["sysfs", "show_gids"])
@pytest.mark.parametrize(
    ("netdev", "device", "table"),
    [(FABRIC_IF, "rocep1s0f1", EXPECTED), (TWIN_IF, "roceP2p1s0f1", TWIN)],
    ids=["first-half", "second-half"],
)
def test_module_resolves_the_per_node_gid_index(lab_node, source, netdev, device, table):
    name, _host = lab_node
    ipv4, index = table[name]
    result = ansible_host(name).ansible(
        "gb10.serving.roce_gid_info",
        f"source={source} sysfs_root={LAB_SYSFS} netdev={netdev} ipv4={ipv4}",
        check=False,
    )
    assert result.get("failed") is not True, result
    assert result["source"] == source
    assert result["selected"]["index"] == index
    assert result["selected"]["device"] == device
    assert result["selected"]["netdev"] == netdev
    assert result["selected"]["ipv4"] == ipv4


def test_module_fails_loudly_for_an_address_the_node_does_not_hold(lab_node):
    name, _host = lab_node
    result = ansible_host(name).ansible(
        "gb10.serving.roce_gid_info",
        f"source=sysfs sysfs_root={LAB_SYSFS} netdev={FABRIC_IF} ipv4=192.168.100.99",
        check=False,
    )
    # (testinfra drops the "failed" key of a failed module run; the message and the
    # missing selection show it failed.)
    assert result.get("selected") is None
    assert result["msg"].startswith("no RoCE v2 IPv4 GID matches")
    assert "192.168.100.99" in result["msg"]


def test_engine_environment_is_rendered_for_this_node(lab_node):
    name, host = lab_node
    ipv4, index = EXPECTED[name]
    env_file = host.file("/etc/gb10-serving/fabric.env")
    assert env_file.user == "root"
    assert env_file.mode == 0o644
    lines = [ln for ln in env_file.content_string.splitlines() if ln and not ln.startswith("#")]
    # Both halves' devices; the GID index pinned only where both halves agree on it.
    selection = (
        {"NCCL_IB_GID_INDEX": str(index)}
        if index == TWIN[name][1]
        else {"NCCL_IB_ADDR_FAMILY": "AF_INET", "NCCL_IB_ROCE_VERSION_NUM": "2"}
    )
    assert dict(ln.split("=", 1) for ln in lines) == {
        "NCCL_SOCKET_IFNAME": FABRIC_IF,
        "GLOO_SOCKET_IFNAME": FABRIC_IF,
        "TP_SOCKET_IFNAME": FABRIC_IF,
        "UCX_NET_DEVICES": "rocep1s0f1:1,roceP2p1s0f1:1",
        "NCCL_IB_HCA": "=rocep1s0f1:1,roceP2p1s0f1:1",
        "VLLM_HOST_IP": ipv4,
        **selection,
    }
    assert (
        f"# Rail 2: {TWIN_IF} {TWIN[name][0]}/24, RDMA device roceP2p1s0f1"
        in env_file.content_string
    )


def test_netplan_file_is_private_and_says_what_was_asked(lab_node):
    name, host = lab_node
    ipv4, _index = EXPECTED[name]
    netplan = host.file("/etc/netplan/60-gb10-fabric.yaml")
    assert netplan.user == "root"
    assert netplan.mode == 0o600
    text = netplan.content_string
    for fragment in (f"{FABRIC_IF}:", f"- {ipv4}/24", "mtu: 9000", "link-local: []"):
        assert fragment in text
    assert f"{TWIN_IF}:" in text
    assert f"- {TWIN[name][0]}/24" in text
    assert text.count("mtu: 9000") == 2
    assert "routes" not in text
    assert "gateway" not in text


def test_fabric_port_is_managed_with_address_and_no_default_route(lab_node):
    name, host = lab_node
    ipv4, _index = EXPECTED[name]
    assert host.service("systemd-networkd").is_running
    assert host.service("systemd-networkd").is_enabled
    assert f"{ipv4}" in host.interface(FABRIC_IF).addresses
    assert TWIN[name][0] in host.interface(TWIN_IF).addresses
    assert host.file(f"/sys/class/net/{TWIN_IF}/mtu").content_string.strip() == "9000"
    routes = host.check_output("ip -4 route show default")
    assert FABRIC_IF not in routes
    assert TWIN_IF not in routes
    for netdev in (FABRIC_IF, TWIN_IF):
        link_local = host.check_output(f"ip -6 addr show dev {netdev} scope link")
        assert link_local.strip() == ""
