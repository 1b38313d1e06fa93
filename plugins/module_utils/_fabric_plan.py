# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check the fabric variables of all nodes together and derive each node's plan.

Pure Python, no Ansible imports. Input: one mapping per node with the role variables
``fabric_interface``, ``fabric_address`` (IPv4 with prefix), ``fabric_mtu`` and, for the
second half of the port, ``fabric_rails``, ``fabric_twin_interface`` and
``fabric_twin_address``. Output: every problem found (each naming the variable and the
fix), and for each node its rails (interface, address, prefix, peers on that rail), the
first rail's values also at the top level, and the MTU.

A GB10 shows each QSFP port of its ConnectX-7 as two PCIe halves, each an RDMA device with
its own netdev (``enp1s0f1np1`` and ``enP2p1s0f1np1`` for the second port). One half
carries about half the port's bandwidth; ``fabric_rails: 2`` addresses both.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass, field

# Linux limits interface names to 15 bytes; no whitespace, '/' or ':'.
_IFNAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
# The first half's netdev on a GB10 (PCI domain 0) and its twin in PCI domain 2:
# enp1s0f1np1 -> enP2p1s0f1np1.
_GB10_HALF = re.compile(r"^enp([0-9]+s[0-9]+f[0-9]+np[0-9]+)$")
RAILS = (1, 2)
# ConnectX-7 (mlx5) accepts MTUs up to 9978; below 1280 IPv6 (and RoCE's 1024-byte
# path MTU with headers) stops working.
MTU_MIN = 1280
MTU_MAX = 9978


@dataclass(frozen=True)
class FabricNode:
    """What one node needs to configure and check its side of the cable."""

    host: str
    interface: str
    ipv4: str
    prefix: int
    network: str
    mtu: int
    peer: str
    peers: list = field(default_factory=list)
    # One entry per rail, the first being the values above: interface, ipv4, prefix,
    # network, peers (the other nodes' addresses on that rail).
    rails: list = field(default_factory=list)

    def to_dict(self):
        return asdict(self)


@dataclass(frozen=True)
class FabricPlan:
    errors: list
    nodes: dict

    def to_dict(self):
        return {
            "errors": list(self.errors),
            "nodes": {host: node.to_dict() for host, node in self.nodes.items()},
        }


def twin_interface(interface):
    """The netdev of the port's other PCIe half on a GB10, or None for another name."""
    match = _GB10_HALF.match(str(interface or ""))
    return f"enP2p{match.group(1)}" if match else None


def _check_interface(host, value, errors, name="fabric_interface"):
    if value is None or str(value).strip() == "":
        errors.append(
            f"{name} is not set for {host}: set it to the ConnectX-7 port the "
            "cable is plugged into (for example enp1s0f1np1; `ip -br link` lists them)."
        )
        return None
    if not _IFNAME.match(str(value)):
        errors.append(
            f"{name} '{value}' on {host} is not an interface name (at most 15 "
            "letters, digits, '.', '_' or '-'): set it to the port's name from `ip -br link`."
        )
        return None
    return str(value)


def _check_address(
    host, value, errors, name="fabric_address", example="192.168.100.10/24", missing=None
):
    if value is None or str(value).strip() == "":
        errors.append(
            f"{name} is not set for {host}: "
            + (
                missing
                or f"set the node's address on the cable with its prefix, for example {example}."
            )
        )
        return None
    text = str(value).strip()
    if "/" not in text:
        errors.append(
            f"{name} '{text}' on {host} has no prefix length: write it as "
            f"{text}/24 (or the prefix of your fabric subnet)."
        )
        return None
    try:
        iface = ipaddress.ip_interface(text)
    except ValueError:
        errors.append(
            f"{name} '{text}' on {host} is not an IPv4 address with a prefix: "
            f"write it as for example {example}."
        )
        return None
    if iface.version != 4:
        errors.append(
            f"{name} '{text}' on {host} is IPv6: RoCE v2 GID selection here uses "
            f"IPv4-mapped GIDs, so give the cable an IPv4 address, for example {example}."
        )
        return None
    ip = iface.ip
    if ip.is_loopback or ip.is_multicast or ip.is_unspecified or ip.is_reserved:
        errors.append(
            f"{name} '{text}' on {host} cannot be used on a link: pick a private "
            f"unicast address, for example {example}."
        )
        return None
    if iface.network.prefixlen == 32:
        errors.append(
            f"{name} '{text}' on {host} has prefix /32, which leaves no room for the "
            "peer: use the prefix of a subnet holding both nodes, for example /24."
        )
        return None
    if iface.network.prefixlen <= 30 and ip in (
        iface.network.network_address,
        iface.network.broadcast_address,
    ):
        errors.append(
            f"{name} '{text}' on {host} is the network or broadcast address of "
            f"{iface.network}: pick a host address inside it."
        )
        return None
    return iface


def _check_mtu(host, value, errors):
    try:
        mtu = int(value)
    except (TypeError, ValueError):
        errors.append(f"fabric_mtu '{value}' on {host} is not a number: set it to 9000.")
        return None
    if isinstance(value, bool) or not MTU_MIN <= mtu <= MTU_MAX:
        errors.append(
            f"fabric_mtu {value} on {host} is out of range {MTU_MIN}..{MTU_MAX}: set it to "
            "9000 (jumbo frames on the direct cable)."
        )
        return None
    return mtu


def _check_rails(host, value, errors):
    if isinstance(value, bool):
        value = None
    try:
        rails = int(value)
    except (TypeError, ValueError):
        rails = None
    if rails not in RAILS:
        errors.append(
            f"fabric_rails '{value}' on {host} is not 1 or 2: set 2 to use both PCIe halves of "
            "the cabled port (each its own RDMA device and address), 1 for the first half only."
        )
        return None
    return rails


def _check_twin(host, variables, interface, errors):
    """(twin interface, twin address) of a node with two rails, or (None, None)."""
    twin = variables.get("fabric_twin_interface")
    if twin is None or str(twin).strip() == "":
        twin = twin_interface(interface)
        if twin is None and interface is not None:
            errors.append(
                f"fabric_twin_interface is not set for {host} and cannot be derived from "
                f"fabric_interface '{interface}' (a GB10 names the halves enp1s0f1np1 and "
                "enP2p1s0f1np1): set it to the netdev of the port's other half "
                "(`ibdev2netdev` lists both), or set fabric_rails: 1."
            )
    else:
        twin = _check_interface(host, twin, errors, "fabric_twin_interface")
    if twin is not None and twin == interface:
        errors.append(
            f"fabric_twin_interface '{twin}' on {host} is fabric_interface itself: set it to the "
            "netdev of the port's other PCIe half (for example enP2p1s0f1np1)."
        )
        twin = None
    address = _check_address(
        host,
        variables.get("fabric_twin_address"),
        errors,
        "fabric_twin_address",
        "192.168.101.10/24",
        missing=(
            f"with fabric_rails 2 each node needs an address on the port's second PCIe half "
            f"({twin or 'fabric_twin_interface'}), in a subnet of its own, for example "
            "192.168.101.10/24; or set fabric_rails: 1 to use the first half only."
        ),
    )
    return twin, address


def _check_one_subnet(rail, name, addresses, errors):
    networks = {str(a.network) for a in addresses.values()}
    if len(networks) > 1:
        listing = ", ".join(f"{h} {a.network}" for h, a in addresses.items())
        where = (
            "share one direct cable or switch" if rail == 1 else "reach each other's second half"
        )
        errors.append(
            f"{name} values are not in one subnet ({listing}): the nodes {where}, so give "
            "them addresses in the same subnet with the same prefix."
        )


def plan_fabric(nodes):
    """Check each node's fabric variables together, return a FabricPlan.

    ``nodes`` is ``{host: {fabric_interface, fabric_address, fabric_mtu, fabric_rails,
    fabric_twin_interface, fabric_twin_address}}``; a missing ``fabric_rails`` is 1.
    Node order is kept: each node's ``peer`` is the first other node in that order, and
    ``peers`` lists every other node (all pairs, as through a switch).
    """
    errors = []
    checked = {}
    for host, variables in nodes.items():
        variables = variables or {}
        interface = _check_interface(host, variables.get("fabric_interface"), errors)
        address = _check_address(host, variables.get("fabric_address"), errors)
        mtu = _check_mtu(host, variables.get("fabric_mtu", 9000), errors)
        rails = _check_rails(host, variables.get("fabric_rails", 1), errors)
        twin = (None, None)
        if rails == 2:
            twin = _check_twin(host, variables, interface, errors)
        checked[host] = (interface, address, mtu, rails, twin)

    if len(nodes) < 2:
        errors.append(
            f"the fabric needs at least two nodes, the inventory has {len(nodes)}: add the "
            "peer node to the head or worker group."
        )

    rail_counts = {host: r for host, (_i, _a, _m, r, _t) in checked.items() if r is not None}
    if len(set(rail_counts.values())) > 1:
        listing = ", ".join(f"{h} {r}" for h, r in rail_counts.items())
        errors.append(
            f"fabric_rails differs between nodes ({listing}): a rail joins the same half on "
            "every node; set one value for the whole cluster."
        )

    addresses = {host: a for host, (_i, a, _m, _r, _t) in checked.items() if a is not None}
    twins = {host: t[1] for host, (_i, _a, _m, _r, t) in checked.items() if t[1] is not None}
    by_ip = {}
    for name, values in (("fabric_address", addresses), ("fabric_twin_address", twins)):
        for host, address in values.items():
            by_ip.setdefault(str(address.ip), []).append(f"{host} ({name})")
    for ip, owners in by_ip.items():
        if len(owners) > 1:
            errors.append(
                f"the address {ip} is set on {' and '.join(owners)}: each node needs its "
                "own address on each half of the cable."
            )
    _check_one_subnet(1, "fabric_address", addresses, errors)
    _check_one_subnet(2, "fabric_twin_address", twins, errors)
    for host, twin in twins.items():
        first = addresses.get(host)
        if first is not None and twin.network.overlaps(first.network):
            errors.append(
                f"fabric_twin_address {twin} on {host} overlaps the subnet of fabric_address "
                f"{first}: give the second half a subnet of its own (for example "
                "192.168.101.0/24). In one subnet Linux answers ARP for either address on "
                "either half, and RoCE traffic meant for one half arrives on the other."
            )
    mtus = {host: m for host, (_i, _a, m, _r, _t) in checked.items() if m is not None}
    if len(set(mtus.values())) > 1:
        listing = ", ".join(f"{h} {m}" for h, m in mtus.items())
        errors.append(
            f"fabric_mtu differs between nodes ({listing}): a mismatch drops every large "
            "packet; set one value for the whole cluster."
        )

    if errors:
        return FabricPlan(errors=errors, nodes={})

    planned = {}
    for host, (interface, _address, mtu, rails, (twin, _twin)) in checked.items():
        rail_list = [_rail(host, interface, addresses, checked)]
        if rails == 2:
            rail_list.append(_rail(host, twin, twins, checked))
        first = rail_list[0]
        planned[host] = FabricNode(
            host=host,
            interface=interface,
            ipv4=first["ipv4"],
            prefix=first["prefix"],
            network=first["network"],
            mtu=mtu,
            peer=first["peers"][0],
            peers=first["peers"],
            rails=rail_list,
        )
    return FabricPlan(errors=[], nodes=planned)


def _rail(host, interface, addresses, checked):
    address = addresses[host]
    return {
        "interface": interface,
        "ipv4": str(address.ip),
        "prefix": address.network.prefixlen,
        "network": str(address.network),
        "peers": [str(addresses[other].ip) for other in checked if other != host],
    }
