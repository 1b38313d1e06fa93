"""Verify the real state of the two lab nodes after converge (Molecule verifier: testinfra).

The nodes are reached over SSH as the play reaches them (see _lab.py).
"""

from __future__ import annotations

import ipaddress
import os
import uuid
from pathlib import Path

import pytest
from _lab import ansible_host, lab_host

NODES = ("node0", "node1")
FABRIC_IF = "enp1s0f1np1"
SYSFS_ROOT = "/var/lib/gb10-lab/sys"
# The field report's cluster, reproduced by the lab: RoCE v2 IPv4 GID index per node.
EXPECTED_GID_INDEX = {"node0": 3, "node1": 4}


def fabric_ipv4(name: str) -> str:
    address = ansible_host(name).ansible.get_variables()["fabric_address"]
    return str(ipaddress.ip_interface(address).ip)


@pytest.fixture(scope="module", params=NODES)
def lab_node(request):
    return request.param, lab_host(request.param)


def test_systemd_is_pid1_and_running(lab_node):
    _skip, host = lab_node
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"
    state = host.run("systemctl is-system-running").stdout.strip()
    assert state == "running", host.run("systemctl --failed --no-legend").stdout


def test_fabric_interface_has_real_name_and_jumbo_mtu(lab_node):
    name, host = lab_node
    assert host.interface(FABRIC_IF).exists
    assert host.file(f"/sys/class/net/{FABRIC_IF}/mtu").content_string.strip() == "9000"
    assert fabric_ipv4(name) in host.interface(FABRIC_IF).addresses


def test_jumbo_ping_crosses_the_cable_without_fragmenting():
    peer = fabric_ipv4("node1")
    host = lab_host("node0")
    fits = host.run(f"ping -c 1 -W 2 -M do -s 8972 -I {FABRIC_IF} {peer}")
    assert fits.rc == 0, fits.stdout + fits.stderr
    # One byte more must not fit: the path MTU really is 9000, not larger.
    too_big = host.run(f"ping -c 1 -W 2 -M do -s 8973 -I {FABRIC_IF} {peer}")
    assert too_big.rc != 0


def read_tree(host, leaf: str) -> dict[tuple[str, int, int], str]:
    """Every ``<dev>/ports/<port>/<leaf>/<index>`` file under the lab root, by key."""
    out = host.check_output(
        f"grep -H -s . {SYSFS_ROOT}/class/infiniband/*/ports/*/{leaf}/* || true"
    )
    values = {}
    for line in out.splitlines():
        path, _skip, value = line.partition(":")
        parts = path[len(SYSFS_ROOT) :].strip("/").split("/")
        # class/infiniband/<dev>/ports/<port>/<leaf...>/<index>
        values[(parts[2], int(parts[4]), int(parts[-1]))] = value.strip()
    return values


def expected_rows(host) -> set[tuple[str, ...]]:
    """The table show_gids must print, derived from the tree's files directly."""
    gids = read_tree(host, "gids")
    types = read_tree(host, "gid_attrs/types")
    ndevs = read_tree(host, "gid_attrs/ndevs")
    rows = set()
    for key, gid in gids.items():
        if set(gid) <= {"0", ":"} or gid == "fe80:0000:0000:0000:0000:0000:0000:0000":
            continue
        ipv4 = ""
        if gid.startswith("0000"):
            tail = gid.replace(":", "")[-8:]
            ipv4 = ".".join(str(int(tail[i : i + 2], 16)) for i in range(0, 8, 2))
        version = "v2" if types.get(key) == "RoCE v2" else "v1"
        rows.add((key[0], str(key[1]), str(key[2]), gid, ipv4, version, ndevs.get(key, "")))
    return rows


def shown_rows(host) -> tuple[set[tuple[str, ...]], int]:
    lines = host.check_output("show_gids").splitlines()
    assert lines[0] == "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV"
    assert lines[1] == "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---"
    assert lines[-1].startswith("n_gids_found=")
    rows = set()
    for line in lines[2:-1]:
        fields = line.split("\t")
        if fields[4] == "" and fields[5] == "":  # no IPv4 column: three tabs after the GID
            fields = fields[:4] + [""] + fields[6:]
        dev, port, index, gid, ipv4, version, ndev = fields
        rows.add((dev, port, index, gid, ipv4.strip(), version, ndev))
    return rows, int(lines[-1].split("=", 1)[1])


def test_show_gids_prints_exactly_what_the_lab_tree_holds(lab_node):
    name, host = lab_node
    rows, count = shown_rows(host)
    expected = expected_rows(host)
    assert rows == expected
    assert count == len(expected)
    fabric_v2 = [r for r in rows if r[4] == fabric_ipv4(name) and r[5] == "v2"]
    assert [(r[0], int(r[2]), r[6]) for r in fabric_v2] == [
        ("rocep1s0f1", EXPECTED_GID_INDEX[name], FABRIC_IF)
    ]


def test_node_sees_host_docker_socket(lab_node):
    _skip, host = lab_node
    assert host.file("/var/run/docker.sock").is_socket


def test_node_directory_is_shared_with_the_host_at_the_same_path(lab_node):
    name, host = lab_node
    node_dir = Path(os.environ.get("GB10_LAB_ROOT", "/var/lib/gb10-lab")) / name
    marker = node_dir / f"verify-{uuid.uuid4().hex}"
    host.check_output(f"sh -c 'echo {name} > {marker}'")
    try:
        assert marker.read_text().strip() == name
    finally:
        host.run(f"rm -f {marker}")
