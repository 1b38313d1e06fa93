"""playbooks/report.yml on the converged lab: read-only, and each role's `report` entry point
prints what that role set up on each node (the fabric's GID, the cache's checkpoint, the
engine's boot facts), as the converge's own facts say."""

from __future__ import annotations

from conftest import ENGINES, MODEL, ROOT, inspect, run_playbook, task_facts

REPORT = ROOT / "playbooks" / "report.yml"
FABRIC_FACTS_TASK = "Set this node's fabric facts and engine environment"


def _printed(run, task):
    """The lines a debug task printed, per host."""
    lines = {}
    for event in run.events_data:
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_ok" and data.get("task") == task:
            lines[data["host"]] = data["res"]["msg"]
    return lines


def _printed_items(run, task):
    """The lines a looped debug task printed, per host, one list per item in loop order."""
    lines = {}
    for event in run.events_data:
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_ok" and data.get("task") == task:
            lines[data["host"]] = [item["msg"] for item in data["res"]["results"]]
    return lines


def test_the_report_prints_what_each_role_set_up_and_changes_nothing(converged, tmp_path):
    run = run_playbook(REPORT, tmp_path)
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 0

    place = _printed(run, "Print the node's place in the cluster")
    assert place["node0"] == ["role: head", "platform: lab"]
    assert place["node1"] == ["role: worker", "platform: lab"]

    halves = _printed_items(run, "Print each half of the fabric port")
    fabric = _printed(run, "Print the node's fabric facts")
    for node, facts in task_facts(converged, FABRIC_FACTS_TASK).items():
        node_facts = facts["fabric_node"]
        assert len(halves[node]) == len(node_facts["rails"]) == 2
        for lines, rail in zip(halves[node], node_facts["rails"], strict=True):
            assert lines[0].startswith(f"fabric interface {rail['interface']}: up, mtu 9000")
            assert rail["ipv4"] in lines[0]
            assert lines[1] == (
                f"RDMA device {rail['rdma_device']} port {rail['rdma_port']}, "
                f"RoCE v2 IPv4 GID index {rail['gid_index']} (from show_gids)"
            )
        devices = ",".join(f"{r['rdma_device']}:{r['rdma_port']}" for r in node_facts["rails"])
        assert f"NCCL_IB_HCA=={devices}" in fabric[node][1]

    caches = _printed(run, "Print the node's cache facts")
    for node in ("node0", "node1"):
        assert caches[node][0].startswith(f"checkpoint models--{MODEL.replace('/', '--')} at ")
        assert caches[node][0].endswith("complete: True")

    engines = _printed(run, "Print the engine's boot facts")
    for node, name in ENGINES.items():
        image = inspect(name)["Image"]
        assert engines[node][0].startswith(f"engine running ({image}), vLLM ")
        assert engines[node][-1] == "errors: none"
    assert engines["node0"][0].endswith(" of 2, ready: True")
