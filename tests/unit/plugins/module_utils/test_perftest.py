# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._perftest: ib_write_bw (perftest) bandwidth reports.

The cases are tables over real captured output (fixtures/perftest; each file's first line
names its source). A case that edits a real capture, or adds a line built from perftest's
own format strings, says so in its label (``derived-...`` / ``constructed-...``) and in a
comment next to it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._perftest import (
    BYTES_PER_GBIT,
    BYTES_PER_MB,
    UNIT_GB,
    UNIT_MB,
    BwResult,
    BwRow,
    PerftestParseError,
    gid_ipv4,
    parse_ib_bw,
    to_gbps,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    edit,
    load_capture,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "perftest"

# Real captures (file name -> what it is).
EUGR_DGX_SPARK = "ib_write_bw_client_gbits_rdmacm_dgx_spark_eugr.txt"  # GB10 pair, 4 QPs, rdma_cm
NVIDIA_DGX_SPARK = "ib_write_bw_client_gbits_roce_gid3_dgx_spark_nvidia_guide.txt"  # RoCE, GID 3
PERFTEST_132_IB = "ib_write_bw_client_gbits_ib_all_sizes_perftest_issue132.txt"  # -a, raw tabs
UCX_8851_MBSEC = "ib_read_bw_client_mbsec_ib_ucx_issue8851.txt"  # no --report_gbits
PERFTEST_228_REFUSED = "ib_write_bw_client_connect_refused_perftest_pr228.txt"
PERFTEST_173_COMPLETION = "ib_write_bw_client_completion_error_perftest_issue173.txt"
EUGR_LATENCY = "ib_write_lat_client_dgx_spark_eugr.txt"

TABLE_HEADER_G = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"


def load(name):
    return load_capture("perftest", name)


def cut_after(text, marker):
    """The text up to and including the line that contains ``marker``."""
    head, found, _rest = text.partition(marker)
    assert found, marker
    return head + marker + "\n"


SUCCESS = [
    pytest.param(
        EUGR_DGX_SPARK,
        BwResult(
            unit=UNIT_GB,
            rows=[BwRow(65536, 20000, 111.72, 111.71, 0.213070)],
            bw_average_gbps=111.71,
            test="RDMA_Write BW Test",
            device="rocep1s0f1",
            transport_type="IB",
            connection_type="RC",
            num_qps=4,
            mtu=1024,
            link_type="IB",  # --force-link IB: no GID index, no GID lines
            gid_index=None,
            rdma_cm=True,
        ),
        id="dgx-spark-eugr-gbits-rdmacm-4qp",
    ),
    pytest.param(
        NVIDIA_DGX_SPARK,
        BwResult(
            unit=UNIT_GB,
            rows=[
                BwRow(65536, 882805, 0.0, 92.57, 0.176554),
                BwRow(65536, 882802, 0.0, 92.57, 0.176554),
                BwRow(65536, 882791, 0.0, 92.57, 0.176554),
                BwRow(65536, 882791, 0.0, 92.56, 0.176552),
                BwRow(65536, 882821, 0.0, 92.57, 0.176555),
            ],
            bw_average_gbps=92.57,
            test="RDMA_Write BW Test",
            device="rocep1s0f0",
            transport_type="IB",
            connection_type="RC",
            num_qps=1,
            mtu=1024,
            link_type="Ethernet",
            gid_index=3,
            rdma_cm=False,
            local_gid="00:00:00:00:00:00:00:00:00:00:255:255:192:168:200:13",
            remote_gid="00:00:00:00:00:00:00:00:00:00:255:255:192:168:200:12",
            local_gid_ipv4="192.168.200.13",
            remote_gid_ipv4="192.168.200.12",
        ),
        id="dgx-spark-nvidia-guide-roce-gid3-run-infinitely",
    ),
    pytest.param(
        PERFTEST_132_IB,
        BwResult(
            unit=UNIT_GB,
            rows=[
                BwRow(2, 5000, 0.042350, 0.042185, 2.636533),
                BwRow(4, 5000, 0.084507, 0.084457, 2.639276),
                BwRow(8, 5000, 0.17, 0.17, 2.641399),
                BwRow(16, 5000, 0.34, 0.34, 2.640952),
            ],
            bw_average_gbps=0.34,
            test="RDMA_Write BW Test",
            device="mlx5_0",
            transport_type="IB",
            connection_type="RC",
            num_qps=1,
            mtu=4096,
            link_type="IB",
            rdma_cm=False,
        ),
        id="perftest-issue132-ib-all-sizes-raw-tabs",
    ),
    pytest.param(
        UCX_8851_MBSEC,
        BwResult(
            unit=UNIT_MB,
            rows=[
                BwRow(2, 1000, 4.86, 4.67, 2.450225),
                BwRow(4, 1000, 9.72, 9.71, 2.546339),
                BwRow(8, 1000, 19.51, 19.50, 2.556366),
            ],
            # 19.50 MiB/s = 19.50 * 2**20 * 8 bit/s
            bw_average_gbps=pytest.approx(0.163577856),
            test="RDMA_Read BW Test",
            device="mlx5_1",
            transport_type="IB",
            connection_type="RC",
            num_qps=1,
            mtu=4096,
            link_type="IB",
            rdma_cm=False,
        ),
        id="ucx-issue8851-ib-read-mbsec",
    ),
]


@pytest.mark.parametrize(("name", "expected"), SUCCESS)
def test_parse_real_capture(name, expected):
    assert parse_ib_bw(load(name)) == expected


@pytest.mark.parametrize("name", [EUGR_DGX_SPARK, NVIDIA_DGX_SPARK, PERFTEST_132_IB])
def test_lines_and_files_parse_like_the_whole_text(name):
    text = load(name)
    whole = parse_ib_bw(text)
    assert parse_ib_bw(text.splitlines()) == whole  # stdout_lines: no line ends
    assert parse_ib_bw(iter(text.splitlines(keepends=True))) == whole  # a one-shot iterator
    with (FIXTURES / name).open(encoding="utf-8") as handle:
        next(handle)  # the '# SOURCE:' line
        assert parse_ib_bw(handle) == whole  # read straight from the file


def test_result_is_plain_data():
    data = parse_ib_bw(load(NVIDIA_DGX_SPARK)).to_dict()
    assert json.loads(json.dumps(data))["rows"][0] == [65536, 882805, 0.0, 92.57, 0.176554]
    assert data["gid_index"] == 3


# Which "MB" perftest means. print_report_bw divides bytes/s by format_factor
# (0x100000 for MB/sec, 125000000 for Gb/sec) and computes MsgRate from the same count, so
# every row must satisfy bw_average * format_factor == bytes * MsgRate[Mpps] * 10**6
# (up to the printed rounding). Checked on every real row below.
UNIT_ROWS = [
    pytest.param(name, row, id=f"{label}-{row.bytes}B-{index}")
    for label, name in (
        ("eugr", EUGR_DGX_SPARK),
        ("nvidia", NVIDIA_DGX_SPARK),
        ("perftest132", PERFTEST_132_IB),
        ("ucx8851", UCX_8851_MBSEC),
    )
    for index, row in enumerate(parse_ib_bw(load(name)).rows)
]


@pytest.mark.parametrize(("name", "row"), UNIT_ROWS)
def test_units_match_the_message_rate(name, row):
    unit = parse_ib_bw(load(name)).unit
    bytes_per_second = row.bytes * row.msg_rate_mpps * 1e6
    bytes_per_unit = {UNIT_MB: BYTES_PER_MB, UNIT_GB: BYTES_PER_GBIT}[unit]
    assert row.bw_average == pytest.approx(bytes_per_second / bytes_per_unit, abs=0.01)
    if unit == UNIT_MB:
        # Read as 10**6 bytes the same rows would be off by about 5 %: MB/sec is MiB/s.
        assert row.bw_average != pytest.approx(bytes_per_second / 1e6, abs=0.01)


@pytest.mark.parametrize(
    ("value", "unit", "gbps"),
    [
        pytest.param(111.71, UNIT_GB, 111.71, id="gbits-unchanged"),
        pytest.param(19.50, UNIT_MB, 0.163577856, id="mib-per-second"),
        pytest.param(11920.93, UNIT_MB, 100.0, id="100-gbit-in-mib"),
    ],
)
def test_to_gbps(value, unit, gbps):
    assert to_gbps(value, unit) == pytest.approx(gbps, abs=1e-4)


def test_to_gbps_refuses_an_unknown_unit():
    with pytest.raises(ValueError, match="unknown perftest bandwidth unit"):
        to_gbps(1.0, "GB/sec")


@pytest.mark.parametrize(
    ("gid", "ipv4"),
    [
        # As printed by the real captures (decimal bytes, %02d).
        ("00:00:00:00:00:00:00:00:00:00:255:255:192:168:200:13", "192.168.200.13"),
        ("00:00:00:00:00:00:00:00:00:00:255:255:10:255:255:05", "10.255.255.5"),
        ("254:128:00:00:00:00:00:00:00:00:00:00:00:00:00:00", None),  # link-local, no IPv4
        ("fe80:0000:0000:0000:0000:0000:0000:0001", None),  # not perftest's format
        (None, None),
    ],
)
def test_gid_ipv4(gid, ipv4):
    assert gid_ipv4(gid) == ipv4


FAILURES = [
    pytest.param(
        load(PERFTEST_228_REFUSED),
        r"failure: Couldn't connect to 192\.168\.125\.211:18515$",
        id="perftest-pr228-connection-refused",
    ),
    pytest.param(
        load(PERFTEST_173_COMPLETION),
        r"failure: Completion with error at client$",
        id="perftest-issue173-completion-error",
    ),
    pytest.param(
        load(EUGR_LATENCY),
        r"no perftest bandwidth table",
        id="dgx-spark-eugr-latency-output-is-not-a-bw-table",
    ),
    # Derived: the real RoCE capture cut right after its table header, as a run killed
    # before its first report would leave it.
    pytest.param(
        cut_after(load(NVIDIA_DGX_SPARK), "MsgRate[Mpps]"),
        r"table has no rows",
        id="derived-nvidia-guide-cut-after-header",
    ),
    # Derived: the real capture cut after its header, then perftest's closing RESULT_LINE.
    pytest.param(
        cut_after(load(EUGR_DGX_SPARK), "MsgRate[Mpps]") + "-" * 87 + "\n",
        r"table has no rows",
        id="derived-eugr-header-then-separator",
    ),
    # Constructed: the real capture followed by the line write_bw.c prints when -w
    # (--limit_bw) is not met: fprintf(stderr, "Error: BW result is below bw limit\n").
    pytest.param(
        load(EUGR_DGX_SPARK) + "Error: BW result is below bw limit\n",
        r"failure: Error: BW result is below bw limit$",
        id="constructed-eugr-plus-bw-limit-error",
    ),
    # Constructed: the banner of the real capture, then the per-port header perftest prints
    # with --report-per-port (RESULT_FMT_G_PER_PORT), which this parser does not read.
    pytest.param(
        edit(
            load(EUGR_DGX_SPARK),
            TABLE_HEADER_G,
            TABLE_HEADER_G + "   BW Port1[Gb/sec]   MsgRate Port1[Mpps]"
            "   BW Port2[Gb/sec]   MsgRate Port2[Mpps]",
        ),
        r"unsupported perftest table layout",
        id="constructed-eugr-per-port-header",
    ),
    pytest.param("", r"no perftest bandwidth table", id="empty-output"),
]


@pytest.mark.parametrize(("text", "message"), FAILURES)
def test_failures_raise(text, message):
    with pytest.raises(PerftestParseError, match=message):
        parse_ib_bw(text)


def test_failure_is_a_value_error():
    assert issubclass(PerftestParseError, ValueError)
