# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module gb10.serving.roce_gid_info: the glue around the parser.

A fake-exit pattern: exit_json/fail_json raise, carrying the result. GID tables come from
trees laid by the lab's gid_tree.py, read directly (source=sysfs) or through the lab's
show_gids stand-in put on PATH (source=show_gids), and from real captured show_gids output.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gb10.serving.plugins.modules import roce_gid_info
from ansible_collections.gb10.serving.tests.unit.plugins.modules.utils import (
    module_exit,
    module_fail,
)

COLLECTION = Path(__file__).resolve().parents[4]
GID_TREE = COLLECTION / "lab" / "rdma" / "gid_tree.py"
SHOW_GIDS = COLLECTION / "lab" / "node" / "rootfs" / "usr" / "local" / "sbin" / "show_gids"
FIXTURES = COLLECTION / "tests" / "unit" / "plugins" / "module_utils" / "fixtures" / "rdma"
SAMPLE2 = FIXTURES / "show_gids_sample2_dgx_spark_gb10_rocep1s0f0.txt"  # GB10, two IPv4 ports

# The lab cluster (lab/labctl.py): fabric IPv4 and RoCE v2 IPv4 GID index per node.
LAB_NODES = {"node0": ("192.168.100.10", 3), "node1": ("192.168.100.11", 4)}
FABRIC_NETDEV = "enp1s0f1np1"
SELECTED_KEYS = {"device", "port", "index", "netdev", "ipv4", "gid"}
ROW_KEYS = {"device", "port", "index", "gid", "ipv4", "version", "netdev"}


@pytest.fixture(autouse=True)
def no_lab_root_in_env(monkeypatch):
    monkeypatch.delenv("SHOW_GIDS_SYSFS_ROOT", raising=False)


def succeed(args):
    """Run the module with args; it must call exit_json. Return the result."""
    return module_exit(roce_gid_info.main, args)


def fail(args):
    """Run the module with args; it must call fail_json. Return the result."""
    return module_fail(roce_gid_info.main, args)


@pytest.fixture(scope="module")
def lab_trees(tmp_path_factory):
    """sysfs roots of both lab nodes, laid once with the gid_tree.py CLI."""
    base = tmp_path_factory.mktemp("lab")
    trees = {}
    for node, (ipv4, index) in LAB_NODES.items():
        root = base / node
        cmd = [sys.executable, str(GID_TREE), "--root", str(root), "--node", node]
        cmd += ["--fabric-netdev", FABRIC_NETDEV, "--fabric-ipv4", ipv4]
        cmd += ["--fabric-gid-index", str(index)]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        trees[node] = str(root)
    return trees


@pytest.fixture
def stand_in_on_path(tmp_path, monkeypatch):
    """Put the lab's show_gids stand-in on PATH (run by this interpreter); return its path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "show_gids"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SHOW_GIDS}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return str(wrapper)


@pytest.fixture
def no_show_gids(monkeypatch):
    """Make get_bin_path('show_gids') find nothing, whatever the host has."""
    real = AnsibleModule.get_bin_path

    def get_bin_path(self, arg, *args, **kwargs):
        return None if arg == "show_gids" else real(self, arg, *args, **kwargs)

    monkeypatch.setattr(AnsibleModule, "get_bin_path", get_bin_path)


@pytest.fixture
def fake_show_gids(monkeypatch):
    """A show_gids 'found' at /usr/sbin whose run is faked; calls are recorded.

    Set ``.output`` to (rc, stdout, stderr) before running the module.
    """

    class Fake:
        output = (0, SAMPLE2.read_text(encoding="utf-8"), "")
        calls = []

    def get_bin_path(self, arg, *args, **kwargs):
        return "/usr/sbin/show_gids" if arg == "show_gids" else None

    def run_command(self, args, **kwargs):
        Fake.calls.append((args, kwargs))
        return Fake.output

    monkeypatch.setattr(AnsibleModule, "get_bin_path", get_bin_path)
    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    return Fake


@pytest.fixture
def run_command_spy(monkeypatch):
    """Record run_command calls, then run them for real."""
    calls = []
    real = AnsibleModule.run_command

    def run_command(self, args, **kwargs):
        calls.append((args, kwargs))
        return real(self, args, **kwargs)

    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    return calls


def assert_lab_selection(result, node):
    ipv4, index = LAB_NODES[node]
    assert result["changed"] is False
    assert result["selected"] == {
        "device": "rocep1s0f1",
        "port": 1,
        "index": index,
        "netdev": FABRIC_NETDEV,
        "ipv4": ipv4,
        "gid": "0000:0000:0000:0000:0000:ffff:c0a8:%04x" % (0x6400 + int(ipv4.split(".")[-1])),
    }
    assert set(result["selected"]) == SELECTED_KEYS
    assert result["selection_error"] is None
    assert all(set(row) == ROW_KEYS for row in result["rows"])


# --- source=sysfs -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "filters"),
    [
        pytest.param("node0", {"netdev": FABRIC_NETDEV, "ipv4": "192.168.100.10"}, id="lab-node0"),
        pytest.param("node1", {"netdev": FABRIC_NETDEV, "ipv4": "192.168.100.11"}, id="lab-node1"),
        pytest.param("node0", {"netdev": FABRIC_NETDEV}, id="lab-node0-netdev-only"),
        pytest.param("node1", {"ipv4": "192.168.100.11"}, id="lab-node1-ipv4-only"),
        pytest.param("node1", {}, id="lab-node1-no-filter"),
    ],
)
def test_sysfs_selects_the_lab_index(lab_trees, node, filters):
    result = succeed({"source": "sysfs", "sysfs_root": lab_trees[node], **filters})
    assert result["source"] == "sysfs"
    assert len(result["rows"]) == {"node0": 10, "node1": 12}[node]
    assert_lab_selection(result, node)


def test_sysfs_missing_root_fails(tmp_path):
    result = fail({"source": "sysfs", "sysfs_root": str(tmp_path / "nowhere")})
    assert "no RDMA devices under" in result["msg"]
    assert result["rows"] == []
    assert result["source"] == "sysfs"


# --- source=show_gids, with the lab stand-in ----------------------------------------------


@pytest.mark.parametrize("node", list(LAB_NODES), ids=["lab-node0", "lab-node1"])
def test_show_gids_stand_in_selects_the_lab_index(
    lab_trees, stand_in_on_path, run_command_spy, node
):
    ipv4 = LAB_NODES[node][0]
    args = {"sysfs_root": lab_trees[node], "netdev": FABRIC_NETDEV, "ipv4": ipv4}
    result = succeed({"source": "show_gids", **args})
    assert result["source"] == "show_gids"
    assert_lab_selection(result, node)
    # The stand-in found its tree only through SHOW_GIDS_SYSFS_ROOT.
    assert run_command_spy == [
        ([stand_in_on_path], {"environ_update": {"SHOW_GIDS_SYSFS_ROOT": lab_trees[node]}})
    ]
    # Same rows as reading sysfs directly.
    assert result["rows"] == succeed({"source": "sysfs", **args})["rows"]


def test_auto_prefers_show_gids_when_found(lab_trees, stand_in_on_path):
    result = succeed({"sysfs_root": lab_trees["node1"], "netdev": FABRIC_NETDEV})
    assert result["source"] == "show_gids"
    assert_lab_selection(result, "node1")


def test_auto_falls_back_to_sysfs_without_show_gids(lab_trees, no_show_gids):
    result = succeed({"source": "auto", "sysfs_root": lab_trees["node0"]})
    assert result["source"] == "sysfs"
    assert_lab_selection(result, "node0")


def test_source_show_gids_missing_fails(lab_trees, no_show_gids):
    result = fail({"source": "show_gids", "sysfs_root": lab_trees["node0"]})
    assert "show_gids is not on the target's PATH" in result["msg"]
    assert "source=sysfs" in result["msg"]
    assert result["rows"] == []


# --- source=show_gids, faked run (real captured output) -----------------------------------


@pytest.mark.parametrize(
    ("sysfs_root", "environ"),
    [
        pytest.param("/sys", {}, id="real-sys"),
        pytest.param("/sys/", {}, id="real-sys-trailing-slash"),
        pytest.param(
            "/var/lib/gb10-lab/sys",
            {"SHOW_GIDS_SYSFS_ROOT": "/var/lib/gb10-lab/sys"},
            id="lab-root",
        ),
    ],
)
def test_show_gids_environment_only_for_a_lab_root(fake_show_gids, sysfs_root, environ):
    result = succeed({"sysfs_root": sysfs_root, "netdev": "enp1s0f0np0"})
    assert fake_show_gids.calls == [(["/usr/sbin/show_gids"], {"environ_update": environ})]
    assert result["source"] == "show_gids"
    assert result["selected"]["index"] == 3
    assert result["selected"]["device"] == "rocep1s0f0"


def test_gb10_sample2_several_matches_fail(fake_show_gids):
    result = fail({})
    assert "2 RoCE v2 IPv4 GIDs match" in result["msg"]
    assert "select by both netdev and ipv4" in result["msg"]
    assert len(result["rows"]) == 12
    assert result["source"] == "show_gids"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        pytest.param((1, "", "show_gids: oops\n"), "exited with 1: show_gids: oops", id="rc-1"),
        pytest.param((0, "garbage\n", ""), "no show_gids table found", id="garbage"),
        pytest.param(
            (0, SAMPLE2.read_text(encoding="utf-8").replace("=12", "=11"), ""),
            "n_gids_found says 11",
            id="gb10-sample2-count-mismatch",
        ),
    ],
)
def test_show_gids_bad_output_fails(fake_show_gids, output, expected):
    fake_show_gids.output = output
    result = fail({"netdev": "enp1s0f0np0"})
    assert expected in result["msg"]
    assert result["rows"] == []


# --- failures and require_selection -------------------------------------------------------


def test_no_match_fails_with_actionable_message(lab_trees):
    result = fail({"source": "sysfs", "sysfs_root": lab_trees["node0"], "netdev": "enp1s0f0np0"})
    msg = result["msg"]
    assert "no RoCE v2 IPv4 GID matches netdev=enp1s0f0np0" in msg
    assert "rocep1s0f1 port 1 index 3 ipv4 192.168.100.10 netdev enp1s0f1np1" in msg
    assert "is the cable in the port of enp1s0f0np0" in msg
    assert "(ip -br addr)" in msg
    assert "(rdma link / ibdev2netdev)" in msg
    assert len(result["rows"]) == 10
    assert result["source"] == "sysfs"


def test_require_selection_false_returns_rows_and_null(lab_trees):
    args = {"source": "sysfs", "sysfs_root": lab_trees["node1"], "ipv4": "192.168.100.99"}
    result = succeed({**args, "require_selection": False})
    assert result["changed"] is False
    assert result["selected"] is None
    assert "no RoCE v2 IPv4 GID matches ipv4=192.168.100.99" in result["selection_error"]
    assert len(result["rows"]) == 12


def test_require_selection_false_still_selects(lab_trees):
    args = {"source": "sysfs", "sysfs_root": lab_trees["node1"], "require_selection": False}
    assert_lab_selection(succeed(args), "node1")


def test_require_selection_false_still_fails_on_unreadable_table(tmp_path):
    result = fail({"source": "sysfs", "sysfs_root": str(tmp_path), "require_selection": False})
    assert "no RDMA devices under" in result["msg"]


def test_bad_ipv4_option_fails(lab_trees):
    result = fail({"source": "sysfs", "sysfs_root": lab_trees["node0"], "ipv4": "192.168.100"})
    assert "not a dotted-quad IPv4 address" in result["msg"]


def test_bad_source_choice_fails():
    result = fail({"source": "ibv_devinfo"})
    assert "source" in result["msg"]
    assert "auto, show_gids, sysfs" in result["msg"]


# --- check mode ---------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["sysfs", "show_gids"])
def test_check_mode_reads_and_reports_no_change(lab_trees, stand_in_on_path, source):
    args = {"source": source, "sysfs_root": lab_trees["node1"], "netdev": FABRIC_NETDEV}
    checked = succeed({**args, "_ansible_check_mode": True})
    assert checked == succeed(args)
    assert_lab_selection(checked, "node1")
