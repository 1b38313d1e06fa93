# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Parse the output of perftest's bandwidth tests (``ib_write_bw`` and friends).

Private to gb10.serving: pure Python, no Ansible imports, so a module, a filter and the
unit tests share one parser. Target-side code: keep it Python 3.8 compatible.

What perftest prints (linux-rdma/perftest, ``src/perftest_parameters.[ch]``, ``write_bw.c``):

* a banner between ``RESULT_LINE`` separators (87 dashes): the test name (``RDMA_Write BW
  Test``), ``Dual-port : OFF<TAB><TAB>Device : rocep1s0f1``, ``Number of qps``, ``Transport
  type``, ``Connection type``, ``Mtu : 1024[B]``, ``Link type : Ethernet``, ``GID index : 3``
  (printed only when a GID index is in use, e.g. RoCE), ``rdma_cm QPs : ON``...;
* one ``local address: LID ... QPN ...`` line per QP, then the ``remote address`` lines,
  each followed by ``GID: 00:00:...:255:255:192:168:200:13`` when the link uses GIDs
  (perftest prints the 16 GID bytes in *decimal*, ``%02d``);
* the table header ``RESULT_FMT`` ``#bytes  #iterations  BW peak[MB/sec]  BW
  average[MB/sec]  MsgRate[Mpps]``, or ``RESULT_FMT_G`` with ``[Gb/sec]`` under
  ``--report_gbits``, then one row per message size (``REPORT_FMT``, or ``REPORT_FMT_EXT``
  with 6 decimals when a Gb/sec value is below 0.1), an optional ``CPU_Util[%]`` column,
  then a closing separator. ``--run_infinitely`` prints a row per interval and never closes
  the table; ``-D`` (duration) and ``--run_infinitely`` print a peak of 0.00 (not measured).

Units, from ``print_report_bw``: ``format_factor = (report_fmt == MBS) ? 0x100000 :
125000000``. perftest's "MB/sec" is therefore MiB/s (2**20 bytes per second) and its
"Gb/sec" is 10**9 bits per second (125,000,000 bytes). Real rows agree: ``size * MsgRate``
gives the MB/sec column only when divided by 2**20 (see the unit tests).

Failures are printed as plain sentences (``Couldn't connect to HOST:PORT``, ``Unable to init
the socket connection``, ``Completion with error at client``, ``Failed status 12: ...``,
``Failed to complete run_iter_bw function successfully``, ``Error: BW result is below bw
limit``...): any such line makes the parse fail, with the line in the message.
"""

from __future__ import annotations

import io
import re
from dataclasses import asdict, dataclass
from typing import Iterable, Iterator, List, NamedTuple, Optional, Union

UNIT_MB = "MB/sec"
UNIT_GB = "Gb/sec"
# perftest's format_factor for each unit: bytes per second in one unit.
BYTES_PER_MB = 0x100000  # 2**20: perftest's "MB" is a MiB
BYTES_PER_GBIT = 125000000  # 10**9 bits

# RESULT_LINE: 87 dashes; RESULT_LINE_PER_PORT is longer. Banner lines never start with '-'.
_SEPARATOR_RE = re.compile(r"^-{20,}$")
_HEADER_RE = re.compile(
    r"#bytes\b.*BW peak\[(MB/sec|Gb/sec)\]\s+BW average\[(MB/sec|Gb/sec)\]\s+MsgRate\[Mpps\]"
)
_NUMBER = r"(-?\d+(?:\.\d+)?)"
# REPORT_FMT / REPORT_FMT_EXT, optionally followed by REPORT_EXT_CPU_UTIL.
_ROW_RE = re.compile(
    r"^(\d+)\s+(\d+)\s+%s\s+%s\s+%s(?:\s+%s)?$" % (_NUMBER, _NUMBER, _NUMBER, _NUMBER)
)
_TITLE_RE = re.compile(r"^[A-Za-z_]+(?: [A-Za-z_]+)* Test$")
# Banner fields we keep; two may share a line, separated by tabs (or spaces once pasted).
_INFO_RE = re.compile(
    r"(Device|Number of qps|Transport type|Connection type|Mtu|Link type|GID index|rdma_cm QPs)"
    r"\s*:\s*(\S+)"
)
_ADDRESS_RE = re.compile(r"^(local|remote) address:")
_GID_RE = re.compile(r"^GID:\s*(\S+)$")
_MTU_RE = re.compile(r"^(\d+)(?:\[B\])?$")
# Sentences perftest prints when it gives up (write_bw.c: "Unable to ...", "Couldn't ...",
# "Failed to ...", "Problems with warm up", "Error: BW result is below bw limit";
# perftest_resources.c: "Completion with error at client", "Failed status %d: ...";
# perftest_parameters.c: "Can't produce a report"), plus the libibverbs examples' wording
# for a missing device. None of them appears in a good run.
_FAILURE_RE = re.compile(
    r"Couldn't |Unable to |Failed to |Failed status|Completion with error|\bError[: ]|"
    r"Problems with warm up|Can't produce a report|IB device \S+ not found|"
    r"No IB devices found|Parser function exited with Error"
)


class PerftestParseError(ValueError):
    """The text is not a successful perftest bandwidth report."""


class BwRow(NamedTuple):
    """One row of the bandwidth table, in the table's own unit (see ``BwResult.unit``)."""

    bytes: int
    iterations: int
    bw_peak: float
    bw_average: float
    msg_rate_mpps: float


@dataclass(frozen=True)
class BwResult:
    """A perftest bandwidth report: the result table plus what the banner says.

    ``bw_average_gbps`` is the last row's average in Gb/s (10**9 bit/s), whatever unit the
    table used. The banner fields are None when perftest did not print them.
    """

    unit: str  # UNIT_MB or UNIT_GB
    rows: List[BwRow]
    bw_average_gbps: float
    test: Optional[str] = None  # 'RDMA_Write BW Test'
    device: Optional[str] = None
    transport_type: Optional[str] = None
    connection_type: Optional[str] = None
    num_qps: Optional[int] = None
    mtu: Optional[int] = None
    link_type: Optional[str] = None  # 'Ethernet' (RoCE) or 'IB'
    gid_index: Optional[int] = None
    rdma_cm: Optional[bool] = None
    local_gid: Optional[str] = None  # first local QP's GID, as printed
    remote_gid: Optional[str] = None
    local_gid_ipv4: Optional[str] = None  # set when the GID is IPv4-mapped (RoCE v2 IPv4)
    remote_gid_ipv4: Optional[str] = None

    def to_dict(self) -> dict:
        """The result as plain data (rows as lists of five numbers)."""
        return asdict(self)


def to_gbps(value: float, unit: str) -> float:
    """A perftest bandwidth in ``unit`` (``MB/sec`` or ``Gb/sec``) as Gb/s (10**9 bit/s)."""
    if unit == UNIT_GB:
        return float(value)
    if unit == UNIT_MB:
        return value * BYTES_PER_MB * 8 / 1e9
    raise ValueError("unknown perftest bandwidth unit %r" % (unit,))


def gid_ipv4(gid: Optional[str]) -> Optional[str]:
    """The IPv4 address of an IPv4-mapped GID as perftest prints it (decimal bytes), else None.

    ``00:00:00:00:00:00:00:00:00:00:255:255:192:168:200:13`` -> ``192.168.200.13``.
    """
    if not gid:
        return None
    parts = gid.split(":")
    if len(parts) != 16 or not all(part.isdigit() for part in parts):
        return None
    octets = [int(part) for part in parts]
    if any(octet > 255 for octet in octets):
        return None
    if octets[:10] != [0] * 10 or octets[10:12] != [255, 255]:
        return None
    return ".".join(str(octet) for octet in octets[12:])


def _iter_lines(data: Union[str, Iterable[str]]) -> Iterator[str]:
    if isinstance(data, str):
        data = io.StringIO(data)
    for line in data:
        yield line.rstrip("\r\n")


class _Banner:
    """What the banner and the address lines said (mutable while parsing)."""

    def __init__(self):
        self.info = {}
        self.test = None
        self.gids = {"local": None, "remote": None}
        self.side = None

    def feed(self, text: str) -> None:
        if self.test is None and _TITLE_RE.match(text):
            self.test = text
            return
        match = _ADDRESS_RE.match(text)
        if match:
            self.side = match.group(1)
            return
        match = _GID_RE.match(text)
        if match:
            if self.side and self.gids[self.side] is None:
                self.gids[self.side] = match.group(1)
            return
        for key, value in _INFO_RE.findall(text):
            self.info.setdefault(key, value)


def _int_or_none(value: Optional[str], pattern=None) -> Optional[int]:
    if value is None:
        return None
    if pattern is not None:
        match = pattern.match(value)
        value = match.group(1) if match else None
    if value is None or not value.isdigit():
        return None
    return int(value)


def _on_off(value: Optional[str]) -> Optional[bool]:
    if value == "ON":
        return True
    if value == "OFF":
        return False
    return None


def _row(match) -> BwRow:
    row = BwRow(
        int(match.group(1)),
        int(match.group(2)),
        float(match.group(3)),
        float(match.group(4)),
        float(match.group(5)),
    )
    if row.bw_peak < 0 or row.bw_average < 0 or row.msg_rate_mpps < 0:
        raise PerftestParseError(
            "perftest reported a negative bandwidth or message rate (a timing fault; run the "
            "test again): %r" % (match.group(0),)
        )
    return row


def parse_ib_bw(lines: Union[str, Iterable[str]]) -> BwResult:
    """Parse the output of ``ib_write_bw`` (or ``ib_read_bw``, ``ib_send_bw``), client side.

    ``lines`` is the whole output as one string or any iterable of lines (a file, the
    ``stdout_lines`` of a task); it is read once, line by line. Only the first result table
    counts (``--report-both`` prints local and remote tables after it).

    Raises PerftestParseError when a line says perftest failed (the line is quoted), when
    there is no bandwidth table, when the table has no rows, or when the table has a layout
    this parser does not read (``--report-per-port``, QoS).
    """
    banner = _Banner()
    unit = None
    rows = []  # type: List[BwRow]
    table_closed = False
    for line in _iter_lines(lines):
        text = line.strip()
        if not text:
            continue
        if _FAILURE_RE.search(text):
            raise PerftestParseError("perftest reported a failure: %s" % (text,))
        if table_closed:
            continue
        if unit is not None:
            if _SEPARATOR_RE.match(text):
                table_closed = bool(rows)
                continue
            match = _ROW_RE.match(text)
            if match:
                rows.append(_row(match))
            # Anything else inside the table ("Conflicting CPU frequency values detected",
            # counters) is informational.
            continue
        match = _HEADER_RE.search(text)
        if match:
            if "#sl" in text or "Port1" in text:
                raise PerftestParseError(
                    "unsupported perftest table layout (QoS or per-port report): %s" % (text,)
                )
            if match.group(1) != match.group(2):
                raise PerftestParseError("perftest table mixes units: %s" % (text,))
            unit = match.group(1)
            continue
        banner.feed(text)

    if unit is None:
        raise PerftestParseError(
            "no perftest bandwidth table in the output (no '#bytes #iterations BW peak[...] "
            "BW average[...] MsgRate[Mpps]' header)"
        )
    if not rows:
        raise PerftestParseError(
            "the perftest bandwidth table has no rows (the run ended before reporting)"
        )

    info = banner.info
    return BwResult(
        unit=unit,
        rows=rows,
        bw_average_gbps=to_gbps(rows[-1].bw_average, unit),
        test=banner.test,
        device=info.get("Device"),
        transport_type=info.get("Transport type"),
        connection_type=info.get("Connection type"),
        num_qps=_int_or_none(info.get("Number of qps")),
        mtu=_int_or_none(info.get("Mtu"), _MTU_RE),
        link_type=info.get("Link type"),
        gid_index=_int_or_none(info.get("GID index")),
        rdma_cm=_on_off(info.get("rdma_cm QPs")),
        local_gid=banner.gids["local"],
        remote_gid=banner.gids["remote"],
        local_gid_ipv4=gid_ipv4(banner.gids["local"]),
        remote_gid_ipv4=gid_ipv4(banner.gids["remote"]),
    )
