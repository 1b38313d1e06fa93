# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._roce_gids: show_gids and sysfs GID tables, and the RoCE v2 IPv4 pick.

Data come from real captured show_gids output (fixtures/rdma, each file names its source),
from trees laid by the lab's gid_tree.py and from the lab's show_gids stand-in run on them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._roce_gids import (
    GidParseError,
    GidRow,
    GidSelectionError,
    parse_show_gids,
    read_sysfs_gids,
    select_rocev2_ipv4,
    sort_rows,
)

COLLECTION = Path(__file__).resolve().parents[4]
GID_TREE = COLLECTION / "lab" / "rdma" / "gid_tree.py"
SHOW_GIDS = COLLECTION / "lab" / "node" / "rootfs" / "usr" / "local" / "sbin" / "show_gids"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rdma"
SAMPLE2 = FIXTURES / "show_gids_sample2_dgx_spark_gb10_rocep1s0f0.txt"  # GB10, masked, spaces
SAMPLE3 = FIXTURES / "show_gids_sample3_tabs_multi_mlx5.txt"  # mlx5, raw tabs
SAMPLE6 = FIXTURES / "show_gids_sample6_ib_port_no_netdev.txt"  # IB port, no netdev

# The lab cluster (lab/labctl.py): fabric IPv4 and RoCE v2 IPv4 GID index per node.
LAB_NODES = {"node0": ("192.168.100.10", 3), "node1": ("192.168.100.11", 4)}
FABRIC_NETDEV = "enp1s0f1np1"
FABRIC_DEVICE = "rocep1s0f1"

HEADER = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV"
RULE = "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---"
MASKED_LL = "fe80:0000:0000:0000:xxxx:xxxx:xxxx:xxxx"
V4_640A = "0000:0000:0000:0000:0000:ffff:c0a8:640a"
V4_640E = "0000:0000:0000:0000:0000:ffff:c0a8:640e"
S3_LL0 = "fe80:0000:0000:0000:0ac0:ebff:fe3d:ca54"
S3_LL1 = "fe80:0000:0000:0000:0e42:a1ff:fea4:94a8"
S3_LL2 = "fe80:0000:0000:0000:0e42:a1ff:fea4:94a9"
S3_V4_0 = "0000:0000:0000:0000:0000:ffff:0a6e:0021"
S3_V4_1 = "0000:0000:0000:0000:0000:ffff:1a6e:b11d"
S3_V4_2 = "0000:0000:0000:0000:0000:ffff:1a6e:b21d"
ZERO = "0000:0000:0000:0000:0000:0000:0000:0000"
V4_0A000001 = "0000:0000:0000:0000:0000:ffff:0a00:0001"


def row(device, port, index, gid, ipv4, version, netdev):
    return GidRow(device, port, index, gid, ipv4, version, netdev)


# Every row of every captured sample, as printed.
SAMPLE_ROWS = {
    "gb10-sample2-masked-spaces": (
        SAMPLE2,
        [
            row("rocep1s0f0", 1, 0, MASKED_LL, None, "v1", "enp1s0f0np0"),
            row("rocep1s0f0", 1, 1, MASKED_LL, None, "v2", "enp1s0f0np0"),
            row("rocep1s0f0", 1, 2, V4_640A, "192.168.100.10", "v1", "enp1s0f0np0"),
            row("rocep1s0f0", 1, 3, V4_640A, "192.168.100.10", "v2", "enp1s0f0np0"),
            row("rocep1s0f1", 1, 0, MASKED_LL, None, "v1", "enp1s0f1np1"),
            row("rocep1s0f1", 1, 1, MASKED_LL, None, "v2", "enp1s0f1np1"),
            row("roceP2p1s0f0", 1, 0, MASKED_LL, None, "v1", "enP2p1s0f0np0"),
            row("roceP2p1s0f0", 1, 1, MASKED_LL, None, "v2", "enP2p1s0f0np0"),
            row("roceP2p1s0f0", 1, 2, V4_640E, "192.168.100.14", "v1", "enP2p1s0f0np0"),
            row("roceP2p1s0f0", 1, 3, V4_640E, "192.168.100.14", "v2", "enP2p1s0f0np0"),
            row("roceP2p1s0f1", 1, 0, MASKED_LL, None, "v1", "enP2p1s0f1np1"),
            row("roceP2p1s0f1", 1, 1, MASKED_LL, None, "v2", "enP2p1s0f1np1"),
        ],
    ),
    "mlx5-sample3-tabs": (
        SAMPLE3,
        [
            row("mlx5_0", 1, 0, S3_LL0, None, "v1", "eth05"),
            row("mlx5_0", 1, 1, S3_LL0, None, "v2", "eth05"),
            row("mlx5_0", 1, 2, S3_V4_0, "10.110.0.33", "v1", "eth05"),
            row("mlx5_0", 1, 3, S3_V4_0, "10.110.0.33", "v2", "eth05"),
            row("mlx5_1", 1, 0, S3_LL1, None, "v1", "eth02"),
            row("mlx5_1", 1, 1, S3_LL1, None, "v2", "eth02"),
            row("mlx5_1", 1, 2, S3_V4_1, "26.110.177.29", "v1", "eth02"),
            row("mlx5_1", 1, 3, S3_V4_1, "26.110.177.29", "v2", "eth02"),
            row("mlx5_2", 1, 0, S3_LL2, None, "v1", "eth03"),
            row("mlx5_2", 1, 1, S3_LL2, None, "v2", "eth03"),
            row("mlx5_2", 1, 2, S3_V4_2, "26.110.178.29", "v1", "eth03"),
            row("mlx5_2", 1, 3, S3_V4_2, "26.110.178.29", "v2", "eth03"),
        ],
    ),
    "sample6-ib-no-netdev": (
        SAMPLE6,
        [
            row("mlx5_0", 1, 0, "fe80:0000:0000:0000:268a:07ff:feb1:bc04", None, "v1", "ens11f0"),
            row("mlx5_0", 1, 1, "fe80:0000:0000:0000:268a:07ff:feb1:bc04", None, "v2", "ens11f0"),
            row("mlx5_1", 1, 0, "fe80:0000:0000:0000:248a:0703:00b1:bc05", None, "v1", None),
        ],
    ),
}


# --- helpers ----------------------------------------------------------------------------


def labelled(*cases):
    """parametrize cases whose first value is their label, with that label as test id."""
    return [pytest.param(*case, id=case[0]) for case in cases]


def lay_lab_tree(root: Path, node: str) -> Path:
    """Lay a lab node's GID tree with the gid_tree.py CLI; return the sysfs root."""
    ipv4, index = LAB_NODES[node]
    cmd = [
        sys.executable,
        str(GID_TREE),
        "--root",
        str(root),
        "--node",
        node,
        "--fabric-netdev",
        FABRIC_NETDEV,
        "--fabric-ipv4",
        ipv4,
        "--fabric-gid-index",
        str(index),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return root


def run_show_gids(root: Path) -> str:
    """Output of the lab's show_gids stand-in on a tree."""
    env = {**os.environ, "SHOW_GIDS_SYSFS_ROOT": str(root)}
    result = subprocess.run(
        [sys.executable, str(SHOW_GIDS)], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def write_port(root: Path, device: str, port: int, slots: dict, size: int = 8) -> Path:
    """Hand-made sysfs port: slots maps index -> (gid, type text or None, ndev or None).

    Unlisted indices below ``size`` hold the all-zero GID and no attribute files, as on a
    real port. A None type or ndev leaves its file out.
    """
    port_dir = root / "class" / "infiniband" / device / "ports" / str(port)
    (port_dir / "gids").mkdir(parents=True)
    for index in range(max(size, max(slots, default=0) + 1)):
        gid, gid_type, ndev = slots.get(index, (ZERO, None, None))
        (port_dir / "gids" / str(index)).write_text(gid + "\n")
        if gid_type is not None:
            (port_dir / "gid_attrs" / "types").mkdir(parents=True, exist_ok=True)
            (port_dir / "gid_attrs" / "types" / str(index)).write_text(gid_type + "\n")
        if ndev is not None:
            (port_dir / "gid_attrs" / "ndevs").mkdir(parents=True, exist_ok=True)
            (port_dir / "gid_attrs" / "ndevs" / str(index)).write_text(ndev + "\n")
    return port_dir


def table(*rows: str, trailer: bool = True) -> str:
    """A show_gids table in the real tool's layout around the given raw rows."""
    lines = [HEADER, RULE, *rows]
    if trailer:
        lines.append(f"n_gids_found={len(rows)}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def lab_trees(tmp_path_factory):
    """sysfs roots of both lab nodes, laid once for this module."""
    base = tmp_path_factory.mktemp("lab")
    return {node: lay_lab_tree(base / node, node) for node in LAB_NODES}


# --- parse_show_gids on captured output -------------------------------------------------


@pytest.mark.parametrize("label", list(SAMPLE_ROWS))
def test_parse_show_gids_sample_rows(label):
    path, expected = SAMPLE_ROWS[label]
    with path.open(encoding="utf-8") as handle:  # a file object: streamed line by line
        rows = parse_show_gids(handle)
    assert len(rows) == len(expected)
    assert rows == expected


@pytest.mark.parametrize("label", list(SAMPLE_ROWS))
def test_parse_show_gids_accepts_str_and_lines(label):
    path, expected = SAMPLE_ROWS[label]
    text = path.read_text(encoding="utf-8")
    assert parse_show_gids(text) == expected
    assert parse_show_gids(text.splitlines()) == expected
    assert parse_show_gids(text.splitlines(keepends=True)) == expected
    assert parse_show_gids(text.replace("\n", "\r\n")) == expected


def test_parse_show_gids_keeps_masked_bytes_verbatim():
    rows = parse_show_gids(SAMPLE2.read_text(encoding="utf-8"))
    assert {r.gid for r in rows if r.ipv4 is None} == {MASKED_LL}


def test_parse_show_gids_ib_row_has_no_netdev():
    rows = parse_show_gids(SAMPLE6.read_text(encoding="utf-8"))
    assert rows[-1].netdev is None
    assert rows[-1].version == "v1"


@pytest.mark.parametrize(
    ("label", "text"),
    labelled(
        ("mlx5-sample3-tabs", SAMPLE3.read_text(encoding="utf-8")),
        ("gb10-sample2-masked-spaces", SAMPLE2.read_text(encoding="utf-8")),
        ("sample6-ib-no-netdev", SAMPLE6.read_text(encoding="utf-8")),
    ),
)
@pytest.mark.parametrize("tabsize", [1, 4, 8], ids=lambda size: f"expandtabs{size}")
def test_parse_show_gids_tabs_and_spaces_agree(label, text, tabsize):
    assert parse_show_gids(text.expandtabs(tabsize)) == SAMPLE_ROWS[label][1]


@pytest.mark.parametrize("node", list(LAB_NODES), ids=["lab-node0", "lab-node1"])
def test_parse_show_gids_lab_output_tabs_and_spaces_agree(lab_trees, node):
    text = run_show_gids(lab_trees[node])
    assert "\t" in text
    assert parse_show_gids(text.expandtabs(8)) == parse_show_gids(text)


@pytest.mark.parametrize(
    ("label", "before", "after"),
    labelled(
        ("prompt-user-host", "user@host:~$ show_gids\n", "user@host:~$ \n"),
        ("prompt-dollar", "$ show_gids\n", ""),
        ("blank-lines", "\n\n   \n", "\n\n"),
        ("comments", "# SOURCE: somewhere\n# more\n", "# trailing note\n"),
        ("prompt-and-blanks", "\nsean@gb10-1:~$ show_gids\n\n", "\nsean@gb10-1:~$ exit\n"),
    ),
)
def test_parse_show_gids_ignores_text_around_the_table(label, before, after):
    body = SAMPLE3.read_text(encoding="utf-8").split("\n", 1)[1]  # drop the # SOURCE line
    assert parse_show_gids(before + body + after) == SAMPLE_ROWS["mlx5-sample3-tabs"][1]


def test_parse_show_gids_blank_and_comment_lines_inside_table():
    text = table(
        "mlx5_0\t1\t0\tfe80:0000:0000:0000:0ac0:ebff:fe3d:ca54\t\t\tv1\teth05",
        "",
        "# a note",
        "mlx5_0\t1\t1\tfe80:0000:0000:0000:0ac0:ebff:fe3d:ca54\t\t\tv2\teth05",
    )
    text = text.replace("n_gids_found=4", "n_gids_found=2")
    assert [r.index for r in parse_show_gids(text)] == [0, 1]


@pytest.mark.parametrize(
    ("label", "text"),
    labelled(
        ("real-layout-n0", table()),
        ("header-only-no-trailer", table(trailer=False)),
        ("spaces-n0", table().expandtabs(8)),
        ("with-prompt", "$ show_gids\n" + table() + "$ \n"),
    ),
)
def test_parse_show_gids_empty_table(label, text):
    assert parse_show_gids(text) == []


def test_parse_show_gids_rows_without_trailer():
    text = table(f"mlx5_0\t1\t0\t{S3_LL0}\t\t\tv1\teth05", trailer=False)
    assert len(parse_show_gids(text)) == 1


def test_parse_show_gids_indices_in_ls_order_are_kept_then_sorted():
    printed = [0, 1, 10, 100, 11, 2, 3]  # plain `ls`: lexicographic
    text = table(*(f"mlx5_0\t1\t{i}\t{S3_LL0}\t\t\tv2\teth0" for i in printed))
    rows = parse_show_gids(text)
    assert [r.index for r in rows] == printed
    assert [r.index for r in sort_rows(rows)] == sorted(printed)


def test_sort_rows_orders_device_numbers_numerically():
    gid = "fe80:0000:0000:0000:0ac0:ebff:fe3d:ca54"
    rows = [
        row("mlx5_10", 1, 0, gid, None, "v1", "eth10"),
        row("mlx5_2", 2, 1, gid, None, "v1", "eth2"),
        row("mlx5_2", 1, 5, gid, None, "v1", "eth2"),
        row("mlx5_2", 1, 0, gid, None, "v1", "eth2"),
    ]
    assert [(r.device, r.port, r.index) for r in sort_rows(rows)] == [
        ("mlx5_2", 1, 0),
        ("mlx5_2", 1, 5),
        ("mlx5_2", 2, 1),
        ("mlx5_10", 1, 0),
    ]


@pytest.mark.parametrize(
    ("label", "count", "expected"),
    labelled(
        ("fewer-rows-than-trailer", "13", "n_gids_found says 13 rows but the table has 12"),
        ("more-rows-than-trailer", "11", "n_gids_found says 11 rows but the table has 12"),
        ("not-a-number", "twelve", "is not a number"),
    ),
)
def test_parse_show_gids_count_mismatch(label, count, expected):
    text = SAMPLE3.read_text(encoding="utf-8").replace("n_gids_found=12", "n_gids_found=" + count)
    with pytest.raises(GidParseError, match=expected) as excinfo:
        parse_show_gids(text)
    assert "line 17" in str(excinfo.value)  # the trailer's line in the sample file


def raw_row(port="1", index="0", gid=S3_LL0, rest="\t\t\tv1\teth0"):
    """One show_gids row in the real layout, any field replaceable."""
    return f"mlx5_0\t{port}\t{index}\t{gid}{rest}"


@pytest.mark.parametrize(
    ("label", "bad_row", "expected"),
    labelled(
        ("index-not-int", raw_row(index="three"), "INDEX 'three'"),
        ("negative-index", raw_row(index="-3"), "INDEX '-3'"),
        ("port-not-int", raw_row(port="p1"), "PORT 'p1'"),
        ("gid-seven-groups", raw_row(gid=S3_LL0[5:]), "GID '0000:"),
        ("gid-not-hex", raw_row(gid=S3_LL0.replace("ca54", "zz54")), "not 8 groups"),
        ("gid-compressed", raw_row(gid="::ffff:10.0.0.1"), "not 8 groups"),
        ("too-few-columns", "mlx5_0\t1\t0", "at least DEV PORT INDEX GID"),
        ("extra-column", raw_row(rest="\t\t\tv1\teth0\tjunk"), r"expected \[IPv4\] \[VER\]"),
        (
            "columns-swapped",
            raw_row(gid=V4_0A000001, rest="\tv2\t10.0.0.1\teth0"),
            r"expected \[IPv4\]",
        ),
        (
            "ipv4-disagrees-with-gid",
            raw_row(gid=V4_0A000001, rest="\t10.0.0.2  \tv2\teth0"),
            "does not match the GID",
        ),
        ("prompt-without-trailer", "user@host:~$ ", "at least DEV PORT INDEX GID"),
    ),
)
def test_parse_show_gids_malformed_row(label, bad_row, expected):
    good = raw_row(index="1")
    text = "$ show_gids\n" + table(good, bad_row, trailer=False)
    with pytest.raises(GidParseError, match=expected) as excinfo:
        parse_show_gids(text)
    message = str(excinfo.value)
    assert "line 5" in message  # prompt, header, rule, good row, then the bad one
    assert repr(bad_row) in message


@pytest.mark.parametrize(
    ("label", "text"),
    labelled(
        ("empty-string", ""),
        ("blank-lines", "\n\n\n"),
        ("prompt-only", "user@host:~$ show_gids\nshow_gids: command not found\n"),
        ("rows-without-header", SAMPLE3.read_text(encoding="utf-8").replace("DEV\t", "XXX\t")),
        ("ibv-devinfo-gid-lines", "\t\t\tGID[  3]:\t\t::ffff:27.105.179.3, RoCE v2\n"),
    ),
)
def test_parse_show_gids_no_header(label, text):
    with pytest.raises(GidParseError, match="no show_gids table found"):
        parse_show_gids(text)


def test_parse_show_gids_second_table_is_an_error():
    text = SAMPLE3.read_text(encoding="utf-8")
    with pytest.raises(GidParseError, match="line 19: a second show_gids table"):
        parse_show_gids(text + text.split("\n", 1)[1])


def test_parse_show_gids_ipv4_only_for_ipv4_mapped_gids():
    # show_gids prints an "IPv4" for any GID starting with 0000; ::a.b.c.d is not one.
    text = table(
        "mlx5_0\t1\t2\t0000:0000:0000:0000:0000:0000:0a00:0001\t10.0.0.1  \tv2\teth0",
        "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0a00:0001\t10.0.0.1  \tv2\teth0",
    )
    assert [r.ipv4 for r in parse_show_gids(text)] == [None, "10.0.0.1"]


def test_gid_row_to_dict():
    first = SAMPLE_ROWS["gb10-sample2-masked-spaces"][1][3]
    assert first.to_dict() == {
        "device": "rocep1s0f0",
        "port": 1,
        "index": 3,
        "gid": V4_640A,
        "ipv4": "192.168.100.10",
        "version": "v2",
        "netdev": "enp1s0f0np0",
    }


# --- read_sysfs_gids --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "count", "extra"),
    [
        ("node0", 10, []),
        (
            "node1",
            12,
            [
                (2, "v1", None),  # global IPv6 v1
                (3, "v1", "192.168.100.11"),
                (4, "v2", "192.168.100.11"),
                (5, "v2", None),  # global IPv6 v2, out of pair step
            ],
        ),
    ],
    ids=["lab-node0", "lab-node1"],
)
def test_read_sysfs_gids_lab_tree(lab_trees, node, count, extra):
    rows = read_sysfs_gids(str(lab_trees[node]))
    assert len(rows) == count
    assert rows == sort_rows(rows)
    # Four devices, each with its fe80 v1/v2 pair at 0 and 1 on its own netdev.
    for device in ("rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"):
        defaults = [r for r in rows if r.device == device and r.index in (0, 1)]
        assert [(r.index, r.version) for r in defaults] == [(0, "v1"), (1, "v2")]
        assert all(r.gid.startswith("fe80:0000:0000:0000:") and r.ipv4 is None for r in defaults)
    fabric = [r for r in rows if r.device == FABRIC_DEVICE and r.index >= 2]
    assert all(r.netdev == FABRIC_NETDEV and r.port == 1 for r in fabric)
    if extra:
        assert [(r.index, r.version, r.ipv4) for r in fabric] == extra
    ipv4, index = LAB_NODES[node]
    mapped = [r for r in rows if r.ipv4 is not None]
    assert [(r.index, r.version) for r in mapped] == [(index - 1, "v1"), (index, "v2")]
    assert all(r.ipv4 == ipv4 for r in mapped)


@pytest.mark.parametrize("node", list(LAB_NODES), ids=["lab-node0", "lab-node1"])
def test_lab_show_gids_and_sysfs_give_exactly_the_same_rows(lab_trees, node):
    from_sysfs = read_sysfs_gids(str(lab_trees[node]))
    from_show_gids = parse_show_gids(run_show_gids(lab_trees[node]))
    assert len(from_show_gids) == len(from_sysfs)
    assert sort_rows(from_show_gids) == from_sysfs


IB_GID = "fe80:0000:0000:0000:248a:0703:00b1:bc05"
ETH_LL = "fe80:0000:0000:0000:268a:07ff:feb1:bc04"


@pytest.fixture
def hand_tree(tmp_path):
    """An IB port without ndevs, a RoCE port with an unreadable types file, odd GIDs."""
    root = tmp_path / "sys"
    ib_port = write_port(root, "mlx5_1", 1, {0: (IB_GID, "IB/RoCE v1", None)})
    assert not (ib_port / "gid_attrs" / "ndevs").exists()
    eth_port = write_port(
        root,
        "mlx5_0",
        1,
        {
            0: (ETH_LL, "IB/RoCE v1", "ens11f0"),
            1: (ETH_LL, "RoCE v2", "ens11f0"),
            2: ("0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1", "ens11f0"),
            3: ("0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2", "ens11f0"),
            4: ("fe80:0000:0000:0000:0000:0000:0000:0000", "RoCE v2", "ens11f0"),  # skipped
            5: ("0000:0000:0000:0000:0000:0000:0a00:0002", "RoCE v2", "ens11f0"),  # ::10.0.0.2
            11: ("0000:0000:0000:0000:0000:ffff:0a00:0003", "RoCE v2", "ens11f0"),
        },
        size=16,
    )
    # Unreadable type (as EINVAL on real sysfs): a directory where the file should be.
    (eth_port / "gid_attrs" / "types" / "11").unlink()
    (eth_port / "gid_attrs" / "types" / "11").mkdir()
    return root


HAND_ROWS = [
    row("mlx5_0", 1, 0, ETH_LL, None, "v1", "ens11f0"),
    row("mlx5_0", 1, 1, ETH_LL, None, "v2", "ens11f0"),
    row("mlx5_0", 1, 2, "0000:0000:0000:0000:0000:ffff:0a00:0001", "10.0.0.1", "v1", "ens11f0"),
    row("mlx5_0", 1, 3, "0000:0000:0000:0000:0000:ffff:0a00:0001", "10.0.0.1", "v2", "ens11f0"),
    row("mlx5_0", 1, 5, "0000:0000:0000:0000:0000:0000:0a00:0002", None, "v2", "ens11f0"),
    row("mlx5_0", 1, 11, "0000:0000:0000:0000:0000:ffff:0a00:0003", "10.0.0.3", None, "ens11f0"),
    row("mlx5_1", 1, 0, IB_GID, None, "v1", None),
]


def test_read_sysfs_gids_hand_made_tree(hand_tree):
    assert read_sysfs_gids(str(hand_tree)) == HAND_ROWS


def test_hand_made_tree_show_gids_and_sysfs_agree(hand_tree):
    assert sort_rows(parse_show_gids(run_show_gids(hand_tree))) == HAND_ROWS


def test_read_sysfs_gids_unreadable_type_is_unknown_not_selected(hand_tree):
    rows = read_sysfs_gids(str(hand_tree))
    assert select_rocev2_ipv4(rows).index == 3  # 11 has an IPv4 but no known type


def test_read_sysfs_gids_type_read_error_einval(hand_tree, monkeypatch):
    """Real sysfs raises EINVAL reading types/<n> of an unmapped slot."""
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith(os.path.join("types", "3")):
            raise OSError(22, "Invalid argument", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    rows = read_sysfs_gids(str(hand_tree))
    assert [r.version for r in rows if r.device == "mlx5_0" and r.index == 3] == [None]


def test_read_sysfs_gids_no_infiniband_dir(tmp_path):
    with pytest.raises(GidParseError, match="no RDMA devices under " + str(tmp_path)):
        read_sysfs_gids(str(tmp_path))


def test_read_sysfs_gids_no_devices(tmp_path):
    (tmp_path / "class" / "infiniband").mkdir(parents=True)
    assert read_sysfs_gids(str(tmp_path)) == []


def test_read_sysfs_gids_port_without_gids_dir(tmp_path):
    (tmp_path / "class" / "infiniband" / "siw0" / "ports" / "1").mkdir(parents=True)
    assert read_sysfs_gids(str(tmp_path)) == []


@pytest.mark.parametrize(
    ("label", "content", "expected"),
    labelled(
        ("compressed-form", "::ffff:10.0.0.1", "not a GID"),
        ("empty", "", "not a GID"),
        ("masked", MASKED_LL, "not a GID"),
    ),
)
def test_read_sysfs_gids_bad_gid_file(tmp_path, label, content, expected):
    port = write_port(tmp_path, "mlx5_0", 1, {0: (ETH_LL, "IB/RoCE v1", "eth0")})
    (port / "gids" / "3").write_text(content + "\n")
    with pytest.raises(GidParseError, match=expected) as excinfo:
        read_sysfs_gids(str(tmp_path))
    assert str(port / "gids" / "3") in str(excinfo.value)


def test_read_sysfs_gids_unexpected_entry(tmp_path):
    port = write_port(tmp_path, "mlx5_0", 1, {0: (ETH_LL, "IB/RoCE v1", "eth0")})
    (port / "gids" / "README").write_text("x\n")
    with pytest.raises(GidParseError, match="unexpected entry 'README'"):
        read_sysfs_gids(str(tmp_path))


# --- select_rocev2_ipv4 -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "netdev", "ipv4"),
    [
        ("node0", None, None),
        ("node0", FABRIC_NETDEV, None),
        ("node0", None, "192.168.100.10"),
        ("node0", FABRIC_NETDEV, "192.168.100.10"),
        ("node1", None, None),
        ("node1", FABRIC_NETDEV, None),
        ("node1", None, "192.168.100.11"),
        ("node1", FABRIC_NETDEV, "192.168.100.11"),
    ],
    ids=[f"lab-{n}-{by}" for n in LAB_NODES for by in ("any", "by-netdev", "by-ipv4", "by-both")],
)
def test_select_lab_nodes(lab_trees, node, netdev, ipv4):
    picked = select_rocev2_ipv4(read_sysfs_gids(str(lab_trees[node])), netdev=netdev, ipv4=ipv4)
    assert (picked.device, picked.port, picked.index) == (FABRIC_DEVICE, 1, LAB_NODES[node][1])
    assert (picked.version, picked.ipv4, picked.netdev) == ("v2", LAB_NODES[node][0], FABRIC_NETDEV)


@pytest.mark.parametrize(
    ("netdev", "ipv4", "device", "index"),
    [
        ("enp1s0f0np0", None, "rocep1s0f0", 3),
        (None, "192.168.100.14", "roceP2p1s0f0", 3),
        ("enP2p1s0f0np0", "192.168.100.14", "roceP2p1s0f0", 3),
    ],
    ids=["gb10-sample2-by-netdev", "gb10-sample2-by-ipv4", "gb10-sample2-by-both"],
)
def test_select_gb10_sample(netdev, ipv4, device, index):
    rows = SAMPLE_ROWS["gb10-sample2-masked-spaces"][1]
    picked = select_rocev2_ipv4(rows, netdev=netdev, ipv4=ipv4)
    assert (picked.device, picked.index, picked.version) == (device, index, "v2")


def test_select_none_message(lab_trees):
    rows = read_sysfs_gids(str(lab_trees["node0"]))
    with pytest.raises(GidSelectionError) as excinfo:
        select_rocev2_ipv4(rows, netdev="enp1s0f0np0", ipv4="192.168.100.10")
    message = str(excinfo.value)
    assert "no RoCE v2 IPv4 GID matches netdev=enp1s0f0np0 ipv4=192.168.100.10" in message
    assert "rocep1s0f1 port 1 index 3 ipv4 192.168.100.10 netdev enp1s0f1np1" in message
    assert "is the cable in the port of enp1s0f0np0" in message
    assert "is 192.168.100.10 configured on enp1s0f0np0 (ip -br addr)" in message
    assert "is the link up (rdma link / ibdev2netdev)" in message


@pytest.mark.parametrize(
    ("label", "sample"),
    [("sample6-ib-no-netdev", SAMPLE6), ("real-layout-n0", None)],
)
def test_select_none_at_all(label, sample):
    rows = parse_show_gids(sample.read_text(encoding="utf-8") if sample else table())
    with pytest.raises(GidSelectionError, match="RoCE v2 IPv4 GIDs seen: none") as excinfo:
        select_rocev2_ipv4(rows, netdev=FABRIC_NETDEV)
    assert "is the cable in the port of enp1s0f1np1" in str(excinfo.value)


def test_select_ignores_v1_and_non_ipv4_rows():
    rows = [r for r in SAMPLE_ROWS["mlx5-sample3-tabs"][1] if r.device == "mlx5_0"]
    assert select_rocev2_ipv4(rows).index == 3
    v1_only = [r for r in rows if r.version == "v1"]
    with pytest.raises(GidSelectionError, match="seen: none"):
        select_rocev2_ipv4(v1_only)


def test_select_several_message():
    rows = SAMPLE_ROWS["gb10-sample2-masked-spaces"][1]
    with pytest.raises(GidSelectionError) as excinfo:
        select_rocev2_ipv4(rows)
    message = str(excinfo.value)
    assert message.startswith("2 RoCE v2 IPv4 GIDs match no netdev or ipv4 filter")
    assert "rocep1s0f0 port 1 index 3 ipv4 192.168.100.10 netdev enp1s0f0np0" in message
    assert "roceP2p1s0f0 port 1 index 3 ipv4 192.168.100.14 netdev enP2p1s0f0np0" in message
    assert "select by both netdev and ipv4" in message


def test_select_several_even_by_both():
    rows = SAMPLE_ROWS["gb10-sample2-masked-spaces"][1]
    twin = row("rocep1s0f0", 1, 7, V4_640A, "192.168.100.10", "v2", "enp1s0f0np0")
    with pytest.raises(GidSelectionError) as excinfo:
        select_rocev2_ipv4([*rows, twin], netdev="enp1s0f0np0", ipv4="192.168.100.10")
    message = str(excinfo.value)
    assert "2 RoCE v2 IPv4 GIDs match netdev=enp1s0f0np0 ipv4=192.168.100.10" in message
    assert "index 3" in message
    assert "index 7" in message
    assert "more than once" in message


@pytest.mark.parametrize("ipv4", ["192.168.100", "fe80::1", "192.168.100.256", ""])
def test_select_rejects_bad_ipv4(ipv4):
    with pytest.raises(GidSelectionError, match="not a dotted-quad IPv4 address"):
        select_rocev2_ipv4(SAMPLE_ROWS["gb10-sample2-masked-spaces"][1], ipv4=ipv4)
