"""Check mode on fresh nodes: reports the changes, makes none."""

from __future__ import annotations

import pytest
from conftest import NODE_CONTAINERS, SITE, node_has_file, run_playbook

# The fabric's netplan file and renderer, moved: on fresh nodes the fabric waits for a real
# run anyway, so this run shows them at no cost (on a converged lab, moving them would make
# the fabric wait there too, and with it the engine's plan that other check runs read).
MOVED_NETPLAN = {
    "fabric_netplan_file": "/etc/netplan/70-gb10-moved-fabric.yaml",
    "fabric_netplan_renderer": "NetworkManager",
}


@pytest.mark.fresh_lab
def test_check_mode_on_fresh_nodes_reports_changes_and_makes_none(fresh_lab, tmp_path):
    run = run_playbook(SITE, tmp_path, check=True, extravars=MOVED_NETPLAN)
    assert run.status == "successful", run.failure_messages
    assert run.stats["changed"].get("node0", 0) > 0
    assert run.stats["changed"].get("node1", 0) > 0
    assert any("the engine's plan needs the fabric facts" in msg for msg in run.debug_messages)
    netplan = {
        event["event_data"]["host"]: event["event_data"]["res"]
        for event in run.events_data
        if event.get("event") == "runner_on_ok"
        and event["event_data"].get("task") == "Write the netplan file for the fabric port"
    }
    assert sorted(netplan) == sorted(NODE_CONTAINERS)
    for res in netplan.values():
        # What the run would write (--diff), and where: the moved file, the moved renderer.
        assert res["changed"]
        assert res["invocation"]["module_args"]["dest"] == MOVED_NETPLAN["fabric_netplan_file"]
        renderer = f"renderer: {MOVED_NETPLAN['fabric_netplan_renderer']}"
        assert renderer in [line.strip() for line in res["diff"][0]["after"].splitlines()]
    for node in NODE_CONTAINERS:
        assert not node_has_file(node, MOVED_NETPLAN["fabric_netplan_file"])
        assert not node_has_file(node, "/etc/netplan/60-gb10-fabric.yaml")
        assert not node_has_file(node, "/etc/gb10-serving/fabric.env")
        assert not node_has_file(node, f"/var/lib/gb10-lab/{node}/huggingface")
        assert not node_has_file(node, "/etc/gb10-serving/vllm-secret.env")
