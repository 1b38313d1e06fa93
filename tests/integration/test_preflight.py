"""Preflight: the whole cluster is checked before anything changes."""

from __future__ import annotations

import pytest
from conftest import (
    GUARD,
    HERE,
    LAB_INVENTORY,
    MARKER,
    ROOT,
    assert_stopped_before_any_change,
    node_has_file,
    remove_node_file,
    run_guarded,
    run_playbook,
)

SITE = ROOT / "site.yml"


@pytest.fixture(autouse=True)
def no_marker():
    for node in ("node0", "node1"):
        remove_node_file(node, MARKER)


def test_site_converges_on_the_lab_without_changes(tmp_path):
    run = run_playbook(SITE, tmp_path)
    assert run.status == "successful", run.failure_messages
    assert run.count("failures") == 0
    assert run.count("dark") == 0
    assert set(run.stats["ok"]) == {"node0", "node1"}
    assert run.count("changed") == 0


def test_site_check_mode_changes_nothing(tmp_path):
    run = run_playbook(SITE, tmp_path, check=True)
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 0


def test_guard_lets_a_good_cluster_through(tmp_path):
    """The harness itself: with good input the changing play runs on both nodes."""
    run = run_playbook(GUARD, tmp_path)
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 2
    assert node_has_file("node0", MARKER)
    assert node_has_file("node1", MARKER)


BAD_INPUT = [
    pytest.param(
        {"extravars": {"gb10_platform": "dgx"}},
        ["gb10_platform", "spark, lab", "dgx"],
        id="unknown-platform",
    ),
    pytest.param(
        {"inventories": (LAB_INVENTORY, HERE / "inventories" / "two_heads.yml")},
        ["'gb10_head' must hold exactly one host", "it holds 2", "node0, node1"],
        id="two-heads",
    ),
    pytest.param(
        {"extravars": {"preflight_head_group": "no_such_group"}},
        ["'no_such_group' must hold exactly one host", "it holds 0"],
        id="no-head",
    ),
    pytest.param(
        {"inventories": (LAB_INVENTORY, HERE / "inventories" / "unreachable_worker.yml")},
        ["node2 (ansible_host=gb10-lab-node-missing", "did not answer", "Nothing has been changed"],
        id="unreachable-node",
    ),
    pytest.param(
        {"inventories": (LAB_INVENTORY, HERE / "inventories" / "stray_host.yml")},
        ["node2 is in neither 'gb10_head' nor 'gb10_workers'"],
        id="node-in-no-group",
    ),
]


@pytest.mark.parametrize(("kwargs", "expected"), BAD_INPUT)
def test_bad_input_fails_before_any_change(tmp_path, kwargs, expected):
    assert_stopped_before_any_change(run_guarded(tmp_path, **kwargs), expected)


def test_nodes_must_agree_on_platform(tmp_path):
    inventory = tmp_path / "mixed.yml"
    inventory.write_text(
        "gb10_cluster:\n  children:\n    gb10_workers:\n      hosts:\n"
        "        node1:\n          gb10_platform: spark\n"
    )
    run = run_guarded(tmp_path, inventories=(LAB_INVENTORY, inventory))
    assert_stopped_before_any_change(run, ["gb10_platform differs between nodes (lab, spark)"])
