# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._nccl_tests: nccl-tests (all_reduce_perf, all_gather_perf...) reports.

The cases are tables over real captured output (fixtures/nccl; each file's first line
names its source). A case that edits a real capture, using nccl-tests' own format strings
(src/common.cu), says so in its label (``derived-...``) and in a comment next to it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._nccl_tests import (
    NcclRank,
    NcclResult,
    NcclRow,
    NcclTestsParseError,
    parse_nccl_tests,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    edit,
    load_capture,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nccl"

# Real captures (file name -> what it is).
SPARK_ALL_GATHER = "nccl_tests_all_gather_dgx_spark_sample.txt"  # 2x DGX Spark, cut after '# Avg'
SPARK_ALL_REDUCE = "all_reduce_perf_dgx_spark_pr103_excerpt.txt"  # 2x DGX Spark, first 4 rows
GB10_ALL_GATHER = "all_gather_perf_gb10_dell_pro_max_full.txt"  # 2x Dell GB10, complete
ROCE_ALL_REDUCE = "all_reduce_perf_roce_nccl_tests_issue252.txt"  # rows and trailer
NVL72_ALL_REDUCE = "all_reduce_perf_gb200_nvl72_coreweave_pr43.txt"  # rows and trailer
ALLTOALL_NA = "alltoall_perf_inplace_na_nccl_tests_issue287.txt"  # in-place #wrong is N/A
CUDA_FAILURE = "nccl_tests_cuda_failure_issue338.txt"
NCCL_FAILURE_AFTER_ROWS = "all_reduce_perf_nccl_failure_after_rows_issue322.txt"
NCCL_FAILURE_OLD = "all_reduce_perf_nccl_failure_nccl_issue473.txt"

GB10_ROW = (
    " 17179869184    2147483648     float    none      -1   374425   45.88   22.94       0"
    "   373792   45.96   22.98       0"
)


def load(name):
    return load_capture("nccl", name)


def spark(rank, host):
    return NcclRank(rank, host, "NVIDIA GB10", 0, "000f:01:00")


def row(size, count, dtype, redop, oop, ip):
    """A result row; ``oop`` and ``ip`` are (time_us, algbw, busbw, wrong)."""
    return NcclRow(size, count, dtype, redop, -1, *oop, *ip)


SUCCESS = [
    pytest.param(
        SPARK_ALL_GATHER,
        NcclResult(
            collective="all_gather_perf",
            version="2.17.6",
            nccl_version=None,
            ranks=[spark(0, "spark"), spark(1, "spark-3995")],
            rows=[
                row(
                    17179869184,
                    2147483648,
                    "float",
                    "none",
                    (453650.0, 37.87, 18.94, 0),
                    (410049.0, 41.90, 20.95, 0),
                )
            ],
            avg_busbw_gbytes=None,  # the capture stops at '# Avg'
            out_of_bounds=0,
            max_busbw_gbytes=20.95,
        ),
        id="dgx-spark-all-gather-cut-after-avg",
    ),
    pytest.param(
        SPARK_ALL_REDUCE,
        NcclResult(
            collective="all_reduce_perf",
            version="2.20.0",
            nccl_version=None,
            ranks=[spark(0, "spark-d708"), spark(1, "spark-dbf4")],
            rows=[
                row(8192, 2048, "float", "sum", (35.15, 0.23, 0.23, 0), (30.33, 0.27, 0.27, 0)),
                row(16384, 4096, "float", "sum", (31.67, 0.52, 0.52, 0), (30.75, 0.53, 0.53, 0)),
                row(32768, 8192, "float", "sum", (39.56, 0.83, 0.83, 0), (37.44, 0.88, 0.88, 0)),
                row(65536, 16384, "float", "sum", (67.93, 0.96, 0.96, 0), (64.71, 1.01, 1.01, 0)),
            ],
            avg_busbw_gbytes=None,
            out_of_bounds=None,
            max_busbw_gbytes=1.01,
        ),
        id="dgx-spark-all-reduce-excerpt-no-trailer",
    ),
    pytest.param(
        GB10_ALL_GATHER,
        NcclResult(
            collective="all_gather_perf",
            version="2.18.5",
            nccl_version=None,
            ranks=[spark(0, "promaxgb10-4c75"), spark(1, "promaxgb10-4c99")],
            rows=[
                row(
                    17179869184,
                    2147483648,
                    "float",
                    "none",
                    (374425.0, 45.88, 22.94, 0),
                    (373792.0, 45.96, 22.98, 0),
                )
            ],
            avg_busbw_gbytes=22.9611,
            out_of_bounds=0,
            max_busbw_gbytes=22.98,
        ),
        id="gb10-dell-all-gather-complete",
    ),
    pytest.param(
        ALLTOALL_NA,
        NcclResult(
            collective=None,  # this release printed no 'Collective test starting' line
            version=None,
            nccl_version=None,
            ranks=[NcclRank(0, "GENOA-01", "NVIDIA GeForce RTX 5090", 0, "0x01")],
            rows=[
                row(
                    33554432,
                    8388608,
                    "float",
                    "none",
                    (19.56, 1715.44, 0.0, 0),
                    (0.78, 43046.10, 0.0, None),
                )
            ],
            avg_busbw_gbytes=0.0,
            out_of_bounds=0,
            max_busbw_gbytes=0.0,
        ),
        id="nccl-tests-issue287-alltoall-in-place-na",
    ),
]


@pytest.mark.parametrize(("name", "expected"), SUCCESS)
def test_parse_real_capture(name, expected):
    assert parse_nccl_tests(load(name)) == expected


# Summaries of the longer real captures: rows, first and last size, trailer, best busbw.
SUMMARIES = [
    pytest.param(
        ROCE_ALL_REDUCE, 5, 536870912, 8589934592, 95.3009, 97.54, id="issue252-all-reduce"
    ),
    pytest.param(
        NVL72_ALL_REDUCE, 5, 536870912, 8589934592, 745.53, 846.82, id="pr43-nvl72-all-reduce"
    ),
]


@pytest.mark.parametrize(("name", "nrows", "first", "last", "avg", "best"), SUMMARIES)
def test_summary_of_real_capture(name, nrows, first, last, avg, best):
    result = parse_nccl_tests(load(name))
    assert len(result.rows) == nrows
    assert (result.rows[0].size_bytes, result.rows[-1].size_bytes) == (first, last)
    assert result.avg_busbw_gbytes == avg
    assert result.out_of_bounds == 0
    assert result.max_busbw_gbytes == best
    assert all(r.type == "float" and r.redop == "sum" and r.root == -1 for r in result.rows)


def test_ranks_of_the_nvl72_excerpt():
    assert parse_nccl_tests(load(NVL72_ALL_REDUCE)).ranks == [
        NcclRank(71, "slurm-gb200-207-171", "NVIDIA Graphics Device", 3, "0x01")
    ]


# What '# Avg bus bandwidth' is: common.cu adds every busBw it prints (out-of-place and
# in-place) and divides by their number. Checked on the captures that have the trailer.
@pytest.mark.parametrize("name", [ROCE_ALL_REDUCE, NVL72_ALL_REDUCE, GB10_ALL_GATHER, ALLTOALL_NA])
def test_avg_busbw_is_the_mean_of_all_printed_busbw(name):
    result = parse_nccl_tests(load(name))
    busbw = [bw for r in result.rows for bw in (r.oop_busbw, r.ip_busbw)]
    assert result.avg_busbw_gbytes == pytest.approx(sum(busbw) / len(busbw), abs=0.01)


@pytest.mark.parametrize("name", [SPARK_ALL_GATHER, GB10_ALL_GATHER, ROCE_ALL_REDUCE])
def test_lines_and_files_parse_like_the_whole_text(name):
    text = load(name)
    whole = parse_nccl_tests(text)
    assert parse_nccl_tests(text.splitlines()) == whole  # stdout_lines: no line ends
    assert parse_nccl_tests(iter(text.splitlines(keepends=True))) == whole
    with (FIXTURES / name).open(encoding="utf-8") as handle:
        next(handle)  # the '# SOURCE:' line
        assert parse_nccl_tests(handle) == whole


def test_mpirun_tagged_output_parses_like_the_plain_one():
    # Derived: every line of the real issue252 capture behind the tag that
    # 'mpirun --tag-output' prints ('[1,0]<stdout>:', as in aws/aws-k8s-tester#503).
    text = load(ROCE_ALL_REDUCE)
    tagged = "".join("[1,0]<stdout>:" + line for line in text.splitlines(keepends=True))
    assert parse_nccl_tests(tagged) == parse_nccl_tests(text)


def test_result_is_plain_data():
    data = json.loads(json.dumps(parse_nccl_tests(load(GB10_ALL_GATHER)).to_dict()))
    assert data["ranks"][1] == [1, "promaxgb10-4c99", "NVIDIA GB10", 0, "000f:01:00"]
    assert data["rows"][0]["ip_busbw"] == 22.98
    assert data["avg_busbw_gbytes"] == 22.9611


FAILURES = [
    pytest.param(
        load(CUDA_FAILURE),
        r"failure: gpu: Test CUDA failure common\.cu:1030 'system not yet initialized'$",
        id="issue338-test-cuda-failure",
    ),
    pytest.param(
        load(NCCL_FAILURE_AFTER_ROWS),
        r"failure: HCA-128: Test NCCL failure common\.cu:1204 'unhandled cuda error",
        id="issue322-test-nccl-failure-after-good-rows",
    ),
    pytest.param(
        load(NCCL_FAILURE_OLD),
        r"failure: fastmoe: Test NCCL failure common\.cu:777 'unhandled system error'$",
        id="nccl-issue473-test-nccl-failure-at-init",
    ),
    # Derived: the real GB10 row with its in-place #wrong (printed with "%5g") set to 3.
    pytest.param(
        edit(load(GB10_ALL_GATHER), GB10_ROW, GB10_ROW[: -len("       0")] + "       3"),
        r"data corruption at size 17179869184 bytes: 3 wrong element\(s\) in-place",
        id="derived-gb10-in-place-wrong-3",
    ),
    # Derived: the same row with its out-of-place #wrong at 10**6, which "%5g" prints
    # as 1e+06.
    pytest.param(
        edit(load(GB10_ALL_GATHER), "22.94       0", "22.94   1e+06"),
        r"data corruption at size 17179869184 bytes: 1000000 wrong element\(s\) out-of-place",
        id="derived-gb10-out-of-place-wrong-1e6",
    ),
    # Derived: the real issue252 trailer as common.cu prints it when rows were wrong:
    # PRINT("# Out of bounds values : %d %s\n", errors[0], errors[0] ? "FAILED" : "OK").
    pytest.param(
        edit(
            load(ROCE_ALL_REDUCE),
            "# Out of bounds values : 0 OK",
            "# Out of bounds values : 3 FAILED",
        ),
        r"3 out-of-bounds value\(s\) .*: # Out of bounds values : 3 FAILED$",
        id="derived-issue252-out-of-bounds-3-failed",
    ),
    # Derived: the real issue252 trailer as printed with NCCL_TESTS_MIN_BW set above it:
    # PRINT("# Avg bus bandwidth    : %g %s\n", bw[0], ... "FAILED" : "OK").
    pytest.param(
        edit(
            load(ROCE_ALL_REDUCE),
            "# Avg bus bandwidth    : 95.3009",
            "# Avg bus bandwidth    : 95.3009 FAILED",
        ),
        r"below NCCL_TESTS_MIN_BW: # Avg bus bandwidth    : 95\.3009 FAILED$",
        id="derived-issue252-avg-below-min-bw",
    ),
    # Derived: the real GB10 capture without its result row (header, then the trailer).
    pytest.param(
        edit(load(GB10_ALL_GATHER), GB10_ROW + "\n", ""),
        r"no result rows",
        id="derived-gb10-without-rows",
    ),
    # Derived: the real DGX Spark row with a time that is not a number.
    pytest.param(
        edit(load(SPARK_ALL_REDUCE), "35.15", "35.1x"),
        r"unreadable nccl-tests result row: 8192 ",
        id="derived-spark-unreadable-row",
    ),
    pytest.param("", r"no result rows", id="empty-output"),
]


@pytest.mark.parametrize(("text", "message"), FAILURES)
def test_failures_raise(text, message):
    with pytest.raises(NcclTestsParseError, match=message):
        parse_nccl_tests(text)


def test_failure_is_a_value_error():
    assert issubclass(NcclTestsParseError, ValueError)
