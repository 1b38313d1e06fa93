"""Bad input, as a matrix: every case fails in preflight, before anything changes anywhere,
with a message that names the variable (and, where there is one, the fix).

Each case runs the guard playbook (playbooks/preflight.yml, then a play that leaves a
marker on every node) against the lab with one bad variable or inventory; the case passes
when the run failed, changed nothing, left no marker, and said every fragment. The kinds:
type (a value of the wrong type), range (a number or list out of bounds), choice (not one
of the allowed values), format (a string of the wrong shape), combination (each variable is
fine alone, not together). The bench and sweep inputs, which their own playbooks check before
anything is measured or redeployed, are in test_bench.py and test_sweep.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from conftest import (
    HERE,
    LAB_INVENTORY,
    MARKER,
    assert_stopped_before_any_change,
    node_has_file,
    run_guarded,
)
from test_vllm import engines_state

INVENTORIES = HERE / "inventories"


@dataclass(frozen=True)
class Case:
    role: str
    kind: str
    fragments: tuple[str, ...]
    extravars: dict = field(default_factory=dict)
    inventory: str | None = None  # a file under inventories/, layered over the lab's


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
    "no-head": Case(
        "preflight",
        "combination",
        ("'no_such_group' must hold exactly one host", "it holds 0"),
        {"preflight_head_group": "no_such_group"},
    ),
    "unreachable-node": Case(
        "preflight",
        "combination",
        ("node2 (ansible_host=gb10-lab-node-missing", "did not answer", "Nothing has been changed"),
        inventory="unreachable_worker.yml",
    ),
    "node-in-no-group": Case(
        "preflight",
        "combination",
        ("node2 is in neither 'gb10_head' nor 'gb10_workers'",),
        inventory="stray_host.yml",
    ),
    "platforms-differ": Case(
        "preflight",
        "combination",
        ("gb10_platform differs between nodes (lab, spark)",),
        inventory="mixed_platform.yml",
    ),
    # fabric
    "fabric-missing-interface": Case(
        "fabric",
        "combination",
        ("fabric_interface is not set for node1",),
        inventory="fabric_no_interface.yml",
    ),
    "fabric-same-address": Case(
        "fabric",
        "combination",
        ("fabric_address 192.168.100.10 is set on node0 and node1",),
        {"fabric_address": "192.168.100.10/24"},
    ),
    "fabric-two-subnets": Case(
        "fabric",
        "combination",
        ("not in one subnet (node0 192.168.100.0/24, node1 192.168.101.0/24)",),
        inventory="fabric_two_subnets.yml",
    ),
    "fabric-mtu-out-of-range": Case(
        "fabric",
        "range",
        ("fabric_mtu 20000 on node0 is out of range 1280..9978",),
        {"fabric_mtu": 20000},
    ),
    "fabric-mtu-not-an-int": Case("fabric", "type", ("fabric_mtu",), {"fabric_mtu": "jumbo"}),
    "fabric-address-without-prefix": Case(
        "fabric", "format", ("has no prefix length",), {"fabric_address": "192.168.100.10"}
    ),
    "fabric-unknown-renderer": Case(
        "fabric",
        "choice",
        ("fabric_netplan_renderer", "networkd, NetworkManager"),
        {"fabric_netplan_renderer": "ifupdown"},
    ),
    # node
    "node-uid-not-an-int": Case(
        "node", "type", ("node_container_uid",), {"node_container_uid": "abc"}
    ),
    "node-gid-negative": Case(
        "node", "range", ("node_container_gid (-5)",), {"node_container_gid": -5}
    ),
    "node-relative-cache-dir": Case(
        "node",
        "format",
        ("node_hf_cache_dir ('relative/cache')", "absolute"),
        {"node_hf_cache_dir": "relative/cache"},
    ),
    "node-model-without-org": Case(
        "node",
        "format",
        ("node_model 'DeepSeek-V4-Flash-DSpark' is not a Hugging Face repository id",),
        {"node_model": "DeepSeek-V4-Flash-DSpark"},
    ),
    "node-revision-with-space": Case(
        "node",
        "format",
        ("node_model_revision 'main branch'",),
        {"node_model_revision": "main branch"},
    ),
    # firewall
    "allowed-cidrs-empty": Case(
        "firewall",
        "range",
        ("vllm_allowed_cidrs is empty", "Nothing has been changed"),
        {"vllm_allowed_cidrs": []},
    ),
    "allowed-cidrs-not-a-network": Case(
        "firewall",
        "format",
        ("vllm_allowed_cidrs[1] is 'office'",),
        {"vllm_allowed_cidrs": ["10.219.0.1/32", "office"]},
    ),
    "allowed-cidrs-host-bits": Case(
        "firewall",
        "format",
        ("vllm_allowed_cidrs[0] is '10.219.0.1/24', which has host bits set", "10.219.0.0/24"),
        {"vllm_allowed_cidrs": ["10.219.0.1/24"]},
    ),
    "firewall-own-list-named": Case(
        "firewall",
        "type",
        ("firewall_api_allowed_cidrs is",),
        {"firewall_api_allowed_cidrs": "10.219.0.1/32"},
    ),
    "firewall-api-port-is-an-engine-port": Case(
        "firewall",
        "combination",
        ("firewall_api_port (29500) is also in firewall_engine_ports",),
        {"firewall_api_port": 29500},
    ),
    # vllm: the engine, its recipe and its keys
    "recipe-unknown-placeholder": Case(
        "vllm",
        "format",
        ("nope",),
        {"vllm_recipe_overrides": {"command": "vllm serve {model} --port {port} --x {nope}"}},
    ),
    "recipe-tensor-parallel-above-nodes": Case(
        "vllm",
        "combination",
        ("tensor_parallel", "2 node(s)"),
        {"vllm_recipe_overrides": {"tensor_parallel": 4}},
    ),
    "recipe-per-node-flag": Case(
        "vllm",
        "format",
        ("--node-rank", "vllm_recipe.command"),
        {"vllm_recipe_overrides": {"dtype": "bfloat16 --node-rank=1"}},
    ),
    "recipe-model-not-the-cached-one": Case(
        "vllm",
        "combination",
        ("vllm_recipe.model", "node_model"),
        {"vllm_recipe_overrides": {"model": "org/other-model"}},
    ),
    "recipe-without-container": Case(
        "vllm", "type", ("container",), {"vllm_recipe_overrides": {"container": None}}
    ),
    "engine-backend-choice": Case(
        "vllm",
        "choice",
        ("vllm_distributed_backend",),
        {"vllm_distributed_backend": "slurm"},
    ),
    "engine-keys-file-not-yaml": Case(
        "vllm",
        "format",
        ("vllm_engine_keys_file", ".yaml"),
        {"vllm_engine_keys_file": "/etc/gb10-serving/keys.txt"},
    ),
    "service-key-short": Case("vllm", "range", ("vllm_api_key",), {"vllm_api_key": "short"}),
    "api-user-bad-name": Case(
        "vllm",
        "format",
        ("vllm_api_users[0].name is 'Alice'", "lower-case letter"),
        {"vllm_api_users": [{"name": "Alice"}]},
    ),
    "api-user-twice": Case(
        "vllm",
        "combination",
        ("vllm_api_users names alice more than once",),
        {"vllm_api_users": [{"name": "alice"}, {"name": "alice"}]},
    ),
    "api-user-short-key": Case(
        "vllm",
        "range",
        ("vllm_api_users[0] (bob).key has 14 characters", "at least 32"),
        {"vllm_api_users": [{"name": "bob", "key": "short-key-0123"}]},
    ),
    "api-users-sharing-a-key": Case(
        "vllm",
        "combination",
        ("vllm_api_users[1] (bob).key is the same as vllm_api_users[0] (alice).key",),
        {"vllm_api_users": [{"name": "alice", "key": "k" * 40}, {"name": "bob", "key": "k" * 40}]},
    ),
    "api-user-with-the-service-key": Case(
        "vllm",
        "combination",
        ("vllm_api_users[0] (bob).key is the service key (vllm_api_key)",),
        {"vllm_api_key": "s" * 40, "vllm_api_users": [{"name": "bob", "key": "s" * 40}]},
    ),
    # The engine checks vllm_allowed_cidrs itself too (the firewall's own list pinned good).
    "engine-allowed-cidrs-checked": Case(
        "vllm",
        "format",
        ("vllm_allowed_cidrs[1] is 'lan', without a prefix length",),
        {"vllm_allowed_cidrs": ["10.0.0.0/8", "lan"], "firewall_api_allowed_cidrs": ["10.0.0.0/8"]},
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


def test_the_matrix_covers_every_role_and_kind():
    assert len(CASES) >= 20
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
