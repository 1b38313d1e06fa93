# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Parse the output of NVIDIA nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ...).

Private to gb10.serving: pure Python, no Ansible imports, so a module, a filter and the
unit tests share one parser. Target-side code: keep it Python 3.8 compatible.

What nccl-tests prints (NVIDIA/nccl-tests ``src/common.cu`` and ``src/common.h``):

* ``# nccl-tests version 2.17.6 nccl-headers=22803 nccl-library=22803`` (2.17 and later),
  ``# Collective test starting: all_gather_perf``, ``# nThread ... validation: 1 ...``;
* ``# Using devices`` then one line per rank, ``"#  Rank %2d Group %2d Pid %6d on %10s device
  %2d [%s] %s"`` (older releases: no ``Group``, PCI bus as ``[0x%02x]``);
* the column headers (``size count type redop root``, then ``time algbw busbw #wrong`` for
  out-of-place and again for in-place), and one row per size, ``"%12li  %12li  %8s  %6s
  %6s"`` + twice ``"  %7s  %6.2f  %6.2f  %5g"`` (``#wrong`` is ``N/A`` when not checked);
* ``# Out of bounds values : %d %s`` (``OK`` or ``FAILED``), ``# Avg bus bandwidth    : %g
  %s`` (``%s`` is empty, or ``OK``/``FAILED`` against ``NCCL_TESTS_MIN_BW``), and in recent
  releases ``# Collective test concluded: ...``.

Failures are printed as ``<host>: Test NCCL failure <file>:<line> '<error>'``, ``<host>: Test
CUDA failure ...``, `` .. <host> pid <pid>: Test failure <file>:<line>`` and ``<host>: Test
timeout (<n>s) ...`` (older releases: ``NCCL failure <file>:<line> '<error>'``). Bandwidths
are in GB/s as nccl-tests computes them (10**9 bytes per second).
"""

from __future__ import annotations

import io
import re
from dataclasses import asdict, dataclass
from typing import Iterable, Iterator, List, NamedTuple, Optional, Union

# mpirun --tag-output puts "[1,0]<stdout>:" in front of every line.
_MPI_TAG_RE = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
_VERSION_RE = re.compile(r"^#\s*nccl-tests version (\S+)")
_NCCL_VERSION_RE = re.compile(r"\bNCCL version (\S+)")
_COLLECTIVE_RE = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_RANK_RE = re.compile(
    r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+(\S+)\s+"
    r"device\s+(\d+)\s+\[([^\]]*)\]\s+(.*?)\s*$"
)
_OUT_OF_BOUNDS_RE = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?\s*$")
_AVG_BUSBW_RE = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?\s*$")
_FAILURE_RE = re.compile(r"(?:NCCL|CUDA|CURAND) failure\b|: Test failure\b|: Test timeout\b")
_ROW_FIELDS = 13


class NcclTestsParseError(ValueError):
    """The text is not a successful, uncorrupted nccl-tests run."""


class NcclRank(NamedTuple):
    """One rank from ``# Using devices``."""

    rank: int
    host: str
    device_name: str  # 'NVIDIA GB10'
    cuda_device: int
    pci_bus_id: str  # '000f:01:00' (older releases: '0x18')


@dataclass(frozen=True)
class NcclRow:
    """One size of the result table. ``*_wrong`` is None where nccl-tests printed N/A."""

    size_bytes: int
    count: int
    type: str
    redop: str
    root: int
    oop_time_us: float
    oop_algbw: float
    oop_busbw: float
    oop_wrong: Optional[int]
    ip_time_us: float
    ip_algbw: float
    ip_busbw: float
    ip_wrong: Optional[int]


@dataclass(frozen=True)
class NcclResult:
    """A successful nccl-tests run. Bandwidths in GB/s (10**9 bytes per second).

    ``avg_busbw_gbytes`` and ``out_of_bounds`` are None when the output stops before the
    trailer; ``max_busbw_gbytes`` is the best out-of-place or in-place busbw of any row.
    """

    collective: Optional[str]  # 'all_reduce_perf', from '# Collective test starting:'
    version: Optional[str]  # nccl-tests version, '2.17.6'
    nccl_version: Optional[str]  # from an 'NCCL version 2.29.3+cuda13.1' line, if any
    ranks: List[NcclRank]
    rows: List[NcclRow]
    avg_busbw_gbytes: Optional[float]
    out_of_bounds: Optional[int]
    max_busbw_gbytes: float

    def to_dict(self) -> dict:
        """The result as plain data (ranks as lists, rows as dicts)."""
        return asdict(self)


def _iter_lines(data: Union[str, Iterable[str]]) -> Iterator[str]:
    if isinstance(data, str):
        data = io.StringIO(data)
    for line in data:
        yield _MPI_TAG_RE.sub("", line.rstrip("\r\n"), count=1)


def _wrong(field: str) -> Optional[int]:
    if field == "N/A":
        return None
    # '%5g': a count, in exponent form once it reaches 1e+06.
    return int(float(field))


def _row(tokens: List[str], line: str) -> NcclRow:
    try:
        row = NcclRow(
            size_bytes=int(tokens[0]),
            count=int(tokens[1]),
            type=tokens[2],
            redop=tokens[3],
            root=int(tokens[4]),
            oop_time_us=float(tokens[5]),
            oop_algbw=float(tokens[6]),
            oop_busbw=float(tokens[7]),
            oop_wrong=_wrong(tokens[8]),
            ip_time_us=float(tokens[9]),
            ip_algbw=float(tokens[10]),
            ip_busbw=float(tokens[11]),
            ip_wrong=_wrong(tokens[12]),
        )
    except ValueError:
        raise NcclTestsParseError("unreadable nccl-tests result row: %s" % (line,)) from None
    for placement, wrong in (("out-of-place", row.oop_wrong), ("in-place", row.ip_wrong)):
        if wrong:
            raise NcclTestsParseError(
                "data corruption at size %d bytes: %d wrong element(s) %s (%d x %s, redop %s): %s"
                % (row.size_bytes, wrong, placement, row.count, row.type, row.redop, line)
            )
    return row


def _is_row(tokens: List[str]) -> bool:
    return len(tokens) == _ROW_FIELDS and tokens[0].isdigit() and tokens[1].isdigit()


def parse_nccl_tests(lines: Union[str, Iterable[str]]) -> NcclResult:
    """Parse the output of one nccl-tests binary (``all_reduce_perf``, ``all_gather_perf``...).

    ``lines`` is the whole output as one string or any iterable of lines (a file, the
    ``stdout_lines`` of a task); it is read once, line by line. NCCL INFO/WARN lines and
    mpirun notices in between are ignored; ``[r,s]<stdout>:`` tags are removed.

    Raises NcclTestsParseError when a line says a test failed (the line is quoted), when a
    row has ``#wrong`` > 0 (data corruption; the size is named), when ``Out of bounds
    values`` is not 0 or says FAILED, when ``Avg bus bandwidth`` says FAILED (below
    ``NCCL_TESTS_MIN_BW``), or when there are no result rows.
    """
    version = None
    nccl_version = None
    collective = None
    ranks = []  # type: List[NcclRank]
    rows = []  # type: List[NcclRow]
    avg_busbw = None
    out_of_bounds = None
    for line in _iter_lines(lines):
        text = line.strip()
        if not text:
            continue
        if not text.startswith("#"):
            if _FAILURE_RE.search(text):
                raise NcclTestsParseError("nccl-tests reported a failure: %s" % (text,))
            tokens = text.split()
            if _is_row(tokens):
                rows.append(_row(tokens, text))
                continue
            match = _NCCL_VERSION_RE.search(text)
            if match and nccl_version is None:
                nccl_version = match.group(1)
        match = _OUT_OF_BOUNDS_RE.match(text)
        if match:
            out_of_bounds = int(match.group(1))
            if out_of_bounds or match.group(2) == "FAILED":
                raise NcclTestsParseError(
                    "nccl-tests found %d out-of-bounds value(s) (data corruption): %s"
                    % (out_of_bounds, text)
                )
            continue
        match = _AVG_BUSBW_RE.match(text)
        if match:
            try:
                avg_busbw = float(match.group(1))
            except ValueError:
                raise NcclTestsParseError(
                    "unreadable average bus bandwidth: %s" % (text,)
                ) from None
            if match.group(2) == "FAILED":
                raise NcclTestsParseError(
                    "average bus bandwidth below NCCL_TESTS_MIN_BW: %s" % (text,)
                )
            continue
        match = _RANK_RE.match(text)
        if match:
            ranks.append(
                NcclRank(
                    rank=int(match.group(1)),
                    host=match.group(2),
                    device_name=match.group(5),
                    cuda_device=int(match.group(3)),
                    pci_bus_id=match.group(4),
                )
            )
            continue
        match = _VERSION_RE.match(text)
        if match:
            version = match.group(1)
            continue
        match = _COLLECTIVE_RE.match(text)
        if match:
            collective = match.group(1)

    if not rows:
        raise NcclTestsParseError("no result rows in the nccl-tests output")
    return NcclResult(
        collective=collective,
        version=version,
        nccl_version=nccl_version,
        ranks=ranks,
        rows=rows,
        avg_busbw_gbytes=avg_busbw,
        out_of_bounds=out_of_bounds,
        max_busbw_gbytes=max(max(row.oop_busbw, row.ip_busbw) for row in rows),
    )
