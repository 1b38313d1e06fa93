# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters gb10.serving.parse_ib_bw and parse_nccl_tests over real captures."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.acceptance import FilterModule
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    load_capture as capture,
)

FILTERS = FilterModule().filters()


def test_ib_write_bw_dgx_spark_roce_gid3_as_text_and_as_lines():
    text = capture("perftest", "ib_write_bw_client_gbits_roce_gid3_dgx_spark_nvidia_guide.txt")
    result = FILTERS["parse_ib_bw"](text)
    assert result["unit"] == "Gb/sec"
    assert result["gid_index"] == 3
    assert result["bw_average_gbps"] == pytest.approx(92.57, abs=0.01)
    assert FILTERS["parse_ib_bw"](text.splitlines()) == result


def test_ib_write_bw_failure_becomes_a_filter_error_quoting_the_line():
    text = capture("perftest", "ib_write_bw_client_connect_refused_perftest_pr228.txt")
    with pytest.raises(AnsibleFilterError, match="parse_ib_bw: .*Couldn't connect"):
        FILTERS["parse_ib_bw"](text)


def test_nccl_all_gather_gb10_pair():
    text = capture("nccl", "all_gather_perf_gb10_dell_pro_max_full.txt")
    result = FILTERS["parse_nccl_tests"](text)
    assert result["avg_busbw_gbytes"] == pytest.approx(22.9611)
    assert result["max_busbw_gbytes"] >= result["avg_busbw_gbytes"]


def test_nccl_failure_becomes_a_filter_error():
    text = capture("nccl", "all_reduce_perf_nccl_failure_after_rows_issue322.txt")
    with pytest.raises(AnsibleFilterError, match="parse_nccl_tests: .*NCCL failure"):
        FILTERS["parse_nccl_tests"](text)


@pytest.mark.parametrize("name", ["parse_ib_bw", "parse_nccl_tests"])
@pytest.mark.parametrize("value", [None, 42, {"stdout": ""}])
def test_non_text_input_is_refused(name, value):
    with pytest.raises(AnsibleFilterError, match="expects the tool's output"):
        FILTERS[name](value)
