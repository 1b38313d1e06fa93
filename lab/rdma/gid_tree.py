"""Lay a simulated RDMA GID table in the real Linux sysfs layout (lab only).

Lab containers have no /sys/class/infiniband, so this writes, under a lab root,
``<root>/class/infiniband/<dev>/ports/1/{gids,gid_attrs/types,gid_attrs/ndevs}/<n>``
plus ``link_layer``, ``state`` and ``phys_state`` for the four GB10 RoCE devices,
exactly as the kernel shows them (full 8x4 lowercase hex GIDs, newline-terminated).

Usage:
    python3 lab/rdma/gid_tree.py --root DIR --node NAME --fabric-netdev enp1s0f1np1 \\
        --fabric-ipv4 192.168.100.10 --fabric-gid-index 3 \\
        [--twin-netdev enP2p1s0f1np1 --twin-ipv4 192.168.101.10 --twin-gid-index 3]

The twin is the cabled port's other PCIe half (fabric_rails: 2), addressed on its own.

Stdlib only; importable (pure functions + ``main(argv)``).
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import shutil
import sys
from pathlib import Path
from typing import NamedTuple

# RDMA device -> netdev, as on an NVIDIA GB10 (DGX Spark) with its ConnectX-7.
DEVICES: dict[str, str] = {
    "rocep1s0f0": "enp1s0f0np0",
    "rocep1s0f1": "enp1s0f1np1",
    "roceP2p1s0f0": "enP2p1s0f0np0",
    "roceP2p1s0f1": "enP2p1s0f1np1",
}
PORT = "1"
GID_TBL_LEN = 256  # mlx5 exposes slots 0..255
ZERO_GID = ":".join(["0000"] * 8)
V1 = "IB/RoCE v1"
V2 = "RoCE v2"
MIN_INDEX, MAX_INDEX = 2, 250  # 0/1 are the link-local defaults; keep the table < 256
ULA_PREFIX = bytes.fromhex("fd0000000000")  # fd00:0:0::/48, global IPv6 of extra entries


class GidEntry(NamedTuple):
    """One used GID slot."""

    index: int
    gid: str
    gid_type: str  # V1 or V2


def format_gid(raw: bytes) -> str:
    """Render 16 bytes as sysfs does: 8 groups of 4 lowercase hex digits."""
    if len(raw) != 16:
        raise ValueError(f"a GID is 16 bytes, got {len(raw)}")
    return ":".join(raw[i : i + 2].hex() for i in range(0, 16, 2))


def derive_mac(node: str, dev: str) -> bytes:
    """Deterministic locally administered unicast MAC for a node's device."""
    digest = hashlib.sha256(f"gb10-lab/{node}/{dev}".encode()).digest()
    return bytes([(digest[0] & 0xFC) | 0x02]) + digest[1:6]


def eui64(mac: bytes) -> bytes:
    """Modified EUI-64 interface id of a MAC (RFC 4291, appendix A)."""
    return bytes([mac[0] ^ 0x02]) + mac[1:3] + b"\xff\xfe" + mac[3:6]


def link_local_gid(mac: bytes) -> str:
    """Default fe80::/64 GID of a port whose netdev has this MAC."""
    return format_gid(b"\xfe\x80" + bytes(6) + eui64(mac))


def global_ipv6_gid(subnet: int, mac: bytes) -> str:
    """SLAAC-style global (ULA) IPv6 GID: fd00:0:0:<subnet>::/64 + EUI-64."""
    return format_gid(ULA_PREFIX + subnet.to_bytes(2, "big") + eui64(mac))


def parse_ipv4(text: str) -> ipaddress.IPv4Address:
    """Parse a usable unicast IPv4 address or raise ValueError."""
    try:
        addr = ipaddress.IPv4Address(text)
    except ValueError:
        raise ValueError(f"invalid IPv4 address: {text!r}") from None
    if addr.is_unspecified or addr.is_loopback or addr.is_multicast or addr.is_reserved:
        raise ValueError(f"not a usable unicast IPv4 address: {text!r}")
    return addr


def ipv4_gid(addr: str) -> str:
    """IPv4-mapped GID (::ffff:a.b.c.d) of an address, in sysfs form."""
    return format_gid(ipaddress.IPv6Address(f"::ffff:{parse_ipv4(addr)}").packed)


def fabric_entries(mac: bytes, v4_gid: str, index: int) -> list[GidEntry]:
    """Slots 2.. of the fabric port, with the IPv4 "RoCE v2" GID at ``index``.

    The kernel adds each IP address of the netdev as a v1+v2 pair in the first free
    slots, so with one IPv4 the v2 GID sits at 3. Other indices are modelled as:

    * odd index k: extra global IPv6 addresses of the same netdev fill 2..k-2 as
      v1/v2 pairs, then IPv4 v1 at k-1 and IPv4 v2 at k (e.g. 5: IPv6 at 2/3).
    * even index k >= 4 (node1 in the lab; the field cluster shows 4): a v2 at an
      even slot means slots were freed and reused one by one, out of pair step
      (e.g. a GID still held by a QP when its address went away). Modelled
      as IPv6 v1 at k-2, IPv4 v1 at k-1, IPv4 v2 at k, IPv6 v2 at k+1
      (k = 4: 2 IPv6 v1, 3 IPv4 v1, 4 IPv4 v2, 5 IPv6 v2), extra pairs before.
    * index 2: IPv4 v2 at 2 and its v1 at 3.

    Whatever the layout, consumers must find the index from the table (v2 + IPv4
    + netdev), never assume 3: that is what the lab's node1 exercises.
    """
    if index == 2:
        return [GidEntry(2, v4_gid, V2), GidEntry(3, v4_gid, V1)]
    entries: list[GidEntry] = []
    subnet = 1
    pairs_end = index - 1 if index % 2 else index - 2
    for slot in range(2, pairs_end, 2):
        gid = global_ipv6_gid(subnet, mac)
        entries += [GidEntry(slot, gid, V1), GidEntry(slot + 1, gid, V2)]
        subnet += 1
    if index % 2 == 0:
        gid = global_ipv6_gid(subnet, mac)
        entries += [GidEntry(index - 2, gid, V1), GidEntry(index + 1, gid, V2)]
    entries += [GidEntry(index - 1, v4_gid, V1), GidEntry(index, v4_gid, V2)]
    return sorted(entries)


def validate(fabric_netdev: str, fabric_ipv4: str, fabric_index: int) -> None:
    """Raise ValueError with a clear message for unusable parameters."""
    if fabric_netdev not in DEVICES.values():
        known = ", ".join(DEVICES.values())
        raise ValueError(f"unknown fabric netdev {fabric_netdev!r} (one of: {known})")
    parse_ipv4(fabric_ipv4)
    if not MIN_INDEX <= fabric_index <= MAX_INDEX:
        raise ValueError(
            f"fabric GID index must be in {MIN_INDEX}..{MAX_INDEX}, got {fabric_index}"
        )


def build_tables(
    node: str,
    fabric_netdev: str,
    fabric_ipv4: str,
    fabric_index: int,
    twin: tuple[str, str, int] | None = None,
) -> dict[str, list[GidEntry]]:
    """Used GID slots per device for one node (pure; validates its input).

    ``twin`` is ``(netdev, ipv4, index)`` of the port's other half when it is addressed too.
    """
    if not node:
        raise ValueError("node name must not be empty")
    addressed = {fabric_netdev: (fabric_ipv4, fabric_index)}
    validate(fabric_netdev, fabric_ipv4, fabric_index)
    if twin is not None:
        validate(*twin)
        if twin[0] == fabric_netdev or twin[1] == fabric_ipv4:
            raise ValueError(f"the twin {twin[0]} {twin[1]} repeats the fabric netdev or address")
        addressed[twin[0]] = (twin[1], twin[2])
    tables: dict[str, list[GidEntry]] = {}
    for dev, netdev in DEVICES.items():
        mac = derive_mac(node, dev)
        ll_gid = link_local_gid(mac)
        entries = [GidEntry(0, ll_gid, V1), GidEntry(1, ll_gid, V2)]
        if netdev in addressed:
            ipv4, index = addressed[netdev]
            entries += fabric_entries(mac, ipv4_gid(ipv4), index)
        tables[dev] = entries
    for netdev, (ipv4, index) in addressed.items():
        v2_rows = fabric_v2_rows(tables, ipv4)
        if v2_rows != [(fabric_device(netdev), index)]:
            raise AssertionError(f"expected one RoCE v2 IPv4 row for {ipv4}, got {v2_rows}")
    return tables


def fabric_device(netdev: str) -> str:
    """RDMA device name of a netdev."""
    return next(dev for dev, ndev in DEVICES.items() if ndev == netdev)


def fabric_v2_rows(tables: dict[str, list[GidEntry]], ipv4: str) -> list[tuple[str, int]]:
    """(device, index) of every RoCE v2 GID carrying ``ipv4``."""
    gid = ipv4_gid(ipv4)
    return [
        (dev, e.index)
        for dev, entries in tables.items()
        for e in entries
        if e.gid == gid and e.gid_type == V2
    ]


def _write(path: Path, text: str) -> None:
    path.write_text(text + "\n", encoding="ascii")


def write_tree(root: Path, tables: dict[str, list[GidEntry]], active_dev: str | set[str]) -> Path:
    """Replace ``<root>/class/infiniband`` with ``tables``; return that directory."""
    if root.resolve() == Path("/sys"):
        raise ValueError("refusing to write into the real /sys")
    ib_dir = root / "class" / "infiniband"
    if ib_dir.is_symlink():
        ib_dir.unlink()
    elif ib_dir.exists():
        shutil.rmtree(ib_dir)
    active_devs = {active_dev} if isinstance(active_dev, str) else set(active_dev)
    for dev, entries in tables.items():
        port = ib_dir / dev / "ports" / PORT
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (port / sub).mkdir(parents=True)
        used = {e.index: e for e in entries}
        for n in range(GID_TBL_LEN):
            entry = used.get(n)
            _write(port / "gids" / str(n), entry.gid if entry else ZERO_GID)
            if entry:
                _write(port / "gid_attrs" / "types" / str(n), entry.gid_type)
                _write(port / "gid_attrs" / "ndevs" / str(n), DEVICES[dev])
        active = dev in active_devs
        _write(port / "link_layer", "Ethernet")
        _write(port / "state", "4: ACTIVE" if active else "1: DOWN")
        _write(port / "phys_state", "5: LinkUp" if active else "3: Disabled")
    return ib_dir


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line of the script."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, type=Path, help="lab sysfs root")
    parser.add_argument("--node", required=True, help="node name (seeds the MACs)")
    parser.add_argument("--fabric-netdev", default="enp1s0f1np1")
    parser.add_argument("--fabric-ipv4", required=True)
    parser.add_argument("--fabric-gid-index", type=int, default=3)
    parser.add_argument("--twin-netdev", default="enP2p1s0f1np1")
    parser.add_argument("--twin-ipv4", help="address the port's other half too")
    parser.add_argument("--twin-gid-index", type=int, default=3)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Lay the tree; return 0, or 2 with a message on stderr for bad input."""
    args = parse_args(argv)
    try:
        ports = [(args.fabric_netdev, args.fabric_ipv4, args.fabric_gid_index)]
        if args.twin_ipv4:
            ports.append((args.twin_netdev, args.twin_ipv4, args.twin_gid_index))
        tables = build_tables(args.node, *ports[0], twin=ports[1] if len(ports) > 1 else None)
        ib_dir = write_tree(args.root, tables, {fabric_device(netdev) for netdev, _i, _x in ports})
    except ValueError as exc:
        print(f"gid_tree: error: {exc}", file=sys.stderr)
        return 2
    for netdev, ipv4, index in ports:
        print(
            f"{ib_dir}: {args.node} {fabric_device(netdev)}/{PORT} index {index} = "
            f"{ipv4_gid(ipv4)} (RoCE v2, {netdev})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
