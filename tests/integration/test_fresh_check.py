"""Check mode on fresh nodes: reports the changes, makes none."""

from __future__ import annotations

import pytest
from conftest import NODE_CONTAINERS, SITE, node_has_file, run_playbook


@pytest.mark.fresh_lab
def test_check_mode_on_fresh_nodes_reports_changes_and_makes_none(fresh_lab, tmp_path):
    run = run_playbook(SITE, tmp_path, check=True)
    assert run.status == "successful", run.failure_messages
    assert run.stats["changed"].get("node0", 0) > 0
    assert run.stats["changed"].get("node1", 0) > 0
    assert any("the engine's plan needs the fabric facts" in msg for msg in run.debug_messages)
    for node in NODE_CONTAINERS:
        assert not node_has_file(node, "/etc/netplan/60-gb10-fabric.yaml")
        assert not node_has_file(node, "/etc/gb10-serving/fabric.env")
        assert not node_has_file(node, f"/var/lib/gb10-lab/{node}/huggingface")
        assert not node_has_file(node, "/etc/gb10-serving/vllm-secret.env")
