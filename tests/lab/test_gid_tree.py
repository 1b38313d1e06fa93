"""Tests for lab/rdma/gid_tree.py: the simulated sysfs GID tree of a lab node."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
GID_TREE = REPO / "lab" / "rdma" / "gid_tree.py"
DEVICES = {
    "rocep1s0f0": "enp1s0f0np0",
    "rocep1s0f1": "enp1s0f1np1",
    "roceP2p1s0f0": "enP2p1s0f0np0",
    "roceP2p1s0f1": "enP2p1s0f1np1",
}
ZERO = "0000:0000:0000:0000:0000:0000:0000:0000"
GID_FILE = re.compile(r"[0-9a-f]{4}(:[0-9a-f]{4}){7}\n")
V1, V2 = "IB/RoCE v1", "RoCE v2"
# node -> (fabric IPv4, fabric GID index, its IPv4-mapped GID)
NODES = {
    "node0": ("192.168.100.10", 3, "0000:0000:0000:0000:0000:ffff:c0a8:640a"),
    "node1": ("192.168.100.11", 4, "0000:0000:0000:0000:0000:ffff:c0a8:640b"),
}


def lay(
    root: Path, node: str, ipv4: str, index: int | str, *extra: str
) -> subprocess.CompletedProcess[str]:
    """Run the CLI as documented; return the CompletedProcess."""
    cmd = [
        sys.executable,
        str(GID_TREE),
        "--root",
        str(root),
        "--node",
        node,
        "--fabric-netdev",
        "enp1s0f1np1",
        "--fabric-ipv4",
        ipv4,
        "--fabric-gid-index",
        str(index),
        *extra,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def port_dir(root: Path, dev: str) -> Path:
    """Port 1 directory of a device."""
    return root / "class" / "infiniband" / dev / "ports" / "1"


def snapshot(root: Path) -> dict[str, str]:
    """Relative path -> content of every file of the tree."""
    return {
        str(p.relative_to(root)): p.read_text(encoding="ascii")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def table(root: Path, dev: str) -> dict[int, tuple[str, str, str]]:
    """Used slots of a device: index -> (gid, type, ndev)."""
    port = port_dir(root, dev)
    out = {}
    for n in range(256):
        gid = (port / "gids" / str(n)).read_text(encoding="ascii").strip()
        if gid != ZERO:
            out[n] = (
                gid,
                (port / "gid_attrs" / "types" / str(n)).read_text(encoding="ascii").strip(),
                (port / "gid_attrs" / "ndevs" / str(n)).read_text(encoding="ascii").strip(),
            )
    return out


@pytest.fixture(scope="module")
def gid_tree() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gid_tree", GID_TREE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=sorted(NODES))
def node_tree(request, tmp_path_factory) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp(request.param)
    ipv4, index, _skip = NODES[request.param]
    result = lay(root, request.param, ipv4, index)
    assert result.returncode == 0, result.stderr
    return request.param, root


def test_only_infiniband_class_is_laid(node_tree):
    _skip, root = node_tree
    assert sorted(p.name for p in (root / "class" / "infiniband").iterdir()) == sorted(DEVICES)
    assert [p.name for p in root.iterdir()] == ["class"]


@pytest.mark.parametrize("dev", DEVICES)
def test_all_256_slots_in_full_sysfs_form(node_tree, dev):
    _skip, root = node_tree
    gids = port_dir(root, dev) / "gids"
    assert sorted(int(p.name) for p in gids.iterdir()) == list(range(256))
    for path in gids.iterdir():
        text = path.read_text(encoding="ascii")
        assert GID_FILE.fullmatch(text), (path, text)
        assert len(text) == 40


@pytest.mark.parametrize("dev", DEVICES)
def test_attrs_exist_only_for_used_slots(node_tree, dev):
    _skip, root = node_tree
    port = port_dir(root, dev)
    used = {str(n) for n in table(root, dev)}
    assert {p.name for p in (port / "gid_attrs" / "types").iterdir()} == used
    assert {p.name for p in (port / "gid_attrs" / "ndevs").iterdir()} == used
    for n in used:
        assert (port / "gid_attrs" / "types" / n).read_text(encoding="ascii") in (
            f"{V1}\n",
            f"{V2}\n",
        )
        assert (port / "gid_attrs" / "ndevs" / n).read_text(encoding="ascii") == DEVICES[dev] + "\n"


@pytest.mark.parametrize(
    ("dev", "state", "phys_state"),
    [
        ("rocep1s0f0", "1: DOWN", "3: Disabled"),
        ("rocep1s0f1", "4: ACTIVE", "5: LinkUp"),
        ("roceP2p1s0f0", "1: DOWN", "3: Disabled"),
        ("roceP2p1s0f1", "1: DOWN", "3: Disabled"),
    ],
)
def test_port_attributes(node_tree, dev, state, phys_state):
    _skip, root = node_tree
    port = port_dir(root, dev)
    assert (port / "link_layer").read_text(encoding="ascii") == "Ethernet\n"
    assert (port / "state").read_text(encoding="ascii") == state + "\n"
    assert (port / "phys_state").read_text(encoding="ascii") == phys_state + "\n"


@pytest.mark.parametrize("dev", DEVICES)
def test_link_local_defaults_at_0_and_1(node_tree, dev):
    _skip, root = node_tree
    used = table(root, dev)
    gid = used[0][0]
    assert used[0] == (gid, V1, DEVICES[dev])
    assert used[1] == (gid, V2, DEVICES[dev])
    groups = gid.split(":")
    assert groups[:4] == ["fe80", "0000", "0000", "0000"]
    assert groups[5].endswith("ff")  # EUI-64: ...ff:fe... in the middle
    assert groups[6].startswith("fe")
    if dev != "rocep1s0f1":
        assert sorted(used) == [0, 1]


def test_link_local_differs_per_node_and_device(tmp_path):
    gids = set()
    for node, (ipv4, index, _skip) in NODES.items():
        assert lay(tmp_path / node, node, ipv4, index).returncode == 0
        gids |= {table(tmp_path / node, dev)[0][0] for dev in DEVICES}
    assert len(gids) == 2 * len(DEVICES)


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        # index 3: the plain table, the IPv4 v1/v2 pair right after the defaults
        ("node0", {2: ("v4", V1), 3: ("v4", V2)}),
        # index 4: a global IPv6 GID of the same netdev straddles the IPv4 pair
        ("node1", {2: ("v6", V1), 3: ("v4", V1), 4: ("v4", V2), 5: ("v6", V2)}),
    ],
)
def test_fabric_table_layout(tmp_path, node, expected):
    ipv4, index, v4_gid = NODES[node]
    assert lay(tmp_path, node, ipv4, index).returncode == 0
    used = table(tmp_path, "rocep1s0f1")
    assert sorted(used) == [0, 1, *sorted(expected)]
    v6_gids = set()
    for n, (kind, gid_type) in expected.items():
        gid, got_type, ndev = used[n]
        assert (got_type, ndev) == (gid_type, "enp1s0f1np1")
        if kind == "v4":
            assert gid == v4_gid
        else:
            assert gid.startswith("fd00:")
            v6_gids.add(gid)
    assert len(v6_gids) <= 1  # the IPv6 entries are one address (v1 + v2)


@pytest.mark.parametrize("index", [2, 3, 4, 5, 6, 11, 12, 249, 250])
def test_exactly_one_v2_ipv4_row_at_index(tmp_path, index):
    v4_gid = "0000:0000:0000:0000:0000:ffff:c0a8:640a"
    assert lay(tmp_path, "node0", "192.168.100.10", index).returncode == 0
    rows = [
        (t, dev, n)
        for dev in DEVICES
        for n, (g, t, _skip) in table(tmp_path, dev).items()
        if g == v4_gid
    ]
    assert [r for r in rows if r[0] == V2] == [(V2, "rocep1s0f1", index)]
    assert [r[:2] for r in rows if r[0] == V1] == [(V1, "rocep1s0f1")]
    used = table(tmp_path, "rocep1s0f1")
    assert sorted(used) == list(range(len(used)))  # no holes in the table
    types = [t for _skip, t, _skip in used.values()]
    assert types.count(V1) == types.count(V2)  # every address has its v1 and v2


def test_rerun_is_idempotent_and_removes_stale_files(tmp_path):
    ipv4, index, _skip = NODES["node1"]
    assert lay(tmp_path, "node1", ipv4, index).returncode == 0
    first = snapshot(tmp_path)
    stale_dev = tmp_path / "class" / "infiniband" / "mlx5_9" / "ports" / "1" / "gids"
    stale_dev.mkdir(parents=True)
    (stale_dev / "0").write_text("stale\n", encoding="ascii")
    (port_dir(tmp_path, "rocep1s0f0") / "gid_attrs" / "types" / "7").write_text(
        V2 + "\n", encoding="ascii"
    )
    (port_dir(tmp_path, "rocep1s0f1") / "gids" / "9").write_text(
        "0000:0000:0000:0000:0000:ffff:c0a8:6463\n", encoding="ascii"
    )
    assert lay(tmp_path, "node1", ipv4, index).returncode == 0
    assert snapshot(tmp_path) == first


def test_relay_other_node_equals_fresh_lay(tmp_path):
    for node in ("node0", "node1"):
        ipv4, index, _skip = NODES[node]
        assert lay(tmp_path / "reused", node, ipv4, index).returncode == 0
    ipv4, index, _skip = NODES["node1"]
    assert lay(tmp_path / "fresh", "node1", ipv4, index).returncode == 0
    assert snapshot(tmp_path / "reused") == snapshot(tmp_path / "fresh")


@pytest.mark.parametrize(
    ("ipv4", "index", "extra", "message"),
    [
        ("192.168.100.10", 1, [], "index"),
        ("192.168.100.10", 0, [], "index"),
        ("192.168.100.10", -3, [], "index"),
        ("192.168.100.10", 251, [], "index"),
        ("192.168.100.256", 3, [], "IPv4"),
        ("192.168.100", 3, [], "IPv4"),
        ("192.168.100.010", 3, [], "IPv4"),
        ("fe80::1", 3, [], "IPv4"),
        ("not-an-address", 3, [], "IPv4"),
        ("0.0.0.0", 3, [], "IPv4"),  # noqa: S104 - an input, nothing binds
        ("224.0.0.1", 3, [], "IPv4"),
        ("192.168.100.10", 3, ["--fabric-netdev", "eth0"], "netdev"),
        ("192.168.100.10", 3, ["--node", ""], "node"),
    ],
)
def test_rejects_bad_input_without_touching_tree(tmp_path, ipv4, index, extra, message):
    assert lay(tmp_path, "node0", "192.168.100.10", 3).returncode == 0
    before = snapshot(tmp_path)
    result = lay(tmp_path, "node0", ipv4, index, *extra)
    assert result.returncode != 0
    assert "error" in result.stderr
    assert message in result.stderr
    assert snapshot(tmp_path) == before


def test_rejects_non_integer_index(tmp_path):
    result = lay(tmp_path, "node0", "192.168.100.10", "three")
    assert result.returncode != 0
    assert not (tmp_path / "class").exists()


def test_main_is_importable(gid_tree, tmp_path, capsys):
    argv = [
        "--root",
        str(tmp_path),
        "--node",
        "node1",
        "--fabric-ipv4",
        "192.168.100.11",
        "--fabric-gid-index",
        "4",
    ]
    assert gid_tree.main(argv) == 0
    assert "index 4" in capsys.readouterr().out
    assert gid_tree.main([*argv[:-1], "1"]) == 2
    assert "2..250" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("mac", "gid"),  # pairs seen in show_gids_sample3 (Mellanox OUI 08:c0:eb, 0c:42:a1)
    [
        ("08c0eb3dca54", "fe80:0000:0000:0000:0ac0:ebff:fe3d:ca54"),
        ("0c42a1a494a8", "fe80:0000:0000:0000:0e42:a1ff:fea4:94a8"),
    ],
)
def test_link_local_gid_is_eui64(gid_tree, mac, gid):
    assert gid_tree.link_local_gid(bytes.fromhex(mac)) == gid


@pytest.mark.parametrize(
    ("ipv4", "gid"),
    [
        ("10.110.0.33", "0000:0000:0000:0000:0000:ffff:0a6e:0021"),
        ("192.168.100.14", "0000:0000:0000:0000:0000:ffff:c0a8:640e"),
    ],
)
def test_ipv4_gid(gid_tree, ipv4, gid):
    assert gid_tree.ipv4_gid(ipv4) == gid


def test_macs_are_deterministic_unicast_local(gid_tree):
    mac = gid_tree.derive_mac("node0", "rocep1s0f1")
    assert mac == gid_tree.derive_mac("node0", "rocep1s0f1")
    assert mac != gid_tree.derive_mac("node1", "rocep1s0f1")
    assert len(mac) == 6
    assert mac[0] & 0x03 == 0x02  # unicast, locally administered


def test_refuses_real_sysfs(gid_tree):
    tables = gid_tree.build_tables("node0", "enp1s0f1np1", "192.168.100.10", 3)
    with pytest.raises(ValueError, match="/sys"):
        gid_tree.write_tree(Path("/sys"), tables, "rocep1s0f1")
