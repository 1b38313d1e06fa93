# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.parse_show_gids: the module_utils parser's rows as plain dicts."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.roce import FilterModule
from ansible_collections.gb10.serving.plugins.module_utils._roce_gids import parse_show_gids

FIXTURES = Path(__file__).resolve().parents[1] / "module_utils" / "fixtures" / "rdma"
SAMPLE2 = FIXTURES / "show_gids_sample2_dgx_spark_gb10_rocep1s0f0.txt"  # GB10, masked, spaces
SAMPLE3 = FIXTURES / "show_gids_sample3_tabs_multi_mlx5.txt"  # mlx5, raw tabs
SAMPLE6 = FIXTURES / "show_gids_sample6_ib_port_no_netdev.txt"  # IB port, no netdev
KEYS = {"device", "port", "index", "gid", "ipv4", "version", "netdev"}


def parse_show_gids_filter(value):
    return FilterModule().filters()["parse_show_gids"](value)


@pytest.mark.parametrize(
    ("path", "count"),
    [
        pytest.param(SAMPLE2, 12, id="gb10-sample2-masked-spaces"),
        pytest.param(SAMPLE3, 12, id="mlx5-sample3-tabs"),
        pytest.param(SAMPLE6, 3, id="sample6-ib-no-netdev"),
    ],
)
def test_returns_plain_dicts(path, count):
    text = path.read_text(encoding="utf-8")
    rows = parse_show_gids_filter(text)
    assert len(rows) == count
    assert all(isinstance(row, dict) and set(row) == KEYS for row in rows)
    assert rows == [row.to_dict() for row in parse_show_gids(text)]


def test_gb10_rocev2_ipv4_rows():
    rows = parse_show_gids_filter(SAMPLE2.read_text(encoding="utf-8"))
    picked = [r for r in rows if r["version"] == "v2" and r["ipv4"] is not None]
    assert picked == [
        {
            "device": "rocep1s0f0",
            "port": 1,
            "index": 3,
            "gid": "0000:0000:0000:0000:0000:ffff:c0a8:640a",
            "ipv4": "192.168.100.10",
            "version": "v2",
            "netdev": "enp1s0f0np0",
        },
        {
            "device": "roceP2p1s0f0",
            "port": 1,
            "index": 3,
            "gid": "0000:0000:0000:0000:0000:ffff:c0a8:640e",
            "ipv4": "192.168.100.14",
            "version": "v2",
            "netdev": "enP2p1s0f0np0",
        },
    ]


def test_accepts_stdout_lines():
    text = SAMPLE3.read_text(encoding="utf-8")
    assert parse_show_gids_filter(text.splitlines()) == parse_show_gids_filter(text)


def test_ib_row_netdev_is_none():
    rows = parse_show_gids_filter(SAMPLE6.read_text(encoding="utf-8"))
    assert rows[-1]["netdev"] is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("garbage\nmore garbage\n", "no show_gids table found", id="garbage-text"),
        pytest.param("", "no show_gids table found", id="empty-text"),
        pytest.param(
            SAMPLE3.read_text(encoding="utf-8").replace("n_gids_found=12", "n_gids_found=3"),
            "line 17: n_gids_found says 3",
            id="mlx5-sample3-count-mismatch",
        ),
        pytest.param(
            "DEV PORT INDEX GID\nmlx5_0 1 x fe80:0000:0000:0000:0000:0000:0000:0001 v1 eth0\n",
            "line 2: INDEX 'x'",
            id="malformed-row",
        ),
        pytest.param(None, "expects show_gids output as a string, got NoneType", id="none"),
        pytest.param(42, "got int", id="int"),
        pytest.param({"stdout": ""}, "got dict", id="dict"),
        pytest.param(["DEV PORT INDEX GID", 1], "a string or a list of strings", id="mixed-list"),
    ],
)
def test_raises_ansible_filter_error(value, expected):
    with pytest.raises(AnsibleFilterError, match=expected):
        parse_show_gids_filter(value)
