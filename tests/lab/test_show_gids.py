"""Tests for the lab's show_gids stand-in against trees laid by gid_tree.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GID_TREE = REPO / "lab" / "rdma" / "gid_tree.py"
COLLECTIONS = REPO / ".cache" / "collections"
SHOW_GIDS = REPO / "lab" / "node" / "rootfs" / "usr" / "local" / "sbin" / "show_gids"
FIXTURES = REPO / "tests" / "unit" / "plugins" / "module_utils" / "fixtures" / "rdma"
SAMPLE2 = FIXTURES / "show_gids_sample2_dgx_spark_gb10_rocep1s0f0.txt"  # GB10, tabs expanded
SAMPLE3 = FIXTURES / "show_gids_sample3_tabs_multi_mlx5.txt"  # raw tabs kept

HEADER = b"DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV"
RULE = b"---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---"
TAIL = r"(?::[0-9a-f]{4}){7}"  # seven more groups of a full-form GID
IPV4_ROW = re.compile(
    rf"(\S+)\t(\d+)\t(\d+)\t(0000{TAIL})\t(\d+\.\d+\.\d+\.\d+)  \t(v[12]|)\t(\S*)"
)
OTHER_ROW = re.compile(rf"(\S+)\t(\d+)\t(\d+)\t((?!0000)[0-9a-f]{{4}}{TAIL})\t\t\t(v[12]|)\t(\S*)")
DEVICE_ORDER = ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]
SKIPPED = {"0000:0000:0000:0000:0000:0000:0000:0000", "fe80:0000:0000:0000:0000:0000:0000:0000"}
# node -> (fabric IPv4, fabric GID index)
NODES = {"node0": ("192.168.100.10", 3), "node1": ("192.168.100.11", 4)}


def lay(
    root: Path, node: str, ipv4: str, index: int, netdev: str = "enp1s0f1np1", twin: tuple = ()
) -> Path:
    """Lay a node's tree with the gid_tree CLI (twin: netdev, IPv4, index); return root."""
    cmd = [
        sys.executable,
        str(GID_TREE),
        "--root",
        str(root),
        "--node",
        node,
        "--fabric-netdev",
        netdev,
        "--fabric-ipv4",
        ipv4,
        "--fabric-gid-index",
        str(index),
    ]
    if twin:
        cmd += ["--twin-netdev", twin[0], "--twin-ipv4", twin[1], "--twin-gid-index", str(twin[2])]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return root


def show_gids(root: Path, *args: str, cmd: list[str] | None = None) -> bytes:
    """Run the stand-in on root; it must exit 0. Return raw stdout."""
    env = {**os.environ, "SHOW_GIDS_SYSFS_ROOT": str(root)}
    argv = (cmd or [sys.executable, str(SHOW_GIDS)]) + list(args)
    result = subprocess.run(argv, capture_output=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def rows(out: bytes) -> list[str]:
    """Lines between the rule and the trailer."""
    lines = out.decode().split("\n")
    assert lines[-1] == ""
    assert lines[-2].startswith("n_gids_found=")
    return lines[2:-2]


def parse(row: str) -> tuple[str, str, str, str, str, str, str]:
    """(dev, port, index, gid, ipv4, ver, ndev) of an output row of either shape."""
    if match := IPV4_ROW.fullmatch(row):
        return match.groups()
    match = OTHER_ROW.fullmatch(row)
    assert match, repr(row)
    dev, port, index, gid, ver, ndev = match.groups()
    return dev, port, index, gid, "", ver, ndev


def sample_body(path: Path) -> list[str]:
    """Capture lines from the header on (drops the SOURCE comment and the prompt)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("DEV"))
    return lines[start:]


@pytest.fixture(scope="module", params=sorted(NODES))
def node_out(request, tmp_path_factory) -> tuple[str, Path, bytes]:
    ipv4, index = NODES[request.param]
    root = lay(tmp_path_factory.mktemp(request.param), request.param, ipv4, index)
    return request.param, root, show_gids(root)


def test_header_and_rule_bytes(node_out):
    _skip, _skip, out = node_out
    lines = out.split(b"\n")
    assert lines[0] == HEADER
    assert lines[1] == RULE
    assert [line.encode() for line in sample_body(SAMPLE3)[:2]] == [HEADER, RULE]


def test_row_shapes(node_out):
    _skip, _skip, out = node_out
    for row in rows(out):
        dev, port, index, gid, ipv4, ver, ndev = parse(row)
        assert port == "1"
        assert ver in ("v1", "v2")
        assert ndev.startswith("en")
        if gid.startswith("0000"):
            assert row == f"{dev}\t1\t{index}\t{gid}\t{ipv4}  \t{ver}\t{ndev}"
            octets = [int(gid[i : i + 2], 16) for i in (30, 32, 35, 37)]
            assert ipv4 == ".".join(map(str, octets))
        else:
            assert row == f"{dev}\t1\t{index}\t{gid}\t\t\t{ver}\t{ndev}"
            assert gid not in SKIPPED


def test_fabric_v2_row(node_out):
    node, _skip, out = node_out
    ipv4, index = NODES[node]
    matches = [parse(r) for r in rows(out) if parse(r)[4] == ipv4 and parse(r)[5] == "v2"]
    assert len(matches) == 1
    dev, _skip, got_index, _skip, _skip, _skip, ndev = matches[0]
    assert (dev, got_index, ndev) == ("rocep1s0f1", str(index), "enp1s0f1np1")
    v1 = [parse(r)[:3] for r in rows(out) if parse(r)[4] == ipv4 and parse(r)[5] == "v1"]
    assert v1 == [("rocep1s0f1", "1", str(index - 1))]


def test_trailer_counts_non_zero_gid_files(node_out):
    _skip, root, out = node_out
    gid_files = (root / "class" / "infiniband").glob("*/ports/*/gids/*")
    non_zero = [p for p in gid_files if p.read_text(encoding="ascii").strip() not in SKIPPED]
    assert out.endswith(f"\nn_gids_found={len(non_zero)}\n".encode())
    assert len(rows(out)) == len(non_zero)


def test_device_order(node_out):
    _skip, _skip, out = node_out
    assert list(dict.fromkeys(parse(r)[0] for r in rows(out))) == DEVICE_ORDER


def test_indices_in_plain_ls_order(tmp_path):
    out = show_gids(lay(tmp_path, "node0", "192.168.100.10", 11))
    fabric = [parse(r)[2] for r in rows(out) if r.startswith("rocep1s0f1\t")]
    assert fabric == ["0", "1", "10", "11", "2", "3", "4", "5", "6", "7", "8", "9"]
    for dev in DEVICE_ORDER:
        indices = [parse(r)[2] for r in rows(out) if parse(r)[0] == dev]
        assert indices == sorted(indices)


@pytest.mark.parametrize(("dev", "count"), [("rocep1s0f1", 6), ("roceP2p1s0f0", 2)])
def test_device_argument_restricts(tmp_path, dev, count):
    out = show_gids(lay(tmp_path, "node1", "192.168.100.11", 4), dev)
    assert {parse(r)[0] for r in rows(out)} == {dev}
    assert len(rows(out)) == count
    assert out.endswith(f"n_gids_found={count}\n".encode())


@pytest.mark.parametrize("args", [(), ("mlx5_0",)])
def test_missing_tree_prints_empty_table(tmp_path, args):
    out = show_gids(tmp_path / "absent", *args)
    assert out == HEADER + b"\n" + RULE + b"\nn_gids_found=0\n"


def test_unreadable_type_and_missing_ndev_leave_columns_empty(tmp_path):
    port = lay(tmp_path, "node0", "192.168.100.10", 3) / "class/infiniband/rocep1s0f1/ports/1"
    (port / "gid_attrs" / "types" / "3").unlink()
    (port / "gid_attrs" / "ndevs" / "3").unlink()
    (port / "gid_attrs" / "ndevs" / "0").unlink()
    out = show_gids(tmp_path, "rocep1s0f1").decode()
    gid = "0000:0000:0000:0000:0000:ffff:c0a8:640a"
    assert f"\nrocep1s0f1\t1\t3\t{gid}\t192.168.100.10  \t\t\n" in out
    assert re.search(rf"\nrocep1s0f1\t1\t0\tfe80{TAIL}\t\t\tv1\t\n", out)


def test_bare_fe80_and_zero_gids_are_skipped(tmp_path):
    port = lay(tmp_path, "node0", "192.168.100.10", 3) / "class/infiniband/rocep1s0f0/ports/1"
    (port / "gids" / "7").write_text("fe80:0000:0000:0000:0000:0000:0000:0000\n", encoding="ascii")
    (port / "gid_attrs" / "types" / "7").write_text("RoCE v2\n", encoding="ascii")
    out = show_gids(tmp_path, "rocep1s0f0")
    assert [parse(r)[2] for r in rows(out)] == ["0", "1"]


def test_reproduces_gb10_capture(tmp_path):
    """Rebuild sample2's table (gb10-1, both halves of its first port addressed, each at
    index 3): the expanded output equals the capture."""
    lay(
        tmp_path,
        "gb10-1",
        "192.168.100.10",
        3,
        "enp1s0f0np0",
        ("enP2p1s0f0np0", "192.168.100.14", 3),
    )
    out = show_gids(tmp_path).decode()
    masked = re.sub(r"(fe80:0000:0000:0000):[0-9a-f:]{19}", r"\1:xxxx:xxxx:xxxx:xxxx", out)
    assert masked.expandtabs(8).splitlines() == sample_body(SAMPLE2)


def test_the_lab_twin_has_its_own_gid_at_its_own_index(tmp_path):
    """node1 of the lab: the first half's RoCE v2 IPv4 GID at 4, the twin's at 3; the
    collection's parser finds each half's by netdev and address, as the fabric role does."""
    # The collection as scripts/setup.sh installs it for the controller tests.
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))
    from ansible_collections.gb10.serving.plugins.module_utils._roce_gids import (  # noqa: PLC0415
        parse_show_gids,
        select_rocev2_ipv4,
    )

    lay(tmp_path, "node1", "192.168.100.11", 4, twin=("enP2p1s0f1np1", "192.168.101.11", 3))
    table = parse_show_gids(show_gids(tmp_path).decode())
    first = select_rocev2_ipv4(table, "enp1s0f1np1", "192.168.100.11")
    second = select_rocev2_ipv4(table, "enP2p1s0f1np1", "192.168.101.11")
    assert (first.device, first.index) == ("rocep1s0f1", 4)
    assert (second.device, second.index) == ("roceP2p1s0f1", 3)
    states = {
        dev: (tmp_path / "class/infiniband" / dev / "ports/1/state").read_text().strip()
        for dev in DEVICE_ORDER
    }
    assert states == {
        "rocep1s0f0": "1: DOWN",
        "rocep1s0f1": "4: ACTIVE",
        "roceP2p1s0f0": "1: DOWN",
        "roceP2p1s0f1": "4: ACTIVE",
    }


def test_column_shape_matches_gb10_capture(node_out):
    _skip, _skip, out = node_out
    ours = out.decode().expandtabs(8).splitlines()
    theirs = sample_body(SAMPLE2)
    assert ours[:2] == theirs[:2]  # header and rule, column for column
    assert ours[0].split() == ["DEV", "PORT", "INDEX", "GID", "IPv4", "VER", "DEV"]

    def shapes(lines: list[str]) -> dict[str, set[int]]:
        kinds: dict[str, set[int]] = {}
        for line in lines[2:-1]:
            fields = line.split()
            kinds.setdefault("ipv4" if fields[3].startswith("0000") else "other", set()).add(
                len(fields)
            )
        return kinds

    assert shapes(ours) == shapes(theirs) == {"ipv4": {7}, "other": {6}}
    assert re.fullmatch(r"n_gids_found=\d+", ours[-1])
    assert theirs[-1] == "n_gids_found=12"
    netdevs = {line.split()[0]: line.split()[-1] for line in theirs[2:-1]}
    assert {line.split()[0]: line.split()[-1] for line in ours[2:-1]} == netdevs


@pytest.mark.skipif(shutil.which("python3") is None, reason="needs python3 on PATH")
def test_runs_as_executable(node_out):
    _skip, root, out = node_out
    assert os.access(SHOW_GIDS, os.X_OK)
    assert SHOW_GIDS.read_bytes().startswith(b"#!/bin/sh\n")
    assert show_gids(root, cmd=[str(SHOW_GIDS)]) == out


@pytest.mark.skipif(Path("/var/lib/gb10-lab/sys").exists(), reason="a lab tree exists here")
def test_default_root():
    env = {k: v for k, v in os.environ.items() if k != "SHOW_GIDS_SYSFS_ROOT"}
    cmd = [sys.executable, str(SHOW_GIDS)]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0
    assert result.stdout.endswith("\nn_gids_found=0\n")
    assert "/var/lib/gb10-lab/sys/class/infiniband" in result.stderr
