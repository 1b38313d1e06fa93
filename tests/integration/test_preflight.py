"""Preflight: the whole cluster is checked before anything changes."""

from __future__ import annotations

import pytest
from conftest import (
    GUARD,
    MARKER,
    ROOT,
    node_has_file,
    remove_node_file,
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
