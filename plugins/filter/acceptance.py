# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters gb10.serving.parse_ib_bw and parse_nccl_tests: fabric acceptance outputs."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._nccl_tests import (
    NcclTestsParseError,
    parse_nccl_tests,
)
from ansible_collections.gb10.serving.plugins.module_utils._perftest import (
    PerftestParseError,
    parse_ib_bw,
)


def _text(name, value):
    if isinstance(value, (list, tuple)) and all(isinstance(line, str) for line in value):
        return value
    if isinstance(value, str):
        return value
    raise AnsibleFilterError(
        f"{name} expects the tool's output as a string or a list of lines, "
        f"got {type(value).__name__}"
    )


def parse_ib_bw_filter(output):
    """ib_write_bw (perftest) client output -> dict with rows and bw_average_gbps."""
    try:
        return parse_ib_bw(_text("parse_ib_bw", output)).to_dict()
    except PerftestParseError as exc:
        raise AnsibleFilterError(f"parse_ib_bw: {exc}") from exc


def parse_nccl_tests_filter(output):
    """nccl-tests output -> dict with rows, avg_busbw_gbytes and max_busbw_gbytes."""
    try:
        return parse_nccl_tests(_text("parse_nccl_tests", output)).to_dict()
    except NcclTestsParseError as exc:
        raise AnsibleFilterError(f"parse_nccl_tests: {exc}") from exc


class FilterModule:
    """gb10.serving fabric acceptance filters."""

    def filters(self):
        return {"parse_ib_bw": parse_ib_bw_filter, "parse_nccl_tests": parse_nccl_tests_filter}
