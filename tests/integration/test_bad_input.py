"""Bad input in the lab: a few representative cases per role prove that preflight stops the
play on every node before anything changes anywhere, with a message that names the variable.

Every check itself, each case of the full matrix (37 cases over five roles and five kinds),
is proven at the unit level in milliseconds:
tests/unit/plugins/module_utils/test_bad_input_matrix.py. What only the lab proves is kept
here: a real play stops before its first change, on every node, with the engines untouched,
for inventory-shaped input (two heads, two subnets), an unreachable node, and one case of
each role and kind.

Each case runs the guard playbook (playbooks/preflight.yml, then a play that leaves a
marker on every node) against the lab with one bad variable or inventory; the case passes
when the run failed, changed nothing, left no marker, and said every fragment. The kinds:
type (a value of the wrong type), range (a number or list out of bounds), choice (not one
of the allowed values), format (a string of the wrong shape), combination (each variable is
fine alone, not together). The bench and sweep inputs, which their own playbooks check before
anything is measured or redeployed, have a representative each in test_bench.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import yaml
from conftest import (
    HERE,
    LAB_INVENTORY,
    MARKER,
    ROOT,
    assert_stopped_before_any_change,
    engines_state,
    node_has_file,
    run_guarded,
)

INVENTORIES = HERE / "inventories"
PREFLIGHT_DEFAULTS = ROOT / "roles" / "preflight" / "defaults" / "main.yml"


@dataclass(frozen=True)
class Case:
    role: str
    kind: str
    fragments: tuple[str, ...]
    extravars: dict = field(default_factory=dict)
    inventory: str | None = None  # a file under inventories/, layered over the lab's
    silent: str | None = None  # a node that never answers: waited for its own timeout


CASES = {
    # preflight: the inventory's shape
    "unknown-platform": Case(
        "preflight", "choice", ("gb10_platform", "spark, lab", "dgx"), {"gb10_platform": "dgx"}
    ),
    "two-heads": Case(
        "preflight",
        "combination",
        ("'gb10_head' must hold exactly one host", "it holds 2", "node0, node1"),
        inventory="two_heads.yml",
    ),
    "unreachable-node": Case(
        "preflight",
        "combination",
        ("node2 (ansible_host=gb10-lab-node-missing", "did not answer", "Nothing has been changed"),
        inventory="unreachable_worker.yml",
        silent="node2",
    ),
    # fabric
    "fabric-two-subnets": Case(
        "fabric",
        "combination",
        ("not in one subnet (node0 192.168.100.0/24, node1 192.168.102.0/24)",),
        inventory="fabric_two_subnets.yml",
    ),
    "fabric-mtu-not-an-int": Case("fabric", "type", ("fabric_mtu",), {"fabric_mtu": "jumbo"}),
    # node
    "node-relative-cache-dir": Case(
        "node",
        "format",
        ("node_hf_cache_dir ('relative/cache')", "absolute"),
        {"node_hf_cache_dir": "relative/cache"},
    ),
    # firewall
    "allowed-cidrs-empty": Case(
        "firewall",
        "range",
        ("vllm_allowed_cidrs is empty", "Nothing has been changed"),
        {"vllm_allowed_cidrs": []},
    ),
    # vllm: the engine, its recipe and its keys
    "recipe-tensor-parallel-above-nodes": Case(
        "vllm",
        "combination",
        ("tensor_parallel", "2 node(s)"),
        {"vllm_recipe_overrides": {"tensor_parallel": 4}},
    ),
    "api-user-with-the-service-key": Case(
        "vllm",
        "combination",
        ("vllm_api_users[0] (bob).key is the service key (vllm_api_key)",),
        {"vllm_api_key": "s" * 40, "vllm_api_users": [{"name": "bob", "key": "s" * 40}]},
    ),
}


def test_the_guard_lets_a_good_cluster_through(tmp_path):
    """The harness itself: with good input the changing play runs on both nodes."""
    run = run_guarded(tmp_path)
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 2
    assert node_has_file("node0", MARKER)
    assert node_has_file("node1", MARKER)


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_bad_input_stops_before_any_change(converged, tmp_path, case_id):
    case = CASES[case_id]
    inventories = (LAB_INVENTORY,) + ((INVENTORIES / case.inventory,) if case.inventory else ())
    before = engines_state()
    run = run_guarded(tmp_path, extravars=case.extravars, inventories=inventories)
    assert_stopped_before_any_change(run, case.fragments)
    assert engines_state() == before
    if case.silent:
        assert_waited_for_its_timeout(run, case)


def host_var(inventory: str, host: str, name: str):
    """A host variable an inventories/ file gives (hosts under gb10_cluster's children)."""
    groups = yaml.safe_load((INVENTORIES / inventory).read_text(encoding="utf-8"))
    for group in groups["gb10_cluster"]["children"].values():
        if host in (group.get("hosts") or {}):
            return group["hosts"][host][name]
    raise KeyError(f"{inventory} gives {host} no {name}")


def assert_waited_for_its_timeout(run, case: Case) -> None:
    """preflight_connect_timeout, set for the silent node, is how long it was waited for:
    at least that, and less than the role's default (which the other nodes keep)."""
    timeout = host_var(case.inventory, case.silent, "preflight_connect_timeout")
    default = yaml.safe_load(PREFLIGHT_DEFAULTS.read_text(encoding="utf-8"))[
        "preflight_connect_timeout"
    ]
    waited = [
        event["event_data"]["res"]["elapsed"]
        for event in run.events_data
        if event.get("event") == "runner_on_ok"
        and event["event_data"].get("task") == "Wait for a connection to the node"
        and event["event_data"].get("host") == case.silent
    ]
    assert len(waited) == 1, waited
    assert timeout <= waited[0] < default


def test_the_representatives_cover_every_role_and_kind():
    assert {case.role for case in CASES.values()} == {
        "preflight",
        "fabric",
        "node",
        "firewall",
        "vllm",
    }
    assert {case.kind for case in CASES.values()} == {
        "type",
        "range",
        "choice",
        "format",
        "combination",
    }
