# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check the fabric variables of all nodes together and derive each node's plan.

Pure Python, no Ansible imports. Input: one mapping per node with the role variables
``fabric_interface``, ``fabric_address`` (IPv4 with prefix) and ``fabric_mtu``. Output:
every problem found (each naming the variable and the fix), and for each node its
interface, address, prefix, MTU and peer on the cable.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass, field

# Linux limits interface names to 15 bytes; no whitespace, '/' or ':'.
_IFNAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
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


def _check_interface(host, value, errors):
    if value is None or str(value).strip() == "":
        errors.append(
            f"fabric_interface is not set for {host}: set it to the ConnectX-7 port the "
            "cable is plugged into (for example enp1s0f1np1; `ip -br link` lists them)."
        )
        return None
    if not _IFNAME.match(str(value)):
        errors.append(
            f"fabric_interface '{value}' on {host} is not an interface name (at most 15 "
            "letters, digits, '.', '_' or '-'): set it to the port's name from `ip -br link`."
        )
        return None
    return str(value)


def _check_address(host, value, errors):
    if value is None or str(value).strip() == "":
        errors.append(
            f"fabric_address is not set for {host}: set the node's address on the cable with "
            "its prefix, for example 192.168.100.10/24."
        )
        return None
    text = str(value).strip()
    if "/" not in text:
        errors.append(
            f"fabric_address '{text}' on {host} has no prefix length: write it as "
            f"{text}/24 (or the prefix of your fabric subnet)."
        )
        return None
    try:
        iface = ipaddress.ip_interface(text)
    except ValueError:
        errors.append(
            f"fabric_address '{text}' on {host} is not an IPv4 address with a prefix: "
            "write it as for example 192.168.100.10/24."
        )
        return None
    if iface.version != 4:
        errors.append(
            f"fabric_address '{text}' on {host} is IPv6: RoCE v2 GID selection here uses "
            "IPv4-mapped GIDs, so give the cable an IPv4 address, for example 192.168.100.10/24."
        )
        return None
    ip = iface.ip
    if ip.is_loopback or ip.is_multicast or ip.is_unspecified or ip.is_reserved:
        errors.append(
            f"fabric_address '{text}' on {host} cannot be used on a link: pick a private "
            "unicast address, for example 192.168.100.10/24."
        )
        return None
    if iface.network.prefixlen == 32:
        errors.append(
            f"fabric_address '{text}' on {host} has prefix /32, which leaves no room for the "
            "peer: use the prefix of a subnet holding both nodes, for example /24."
        )
        return None
    if iface.network.prefixlen <= 30 and ip in (
        iface.network.network_address,
        iface.network.broadcast_address,
    ):
        errors.append(
            f"fabric_address '{text}' on {host} is the network or broadcast address of "
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


def plan_fabric(nodes):
    """Check ``{host: {fabric_interface, fabric_address, fabric_mtu}}``, return a FabricPlan.

    Node order is kept: each node's ``peer`` is the first other node in that order.
    """
    errors = []
    checked = {}
    for host, variables in nodes.items():
        variables = variables or {}
        interface = _check_interface(host, variables.get("fabric_interface"), errors)
        address = _check_address(host, variables.get("fabric_address"), errors)
        mtu = _check_mtu(host, variables.get("fabric_mtu", 9000), errors)
        checked[host] = (interface, address, mtu)

    if len(nodes) < 2:
        errors.append(
            f"the fabric needs at least two nodes, the inventory has {len(nodes)}: add the "
            "peer node to the head or worker group."
        )

    addresses = {host: a for host, (_i, a, _m) in checked.items() if a is not None}
    by_ip = {}
    for host, address in addresses.items():
        by_ip.setdefault(str(address.ip), []).append(host)
    for ip, hosts in by_ip.items():
        if len(hosts) > 1:
            errors.append(
                f"fabric_address {ip} is set on {' and '.join(hosts)}: each node needs its "
                "own address on the cable."
            )
    networks = {str(a.network) for a in addresses.values()}
    if len(networks) > 1:
        listing = ", ".join(f"{h} {a.network}" for h, a in addresses.items())
        errors.append(
            f"fabric_address values are not in one subnet ({listing}): the nodes share one "
            "direct cable, so give them addresses in the same subnet with the same prefix."
        )
    mtus = {host: m for host, (_i, _a, m) in checked.items() if m is not None}
    if len(set(mtus.values())) > 1:
        listing = ", ".join(f"{h} {m}" for h, m in mtus.items())
        errors.append(
            f"fabric_mtu differs between nodes ({listing}): a mismatch drops every large "
            "packet; set one value for the whole cluster."
        )

    if errors:
        return FabricPlan(errors=errors, nodes={})

    planned = {}
    for host, (interface, address, mtu) in checked.items():
        peers = [str(addresses[other].ip) for other in checked if other != host]
        planned[host] = FabricNode(
            host=host,
            interface=interface,
            ipv4=str(address.ip),
            prefix=address.network.prefixlen,
            network=str(address.network),
            mtu=mtu,
            peer=peers[0],
            peers=peers,
        )
    return FabricPlan(errors=[], nodes=planned)
