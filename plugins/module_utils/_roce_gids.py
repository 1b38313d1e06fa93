# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Parse RDMA GID tables (``show_gids`` output or sysfs) and pick the RoCE v2 IPv4 GID.

Private to gb10.serving: pure Python, no Ansible imports, so the module, the filter and
the unit tests share one parser. Target-side code: keep it Python 3.8 compatible.

Two sources describe the same table:

* ``show_gids`` (Mellanox mlnx-tools, and the lab's stand-in): one row per used GID slot,
  ``DEV PORT INDEX GID [IPv4] [VER] [DEV]``, columns separated by tabs (often expanded to
  spaces in pastes), trailer ``n_gids_found=N``.
* sysfs: ``<root>/class/infiniband/<dev>/ports/<port>/gids/<n>`` plus
  ``gid_attrs/types/<n>`` and ``gid_attrs/ndevs/<n>``.

Both give the same :class:`GidRow` list once sorted with :func:`sort_rows`.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from typing import Iterable, List, Optional, Union

ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
BARE_LINK_LOCAL_GID = "fe80:0000:0000:0000:0000:0000:0000:0000"
# show_gids skips these two (unused slots and a link-local prefix with no interface id).
SKIPPED_GIDS = frozenset((ZERO_GID, BARE_LINK_LOCAL_GID))
# The first 96 bits of an IPv4-mapped IPv6 address (::ffff:a.b.c.d), in GID form.
IPV4_MAPPED_PREFIX = ("0000", "0000", "0000", "0000", "0000", "ffff")

# 8 groups of 4 hex digits; "x" stands for a byte masked by whoever pasted the output.
_GID_RE = re.compile(r"^[0-9a-fA-Fx]{4}(?::[0-9a-fA-Fx]{4}){7}$")
_SYSFS_GID_RE = re.compile(r"^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}$")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4_RE = re.compile(r"^%s(?:\.%s){3}$" % (_OCTET, _OCTET))
_VERSION_RE = re.compile(r"^[vV]([12])$")
# "IB/RoCE v1" -> v1, "RoCE v2" -> v2 (show_gids takes everything from the first v/V on).
_TYPE_RE = re.compile(r"[vV]([12])$")
_TRAILER_RE = re.compile(r"^n_gids_found=(\S*)$")
_INT_RE = re.compile(r"^[0-9]+$")
_NATURAL_RE = re.compile(r"([0-9]+)")


class GidParseError(ValueError):
    """The show_gids text or the sysfs tree is not a GID table we understand."""


class GidSelectionError(ValueError):
    """Not exactly one RoCE v2 IPv4 GID matched what was asked for."""


@dataclass(frozen=True)
class GidRow:
    """One used GID slot of one RDMA port."""

    device: str
    port: int
    index: int
    gid: str
    ipv4: Optional[str]
    version: Optional[str]  # 'v1' or 'v2'; None when the type is unknown (unreadable)
    netdev: Optional[str]  # None on InfiniBand ports (no network device)

    def to_dict(self) -> dict:
        """The row as a plain dict (device, port, index, gid, ipv4, version, netdev)."""
        return asdict(self)


def _natural_key(name):
    """Sort key that orders embedded numbers numerically (mlx5_2 before mlx5_10)."""
    parts = _NATURAL_RE.split(name)
    # re.split with one group alternates text, number, text, ...: same type per position.
    return tuple(int(part) if pos % 2 else part for pos, part in enumerate(parts))


def sort_rows(rows: Iterable[GidRow]) -> List[GidRow]:
    """Rows ordered by device (numbers in names compared as numbers), port and index.

    show_gids lists indices in plain ``ls`` order (0, 1, 10, 100, ..., 2) and devices in
    locale order; sort both parsers' rows with this before comparing them.
    """
    return sorted(rows, key=lambda row: (_natural_key(row.device), row.port, row.index))


def _mapped_ipv4(groups):
    """Dotted quad of an IPv4-mapped GID given as 8 groups, or None.

    Exact test: the first five groups are zero and the sixth is ffff. show_gids itself
    only checks that the first group is "0000", so it would also print an "IPv4" for an
    IPv4-compatible (::a.b.c.d) or other ::/16 GID; those are not IPv4 GIDs for NCCL or
    rdma-core, and the kernel only ever adds IPv4 addresses in the mapped form, so the
    two agree on every real table.
    """
    if tuple(group.lower() for group in groups[:6]) != IPV4_MAPPED_PREFIX:
        return None
    high, low = groups[6], groups[7]
    return ".".join(str(int(byte, 16)) for byte in (high[:2], high[2:], low[:2], low[2:]))


def _is_header(tokens):
    return tokens[:4] == ["DEV", "PORT", "INDEX", "GID"]


def _is_rule(tokens):
    return bool(tokens) and all(token and set(token) == {"-"} for token in tokens)


def _row_error(lineno, line, why):
    return GidParseError("show_gids line %d: %s: %r" % (lineno, why, line))


def _parse_row(lineno, line, tokens):
    """GidRow of one table line (already split on whitespace)."""
    if len(tokens) < 4:
        raise _row_error(lineno, line, "expected at least DEV PORT INDEX GID")
    device, port, index, gid = tokens[:4]
    if not _INT_RE.match(port):
        raise _row_error(lineno, line, "PORT %r is not a non-negative integer" % port)
    if not _INT_RE.match(index):
        raise _row_error(lineno, line, "INDEX %r is not a non-negative integer" % index)
    if not _GID_RE.match(gid):
        raise _row_error(lineno, line, "GID %r is not 8 groups of 4 hex digits" % gid)

    rest = tokens[4:]
    ipv4 = version = netdev = None
    if rest and _IPV4_RE.match(rest[0]):
        ipv4 = rest.pop(0)
    if rest and _VERSION_RE.match(rest[0]):
        version = "v" + _VERSION_RE.match(rest[0]).group(1)
        rest.pop(0)
    if rest:
        netdev = rest.pop(0)
    if rest or (netdev is not None and (_IPV4_RE.match(netdev) or _VERSION_RE.match(netdev))):
        raise _row_error(
            lineno, line, "expected [IPv4] [VER] [DEV] after the GID, got %r" % (tokens[4:],)
        )

    groups = gid.split(":")
    if ipv4 is not None and "x" not in "".join(groups[:6]).lower():
        # show_gids prints an IPv4 for any GID starting with 0000; keep it only for a real
        # IPv4-mapped GID, as read_sysfs_gids does (see _mapped_ipv4).
        mapped = _mapped_ipv4(groups)
        if mapped is None:
            ipv4 = None
        elif "x" not in "".join(groups[6:]).lower() and mapped != ipv4:
            raise _row_error(
                lineno, line, "IPv4 %s does not match the GID (which holds %s)" % (ipv4, mapped)
            )
    return GidRow(
        device=device,
        port=int(port),
        index=int(index),
        gid=gid,
        ipv4=ipv4,
        version=version,
        netdev=netdev,
    )


def parse_show_gids(lines: Union[str, Iterable[str]]) -> List[GidRow]:
    """Rows of a ``show_gids`` table, in the order printed (see :func:`sort_rows`).

    ``lines`` is any iterable of lines (a file object, ``stdout_lines``) or one string.
    Lines before the ``DEV PORT INDEX GID`` header (prompts, ``#`` comments, blanks) are
    ignored, as are blank and comment lines inside the table and everything after the
    ``n_gids_found=N`` trailer except a second header. Tabs or spaces both work: rows
    are split on runs of whitespace.

    Raises GidParseError naming the line for: no header, a malformed row, a trailer whose
    count differs from the rows read, or a second table.
    """
    if isinstance(lines, str):
        lines = lines.splitlines()
    rows = []
    state = "seek"  # seek -> table -> done
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        tokens = line.split()
        if state == "seek":
            if _is_header(tokens):
                state = "table"
            continue
        if _is_header(tokens):
            raise _row_error(lineno, line, "a second show_gids table starts here")
        if state == "done" or not tokens or tokens[0].startswith("#") or _is_rule(tokens):
            continue
        trailer = _TRAILER_RE.match(line.strip())
        if trailer:
            count = trailer.group(1)
            if not _INT_RE.match(count):
                raise _row_error(lineno, line, "n_gids_found=%r is not a number" % count)
            if int(count) != len(rows):
                raise _row_error(
                    lineno,
                    line,
                    "n_gids_found says %s rows but the table has %d (truncated or edited output?)"
                    % (count, len(rows)),
                )
            state = "done"
            continue
        rows.append(_parse_row(lineno, line, tokens))
    if state == "seek":
        raise GidParseError(
            "no show_gids table found: no header line starting with 'DEV PORT INDEX GID'"
        )
    return rows


def _read_text(path):
    """Stripped content of a sysfs file; raises OSError when unreadable."""
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "replace").strip()


def _read_optional(path):
    """Stripped content, or None when absent, unreadable or empty.

    Real sysfs answers EINVAL for the types/ndevs file of an unused slot, and inside a
    container for slots not mapped into its namespace; both mean "unknown" here.
    """
    try:
        text = _read_text(path)
    except OSError:
        return None
    return text or None


def _listdir_ints(path, what):
    """Integer-named entries of a sysfs directory, as ints; GidParseError otherwise."""
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise GidParseError("cannot list %s %s: %s" % (what, path, exc)) from exc
    numbers = []
    for name in names:
        if not _INT_RE.match(name):
            raise GidParseError("unexpected entry %r in %s %s" % (name, what, path))
        numbers.append(int(name))
    return sorted(numbers)


def read_sysfs_gids(sysfs_root: str) -> List[GidRow]:
    """Rows of every port's GID table under ``<sysfs_root>/class/infiniband``, sorted.

    Skips unused (all-zero) slots and the bare fe80:: GID, as show_gids does. ``version``
    comes from gid_attrs/types (None when unreadable), ``netdev`` from gid_attrs/ndevs
    (None when absent, e.g. InfiniBand ports), ``ipv4`` from IPv4-mapped GIDs only.
    Ports without a gids directory contribute no rows.
    """
    ib_dir = os.path.join(sysfs_root, "class", "infiniband")
    if not os.path.isdir(ib_dir):
        raise GidParseError(
            "no RDMA devices under %s: %s does not exist (no RDMA driver loaded, or the"
            " wrong sysfs_root?)" % (sysfs_root, ib_dir)
        )
    try:
        devices = os.listdir(ib_dir)
    except OSError as exc:
        raise GidParseError("cannot list RDMA devices in %s: %s" % (ib_dir, exc)) from exc
    rows = []
    for device in devices:
        ports_dir = os.path.join(ib_dir, device, "ports")
        if not os.path.isdir(ports_dir):
            continue
        for port in _listdir_ints(ports_dir, "ports directory"):
            port_dir = os.path.join(ports_dir, str(port))
            gids_dir = os.path.join(port_dir, "gids")
            if not os.path.isdir(gids_dir):
                continue
            for index in _listdir_ints(gids_dir, "gids directory"):
                gid_path = os.path.join(gids_dir, str(index))
                try:
                    gid = _read_text(gid_path)
                except OSError as exc:
                    raise GidParseError("cannot read GID %s: %s" % (gid_path, exc)) from exc
                if not _SYSFS_GID_RE.match(gid):
                    raise GidParseError(
                        "%s holds %r, not a GID (8 groups of 4 hex digits)" % (gid_path, gid)
                    )
                if gid.lower() in SKIPPED_GIDS:
                    continue
                gid_type = _read_optional(os.path.join(port_dir, "gid_attrs", "types", str(index)))
                match = _TYPE_RE.search(gid_type or "")
                rows.append(
                    GidRow(
                        device=device,
                        port=port,
                        index=index,
                        gid=gid,
                        ipv4=_mapped_ipv4(gid.split(":")),
                        version="v" + match.group(1) if match else None,
                        netdev=_read_optional(
                            os.path.join(port_dir, "gid_attrs", "ndevs", str(index))
                        ),
                    )
                )
    return sort_rows(rows)


def _describe_row(row):
    return "%s port %d index %d ipv4 %s netdev %s" % (
        row.device,
        row.port,
        row.index,
        row.ipv4,
        row.netdev if row.netdev is not None else "(none)",
    )


def _describe_request(netdev, ipv4):
    asked = []
    if netdev is not None:
        asked.append("netdev=%s" % netdev)
    if ipv4 is not None:
        asked.append("ipv4=%s" % ipv4)
    return " ".join(asked) if asked else "no netdev or ipv4 filter"


def select_rocev2_ipv4(
    rows: Iterable[GidRow], netdev: Optional[str] = None, ipv4: Optional[str] = None
) -> GidRow:
    """The one RoCE v2 GID carrying an IPv4 address, optionally on ``netdev``/``ipv4``.

    Raises GidSelectionError when none or several match; the message lists what was
    asked, every RoCE v2 IPv4 row seen and what to check. Never falls back to an index.
    """
    if ipv4 is not None and not _IPV4_RE.match(ipv4):
        raise GidSelectionError("ipv4 %r is not a dotted-quad IPv4 address" % (ipv4,))
    seen = [row for row in rows if row.version == "v2" and row.ipv4 is not None]
    candidates = [
        row
        for row in seen
        if (netdev is None or row.netdev == netdev) and (ipv4 is None or row.ipv4 == ipv4)
    ]
    if len(candidates) == 1:
        return candidates[0]

    asked = _describe_request(netdev, ipv4)
    listed = "; ".join(_describe_row(row) for row in seen) if seen else "none"
    if not candidates:
        where = netdev if netdev is not None else "the fabric netdev"
        address = ipv4 if ipv4 is not None else "the fabric IPv4 address"
        raise GidSelectionError(
            "no RoCE v2 IPv4 GID matches %s. RoCE v2 IPv4 GIDs seen: %s. Check: is the cable"
            " in the port of %s, is %s configured on %s (ip -br addr), is the link up (rdma"
            " link / ibdev2netdev)?" % (asked, listed, where, address, where)
        )
    if netdev is not None and ipv4 is not None:
        advice = (
            "the table holds %s on %s more than once: check for a duplicate address or"
            " several RDMA devices on one netdev (rdma link / ibdev2netdev)" % (ipv4, netdev)
        )
    else:
        advice = "select by both netdev and ipv4"
    raise GidSelectionError(
        "%d RoCE v2 IPv4 GIDs match %s: %s. RoCE v2 IPv4 GIDs seen: %s. Refusing to guess:"
        " %s."
        % (
            len(candidates),
            asked,
            "; ".join(_describe_row(row) for row in candidates),
            listed,
            advice,
        )
    )
