# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bad-input matrix, proven in milliseconds.

One row per case of the lab's matrix (``tests/integration/test_bad_input.py``, which keeps a
few representatives of it): same id, role, kind, fragments, extra vars and inventory. Each
row runs preflight the way ``playbooks/preflight.yml`` runs it, over the lab's values
(``inventory/lab``, the roles' defaults) with the case's inventory and extra vars on top:
role after role, the argument spec of the role's entry point (Ansible's own
``ArgumentSpecValidator`` over the role's ``meta/argument_specs.yml``, as
``validate_argument_spec`` runs it), then the role's checks in task order, each on the first
node (``run_once``) or on every node, as its task runs. The first failure is what the play
says: it must come from the row's check (``proven_by``) and say every fragment.

The bench's and the sweep's bad inputs (``tests/integration/test_bench.py``) are rows of
their own, through the bench role's preflight and ``playbooks/sweep.yml``'s checks.
What needs a real node (one that does not answer) stays in the lab; its row says why.
"""

from __future__ import annotations

import ast
import copy
import functools
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.gb10.serving.plugins.module_utils._api_access import (
    api_user_problems,
    cidr_problems,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_common import BenchReportError
from ansible_collections.gb10.serving.plugins.module_utils._bench_inputs import check_bench_inputs
from ansible_collections.gb10.serving.plugins.module_utils._bench_sweep import expand_sweep
from ansible_collections.gb10.serving.plugins.module_utils._fabric_plan import plan_fabric
from ansible_collections.gb10.serving.plugins.module_utils._firewall import firewall_plan
from ansible_collections.gb10.serving.plugins.module_utils._preflight import CHECKS
from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import (
    RecipeError,
    command_argv,
    merge_recipe,
    recipe_problems,
    render_command,
)

ROOT = Path(__file__).resolve().parents[4]
LAB_MATRIX = ROOT / "tests" / "integration" / "test_bad_input.py"
ROLES = ("cluster", "preflight", "fabric", "node", "firewall", "vllm", "bench")
KINDS = {"type", "range", "choice", "format", "combination"}
UNCHANGED = " Nothing has been changed."


@functools.cache
def _read_yaml(relative):
    with open(ROOT / relative, encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def _yaml(relative):
    """A file of the collection, parsed once per test run; each caller gets its own copy."""
    return copy.deepcopy(_read_yaml(relative))


# --- the lab ---------------------------------------------------------------------------------

# The inventories the lab's matrix layers over the lab's (tests/integration/inventories/),
# copied: a case's inventory is part of the case.
OVERLAYS = {
    "two_heads.yml": """
        gb10_cluster:
          children:
            gb10_head:
              hosts:
                node0:
                node1:
    """,
    "stray_host.yml": """
        gb10_cluster:
          hosts:
            node2:
              ansible_host: gb10-lab-node1
    """,
    "mixed_platform.yml": """
        gb10_cluster:
          children:
            gb10_workers:
              hosts:
                node1:
                  gb10_platform: spark
    """,
    "fabric_no_interface.yml": """
        gb10_cluster:
          children:
            gb10_workers:
              hosts:
                node1:
                  fabric_interface: ""
    """,
    "fabric_two_subnets.yml": """
        gb10_cluster:
          children:
            gb10_workers:
              hosts:
                node1:
                  fabric_address: 192.168.102.11/24
    """,
    "three_nodes.yml": """
        gb10_cluster:
          children:
            gb10_workers:
              hosts:
                node2:
                  ansible_host: gb10-lab-node2
                  # inventory_dir is this file's directory for node2, three levels down.
                  ansible_ssh_common_args: "-F {{ inventory_dir }}/../../../.cache/lab/ssh/config"
                  fabric_interface: enp1s0f1np1
                  fabric_address: 192.168.100.12/24
                  fabric_twin_address: 192.168.101.12/24
    """,
    "unreachable_worker.yml": """
        gb10_cluster:
          children:
            gb10_workers:
              hosts:
                node2:
                  ansible_host: gb10-lab-node-missing
                  preflight_connect_timeout: 3
    """,
}

# What the lab's templated values come to on the lab (the files hold the templates), in an
# order where each one reads only rendered values.
CHECKOUT = "/home/dev/gb10-serving"
TEMPLATED = {
    "gb10_container_prefix": lambda v: f"gb10-lab-{v['inventory_hostname']}-",
    "gb10_engine_network_mode": lambda v: f"container:{v['ansible_host']}",
    "gb10_engine_ipc_mode": lambda v: f"container:{v['ansible_host']}",
    "node_hf_cache_dir": lambda v: f"/var/lib/gb10-lab/{v['inventory_hostname']}/huggingface",
    "vllm_engine_keys_file": lambda v: (
        f"/var/lib/gb10-lab/{v['inventory_hostname']}/secrets/vllm-api-keys.yaml"
    ),
    "vllm_api_key_file": lambda v: f"{CHECKOUT}/.cache/lab/vllm-api-key",
    "vllm_client_config_dir": lambda v: f"{CHECKOUT}/.cache/lab/clients",
    "vllm_log_dir": lambda v: f"{CHECKOUT}/reports/vllm-logs",
    "bench_report_dir": lambda v: f"{CHECKOUT}/reports",
    "node_hf_token_file": lambda v: f"/var/lib/gb10-lab/{v['inventory_hostname']}/secrets/hf-token",
    "ansible_ssh_common_args": lambda v: f"-F {CHECKOUT}/.cache/lab/ssh/config",
    "vllm_container_name": lambda v: f"{v['gb10_container_prefix']}vllm",
}


def _templated(value):
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, list):
        return any(_templated(item) for item in value)
    return False


def _walk(tree, groups, hostvars, parents=()):
    """A YAML inventory's groups (with their children's hosts) and host variables."""
    for group, body in (tree or {}).items():
        body = body or {}
        names = (*parents, group)
        for host, variables in (body.get("hosts") or {}).items():
            for name in names:
                if host not in groups.setdefault(name, []):
                    groups[name].append(host)
            hostvars.setdefault(host, {}).update(variables or {})
        _walk(body.get("children"), groups, hostvars, names)


@dataclass
class Cluster:
    """The preflight play's view: its nodes in order, the groups, each node's variables."""

    hosts: list
    groups: dict
    variables: dict

    @property
    def first(self):
        return self.variables[self.hosts[0]]


def lab_cluster(extravars=None, inventory=None):
    """The lab with an inventory overlay and extra vars on top, as Ansible layers them."""
    groups, hostvars = {}, {}
    _walk(_yaml("inventory/lab/hosts.yml"), groups, hostvars)
    if inventory:
        _walk(yaml.safe_load(textwrap.dedent(OVERLAYS[inventory])), groups, hostvars)
    defaults = {}
    for role in ROLES:
        defaults.update(_yaml(f"roles/{role}/defaults/main.yml"))
    group_vars = _yaml("inventory/lab/group_vars/gb10_cluster.yml")
    variables = {}
    for host in groups["gb10_cluster"]:
        merged = {**defaults, **group_vars, **hostvars[host], **copy.deepcopy(extravars or {})}
        merged.update(inventory_hostname=host, ansible_host=merged.get("ansible_host", host))
        templated = {name for name, value in merged.items() if _templated(value)}
        assert templated <= set(TEMPLATED), f"render {sorted(templated - set(TEMPLATED))} here"
        for name in [name for name in TEMPLATED if name in templated]:
            merged[name] = TEMPLATED[name](merged)
        variables[host] = merged
    return Cluster(hosts=list(groups["gb10_cluster"]), groups=groups, variables=variables)


# --- preflight, role after role, check after check -----------------------------------------


@dataclass(frozen=True)
class Step:
    name: str  # the check: a CHECKS name, a plugin's function, or argument_spec
    each: bool  # on every node (else run_once: the first node only)
    run: object  # (cluster, variables of the node) -> problems: a message, or None


def argument_spec_step(role, entry):
    options = _yaml(f"roles/{role}/meta/argument_specs.yml")["argument_specs"][entry]["options"]

    def run(_cluster, v):
        # As ansible.builtin.validate_argument_spec: the node's variables the spec names.
        given = {name: v[name] for name in options if name in v}
        result = ArgumentSpecValidator(options).validate(given, validate_role_argument_spec=True)
        if result.error_messages:
            return "Validation of arguments failed:\n" + "\n".join(result.error_messages)
        return None

    return Step("argument_spec", True, run)


def check(name, arguments, each=False, suffix=UNCHANGED, when=None):
    """A task of gb10.serving.preflight_problems: CHECKS[name] over ``arguments(cluster, v)``."""

    def run(cluster, v):
        if when is not None and not when(v):
            return None
        problems = CHECKS[name](**arguments(cluster, v))
        return " ".join(problems) + suffix if problems else None

    return Step(name, each, run)


def _inventory(cluster, v):
    return {
        "groups": cluster.groups,
        "head_group": v["vllm_head_group"],
        "worker_group": v["vllm_worker_group"],
    }


def _fabric(cluster):
    return plan_fabric(
        {
            host: {
                name: cluster.variables[host].get(name)
                for name in (
                    "fabric_interface",
                    "fabric_address",
                    "fabric_mtu",
                    "fabric_rails",
                    "fabric_twin_interface",
                    "fabric_twin_address",
                )
            }
            for host in cluster.hosts
        }
    )


def _recipe(v):
    return merge_recipe(v["vllm_recipe"], v["vllm_recipe_overrides"])


def _nodes(cluster, v):
    return cluster.groups[v["vllm_head_group"]][:1] + cluster.groups.get(v["vllm_worker_group"], [])


def _fabric_step(cluster, _v):
    errors = _fabric(cluster).errors
    return " ".join(errors) + UNCHANGED if errors else None


def _firewall_step(cluster, v):
    if not v["firewall_enabled"]:
        return None

    # roles/firewall/vars/main.yml: the role's own variable where set, else the cluster's.
    def own_or(name, cluster_value):
        return cluster_value if v[name] is None else v[name]

    own = v["firewall_api_allowed_cidrs"] is not None
    variable = "firewall_api_allowed_cidrs" if own else "vllm_allowed_cidrs"
    plan = firewall_plan(
        _fabric(cluster).to_dict(),
        v["inventory_hostname"],
        own_or("firewall_api_allowed_cidrs", v["vllm_allowed_cidrs"]),
        own_or("firewall_api_port", v["vllm_port"]),
        own_or("firewall_engine_ports", [v["vllm_master_port"], v["vllm_ray_port"]]),
        variable,
    )
    return " ".join(plan["errors"]) + UNCHANGED if plan["errors"] else None


def _recipe_step(_cluster, v):
    try:
        problems = recipe_problems(_recipe(v))
    except RecipeError as exc:
        return f"merge_recipe: {exc}"
    if problems:
        return (
            "vllm_recipe (with vllm_recipe_overrides) is not usable: "
            + " ".join(problems)
            + UNCHANGED
        )
    return None


def _argv(v):
    return command_argv(
        render_command(_recipe(v), {"host": v["vllm_bind_address"], "port": v["vllm_port"]})
    )


def _render_step(_cluster, v):
    try:
        _argv(v)
    except RecipeError as exc:
        return f"render_recipe_command: {exc}"
    return None


def _users_step(_cluster, v):
    problems = api_user_problems(v["vllm_api_users"], v["vllm_api_key"])
    return " ".join(problems) + UNCHANGED if problems else None


def _cidrs_step(_cluster, v):
    problems = cidr_problems(v["vllm_allowed_cidrs"])
    return " ".join(problems) + UNCHANGED if problems else None


def _bench_step(_cluster, v):
    problems = check_bench_inputs(
        v["bench_concurrency"], _recipe(v).get("defaults", {}).get("max_num_seqs")
    )
    return " ".join(problems) + UNCHANGED if problems else None


def _sweep_step(_cluster, v):
    if not v["bench_sweep_variants"]:
        return None
    try:
        expand_sweep(v["bench_sweep_variants"], _recipe(v), v["bench_concurrency"])
    except BenchReportError as exc:
        return f"expand_sweep: {exc}"
    return None


ROLE_FLAGS = _yaml("roles/vllm/vars/main.yml")["__vllm_role_flags"]

# playbooks/preflight.yml: each role's argument spec, then its checks in task order.
PREFLIGHT = (
    (
        "preflight",
        [
            # The cluster role, a dependency of every role, checks its options first.
            argument_spec_step("cluster", "main"),
            argument_spec_step("preflight", "main"),
            check("inventory_head", _inventory, suffix=""),
            check(
                "inventory_node",
                lambda c, v: {"host": v["inventory_hostname"], **_inventory(c, v)},
                each=True,
                suffix="",
            ),
            check("inventory_overlap", _inventory, suffix=""),
            check(
                "inventory_platform",
                lambda c, v: {"platforms": [c.variables[h]["gb10_platform"] for h in c.hosts]},
                suffix="",
            ),
            # reachability.yml: wait_for_connection, which needs real nodes (the lab's matrix).
        ],
    ),
    (
        "fabric",
        [argument_spec_step("fabric", "preflight"), Step("fabric_plan", False, _fabric_step)],
    ),
    (
        "node",
        [
            argument_spec_step("node", "preflight"),
            check(
                "node_ids",
                lambda c, v: {k: v[k] for k in ("node_container_uid", "node_container_gid")},
                each=True,
            ),
            check(
                "node_cache_dirs",
                lambda c, v: {k: v[k] for k in ("node_hf_cache_dir", "node_hf_cache_mount")},
                each=True,
            ),
            check(
                "node_token_file",
                lambda c, v: {k: v[k] for k in ("node_hf_token_file", "node_hf_cache_dir")},
                each=True,
            ),
            check("node_model", lambda c, v: {"node_model": v["node_model"]}, each=True),
            check(
                "node_revision",
                lambda c, v: {"node_model_revision": v["node_model_revision"]},
                each=True,
            ),
            check(
                "node_checkpoints",
                lambda c, v: {
                    "checkpoints": [
                        [c.variables[h]["node_model"], c.variables[h]["node_model_revision"]]
                        for h in c.hosts
                    ]
                },
            ),
        ],
    ),
    (
        "firewall",
        [
            argument_spec_step("firewall", "preflight"),
            Step("firewall_plan", True, _firewall_step),
            # Then the nft command's presence on the node: not a variable.
        ],
    ),
    (
        "vllm",
        [
            argument_spec_step("vllm", "preflight"),
            Step("recipe_problems", False, _recipe_step),
            Step("render_recipe_command", True, _render_step),
            check(
                "engine_role_flags",
                lambda c, v: {
                    "argv": _argv(v),
                    "role_flags": ROLE_FLAGS,
                    "api_users": v["vllm_api_users"],
                },
            ),
            check("engine_fit", lambda c, v: {"recipe": _recipe(v), "nodes": _nodes(c, v)}),
            check(
                "engine_model",
                lambda c, v: {"recipe": _recipe(v), "node_model": v["node_model"]},
                each=True,
                when=lambda v: "node_model" in v,
            ),
            check(
                "engine_listen",
                lambda c, v: {
                    k: v[k]
                    for k in ("vllm_bind_address", "vllm_port", "vllm_master_port", "vllm_ray_port")
                },
            ),
            check(
                "engine_cluster_name",
                # No default but the inventory's directory name (inventory/lab).
                lambda c, v: {"gb10_cluster_name": v.get("gb10_cluster_name", "lab")},
            ),
            check(
                "engine_api_key",
                lambda c, v: {"vllm_api_key": v["vllm_api_key"]},
                when=lambda v: len(v["vllm_api_key"]) > 0,
            ),
            Step("api_user_problems", False, _users_step),
            check(
                "engine_clients",
                lambda c, v: {
                    k: v[k]
                    for k in ("vllm_api_host", "vllm_client_config_dir", "vllm_engine_keys_file")
                },
            ),
            Step("cidr_problems", False, _cidrs_step),
            check(
                "engine_wait",
                lambda c, v: {k: v[k] for k in ("vllm_ready_timeout", "vllm_ready_poll")},
            ),
        ],
    ),
    (
        "bench",
        [
            argument_spec_step("bench", "preflight"),
            Step("bench_input_problems", False, _bench_step),
            # Then the lengths (one Jinja condition each), the sweep's variants, how it ends.
            Step("expand_sweep", False, _sweep_step),
        ],
    ),
)


@dataclass(frozen=True)
class Failure:
    role: str
    check: str
    host: str
    message: str


def _run(cluster, roles):
    for role, steps in roles:
        for step in steps:
            for host in cluster.hosts if step.each else cluster.hosts[:1]:
                message = step.run(cluster, cluster.variables[host])
                if message:
                    return Failure(role, step.name, host, message)
    return None


def preflight_failure(extravars=None, inventory=None):
    """What playbooks/preflight.yml stops on first, or None when it passes."""
    return _run(lab_cluster(extravars, inventory), PREFLIGHT)


def sweep_failure(extravars=None):
    """What playbooks/sweep.yml stops on before it redeploys anything, or None."""
    cluster = lab_cluster(extravars)
    v = cluster.first
    given = check(
        "sweep_variants",
        lambda c, v: {"bench_sweep_variants": v.get("bench_sweep_variants", [])},
    )
    failure = _run(cluster, [("sweep", [given])]) or _run(cluster, PREFLIGHT)
    if failure:
        return failure
    # Every variant's recipe through the vllm role's preflight, over the starting recipe.
    vllm = [steps for role, steps in PREFLIGHT if role == "vllm"]
    start = _recipe(v)
    for variant in expand_sweep(v["bench_sweep_variants"], start, v["bench_concurrency"]):
        for host in cluster.hosts:
            cluster.variables[host].update(
                vllm_recipe=start, vllm_recipe_overrides=variant["overrides"]
            )
        failure = _run(cluster, [("vllm", vllm[0])])
        if failure:
            return failure
    return None


# --- the matrix --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    role: str
    kind: str
    fragments: tuple[str, ...]
    extravars: dict = field(default_factory=dict)
    inventory: str | None = None  # an overlay of OVERLAYS, layered over the lab's inventory
    proven_by: str = ""  # the check that stops it: a CHECKS name, a plugin function, argument_spec
    lab_only: str = ""  # why only the lab can prove it


CASES = {
    # preflight: the inventory's shape
    "unknown-platform": Case(
        "preflight",
        "choice",
        ("gb10_platform", "spark, lab", "dgx"),
        {"gb10_platform": "dgx"},
        proven_by="argument_spec",
    ),
    "two-heads": Case(
        "preflight",
        "combination",
        ("'gb10_head' must hold exactly one host", "it holds 2", "node0, node1"),
        inventory="two_heads.yml",
        proven_by="inventory_head",
    ),
    "no-head": Case(
        "preflight",
        "combination",
        ("'no_such_group' must hold exactly one host", "it holds 0"),
        {"vllm_head_group": "no_such_group"},
        proven_by="inventory_head",
    ),
    "unreachable-node": Case(
        "preflight",
        "combination",
        ("node2 (ansible_host=gb10-lab-node-missing", "did not answer", "Nothing has been changed"),
        inventory="unreachable_worker.yml",
        lab_only=(
            "needs a node that does not answer: the check is wait_for_connection's result on "
            "every node, collected before anything else runs there"
        ),
    ),
    "node-in-no-group": Case(
        "preflight",
        "combination",
        ("node2 is in neither 'gb10_head' nor 'gb10_workers'",),
        inventory="stray_host.yml",
        proven_by="inventory_node",
    ),
    "platforms-differ": Case(
        "preflight",
        "combination",
        ("gb10_platform differs between nodes (lab, spark)",),
        inventory="mixed_platform.yml",
        proven_by="inventory_platform",
    ),
    # fabric
    "fabric-missing-interface": Case(
        "fabric",
        "combination",
        ("fabric_interface is not set for node1",),
        inventory="fabric_no_interface.yml",
        proven_by="fabric_plan",
    ),
    "fabric-same-address": Case(
        "fabric",
        "combination",
        ("the address 192.168.100.10 is set on node0 (fabric_address) and node1 (fabric_address)",),
        {"fabric_address": "192.168.100.10/24"},
        proven_by="fabric_plan",
    ),
    "fabric-two-subnets": Case(
        "fabric",
        "combination",
        ("not in one subnet (node0 192.168.100.0/24, node1 192.168.102.0/24)",),
        inventory="fabric_two_subnets.yml",
        proven_by="fabric_plan",
    ),
    "fabric-twin-address-missing": Case(
        "fabric",
        "combination",
        ("fabric_twin_address is not set for node0", "or set fabric_rails: 1"),
        {"fabric_twin_address": ""},
        proven_by="fabric_plan",
    ),
    "fabric-rails-out-of-range": Case(
        "preflight",
        "choice",
        ("fabric_rails", "1, 2", "4"),
        {"fabric_rails": 4},
        proven_by="argument_spec",
    ),
    "fabric-mtu-out-of-range": Case(
        "fabric",
        "range",
        ("fabric_mtu 20000 on node0 is out of range 1280..9978",),
        {"fabric_mtu": 20000},
        proven_by="fabric_plan",
    ),
    "fabric-mtu-not-an-int": Case(
        "fabric", "type", ("fabric_mtu",), {"fabric_mtu": "jumbo"}, proven_by="argument_spec"
    ),
    "fabric-address-without-prefix": Case(
        "fabric",
        "format",
        ("has no prefix length",),
        {"fabric_address": "192.168.100.10"},
        proven_by="fabric_plan",
    ),
    "fabric-unknown-renderer": Case(
        "fabric",
        "choice",
        ("fabric_netplan_renderer", "networkd, NetworkManager"),
        {"fabric_netplan_renderer": "ifupdown"},
        proven_by="argument_spec",
    ),
    # node
    "node-uid-not-an-int": Case(
        "node",
        "type",
        ("node_container_uid",),
        {"node_container_uid": "abc"},
        proven_by="argument_spec",
    ),
    "node-gid-negative": Case(
        "node",
        "range",
        ("node_container_gid (-5)",),
        {"node_container_gid": -5},
        proven_by="node_ids",
    ),
    "node-relative-cache-dir": Case(
        "node",
        "format",
        ("node_hf_cache_dir ('relative/cache')", "absolute"),
        {"node_hf_cache_dir": "relative/cache"},
        proven_by="node_cache_dirs",
    ),
    "node-token-in-the-cache": Case(
        "node",
        "combination",
        ("node_hf_token_file (/var/lib/gb10-lab/node0/huggingface/token) lies in",),
        {"node_hf_token_file": "/var/lib/gb10-lab/node0/huggingface/token"},
        proven_by="node_token_file",
    ),
    "node-model-without-org": Case(
        "node",
        "format",
        ("node_model 'DeepSeek-V4-Flash-DSpark' is not a Hugging Face repository id",),
        {"node_model": "DeepSeek-V4-Flash-DSpark"},
        proven_by="node_model",
    ),
    "node-revision-with-space": Case(
        "node",
        "format",
        ("node_model_revision 'main branch'",),
        {"node_model_revision": "main branch"},
        proven_by="node_revision",
    ),
    # firewall
    "allowed-cidrs-empty": Case(
        "firewall",
        "range",
        ("vllm_allowed_cidrs is empty", "Nothing has been changed"),
        {"vllm_allowed_cidrs": []},
        proven_by="firewall_plan",
    ),
    "allowed-cidrs-not-a-network": Case(
        "firewall",
        "format",
        ("vllm_allowed_cidrs[1] is 'office'",),
        {"vllm_allowed_cidrs": ["10.219.0.1/32", "office"]},
        proven_by="firewall_plan",
    ),
    "allowed-cidrs-host-bits": Case(
        "firewall",
        "format",
        ("vllm_allowed_cidrs[0] is '10.219.0.1/24', which has host bits set", "10.219.0.0/24"),
        {"vllm_allowed_cidrs": ["10.219.0.1/24"]},
        proven_by="firewall_plan",
    ),
    "firewall-own-list-named": Case(
        "firewall",
        "type",
        ("firewall_api_allowed_cidrs is",),
        {"firewall_api_allowed_cidrs": "10.219.0.1/32"},
        proven_by="firewall_plan",
    ),
    "firewall-api-port-is-an-engine-port": Case(
        "firewall",
        "combination",
        ("firewall_api_port (29500) is also in firewall_engine_ports",),
        {"firewall_api_port": 29500},
        proven_by="firewall_plan",
    ),
    # vllm: the engine, its recipe and its keys
    "recipe-unknown-placeholder": Case(
        "vllm",
        "format",
        ("nope",),
        {"vllm_recipe_overrides": {"command": "vllm serve {model} --port {port} --x {nope}"}},
        proven_by="render_recipe_command",
    ),
    "recipe-tensor-parallel-above-nodes": Case(
        "vllm",
        "combination",
        ("tensor_parallel", "2 node(s)"),
        {"vllm_recipe_overrides": {"tensor_parallel": 4}},
        proven_by="engine_fit",
    ),
    "recipe-per-node-flag": Case(
        "vllm",
        "format",
        ("--node-rank", "vllm_recipe.command"),
        {"vllm_recipe_overrides": {"dtype": "bfloat16 --node-rank=1"}},
        proven_by="engine_role_flags",
    ),
    "recipe-model-not-the-cached-one": Case(
        "vllm",
        "combination",
        ("vllm_recipe.model", "node_model"),
        {"vllm_recipe_overrides": {"model": "org/other-model"}},
        proven_by="engine_model",
    ),
    "recipe-without-container": Case(
        "vllm",
        "type",
        ("container",),
        {"vllm_recipe_overrides": {"container": None}},
        proven_by="recipe_problems",
    ),
    "engine-backend-choice": Case(
        "vllm",
        "choice",
        ("vllm_distributed_backend",),
        {"vllm_distributed_backend": "slurm"},
        proven_by="argument_spec",
    ),
    "engine-keys-file-not-yaml": Case(
        "vllm",
        "format",
        ("vllm_engine_keys_file", ".yaml"),
        {"vllm_engine_keys_file": "/etc/gb10-serving/keys.txt"},
        proven_by="engine_clients",
    ),
    "cluster-name-a-path": Case(
        "vllm",
        "format",
        ("gb10_cluster_name", "(got ../blue)"),
        {"gb10_cluster_name": "../blue"},
        proven_by="engine_cluster_name",
    ),
    "service-key-short": Case(
        "vllm", "range", ("vllm_api_key",), {"vllm_api_key": "short"}, proven_by="engine_api_key"
    ),
    "api-user-bad-name": Case(
        "vllm",
        "format",
        ("vllm_api_users[0].name is 'Alice'", "lower-case letter"),
        {"vllm_api_users": [{"name": "Alice"}]},
        proven_by="api_user_problems",
    ),
    "api-user-twice": Case(
        "vllm",
        "combination",
        ("vllm_api_users names alice more than once",),
        {"vllm_api_users": [{"name": "alice"}, {"name": "alice"}]},
        proven_by="api_user_problems",
    ),
    "api-user-short-key": Case(
        "vllm",
        "range",
        ("vllm_api_users[0] (bob).key has 14 characters", "at least 32"),
        {"vllm_api_users": [{"name": "bob", "key": "short-key-0123"}]},
        proven_by="api_user_problems",
    ),
    "api-users-sharing-a-key": Case(
        "vllm",
        "combination",
        ("vllm_api_users[1] (bob).key is the same as vllm_api_users[0] (alice).key",),
        {"vllm_api_users": [{"name": "alice", "key": "k" * 40}, {"name": "bob", "key": "k" * 40}]},
        proven_by="api_user_problems",
    ),
    "api-user-with-the-service-key": Case(
        "vllm",
        "combination",
        ("vllm_api_users[0] (bob).key is the service key (vllm_api_key)",),
        {"vllm_api_key": "s" * 40, "vllm_api_users": [{"name": "bob", "key": "s" * 40}]},
        proven_by="api_user_problems",
    ),
    # The engine checks vllm_allowed_cidrs itself too (the firewall's own list pinned good).
    "engine-allowed-cidrs-checked": Case(
        "vllm",
        "format",
        ("vllm_allowed_cidrs[1] is 'lan', without a prefix length",),
        {"vllm_allowed_cidrs": ["10.0.0.0/8", "lan"], "firewall_api_allowed_cidrs": ["10.0.0.0/8"]},
        proven_by="cidr_problems",
    ),
}

UNIT_CASES = sorted(case_id for case_id, case in CASES.items() if not case.lab_only)


def test_the_lab_passes_preflight():
    """The positive control: the lab's own values give no problem anywhere."""
    assert preflight_failure() is None


# The recipe split three ways, as sparkrun's 3-node recipes do.
THREE_WAYS = {"vllm_recipe_overrides": {"tensor_parallel": 1, "pipeline_parallel": 3}}


def test_three_nodes_behind_a_switch_pass_preflight_with_a_recipe_for_three():
    """A third node on both fabric subnets, the recipe at tensor parallel 1 x pipeline
    parallel 3: every role's preflight passes; the lab's recipe (tensor parallel 2) does not."""
    assert preflight_failure(THREE_WAYS, "three_nodes.yml") is None
    failure = preflight_failure(None, "three_nodes.yml")
    assert (failure.role, failure.check) == ("vllm", "engine_fit")
    assert "tensor parallel 2 x pipeline parallel unset" in failure.message
    assert "the cluster has 3 node(s), one GPU each (node0, node1, node2)" in failure.message


@pytest.mark.parametrize("case_id", UNIT_CASES)
def test_bad_input_stops_preflight_in_its_role(case_id):
    case = CASES[case_id]
    failure = preflight_failure(case.extravars, case.inventory)
    assert failure is not None, "preflight let it through"
    assert (failure.role, failure.check) == (case.role, case.proven_by), failure.message
    for fragment in case.fragments:
        assert fragment in failure.message


def test_the_matrix_covers_every_role_and_kind():
    proven = [CASES[case_id] for case_id in UNIT_CASES]
    assert {case.role for case in proven} == {"preflight", "fabric", "node", "firewall", "vllm"}
    assert {case.kind for case in proven} == KINDS
    assert {case.kind for case in CASES.values()} == KINDS


def test_every_row_says_how_it_is_proven():
    steps = {step.name for _role, steps in PREFLIGHT for step in steps}
    for case_id, case in CASES.items():
        assert bool(case.proven_by) != bool(case.lab_only), case_id
        assert case.lab_only or case.proven_by in steps, case_id
        assert case.inventory is None or case.inventory in OVERLAYS, case_id


def _lab_case_ids():
    if not LAB_MATRIX.is_file():
        pytest.skip("no lab matrix in this tree")
    tree = ast.parse(LAB_MATRIX.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "CASES":
            return {key.value for key in node.value.keys}
    raise AssertionError("tests/integration/test_bad_input.py has no CASES")


def test_every_lab_case_has_its_row_and_lab_only_rows_stay_in_the_lab():
    lab = _lab_case_ids()
    assert lab <= set(CASES), sorted(lab - set(CASES))
    lab_only = {case_id for case_id, case in CASES.items() if case.lab_only}
    assert lab_only <= lab, sorted(lab_only - lab)


@pytest.mark.parametrize("name", sorted(OVERLAYS))
def test_the_overlays_are_the_lab_matrix_inventories(name):
    path = LAB_MATRIX.parent / "inventories" / name
    if not path.is_file():
        pytest.skip(f"the lab's matrix no longer has inventories/{name}")
    assert yaml.safe_load(textwrap.dedent(OVERLAYS[name])) == _yaml(path.relative_to(ROOT))


def test_the_lab_values_are_the_files_with_their_templates_rendered():
    cluster = lab_cluster()
    assert cluster.hosts == ["node0", "node1"]
    assert cluster.groups["gb10_head"] == ["node0"]
    assert cluster.groups["gb10_workers"] == ["node1"]
    for host, v in cluster.variables.items():
        assert not [name for name, value in v.items() if _templated(value)], host
    assert cluster.variables["node1"]["node_hf_cache_dir"] == "/var/lib/gb10-lab/node1/huggingface"
    assert cluster.first["vllm_allowed_cidrs"] == ["10.219.0.1/32"]
    assert cluster.first["firewall_api_allowed_cidrs"] is None
    assert cluster.first["vllm_container_name"] == "gb10-lab-node0-vllm"


# --- the bench's and the sweep's bad inputs (tests/integration/test_bench.py) -----------------

BENCH_CASES = {
    "bench-concurrency-empty": (
        preflight_failure,
        {"bench_concurrency": []},
        "bench_input_problems",
        ("bench_concurrency is empty",),
    ),
    "bench-concurrency-above-max-num-seqs": (
        preflight_failure,
        {"bench_concurrency": [1, 32]},
        "bench_input_problems",
        ("bench_concurrency 32 is above the recipe's max_num_seqs (16)",),
    ),
    "sweep-empty": (sweep_failure, {}, "sweep_variants", ("bench_sweep_variants is empty",)),
    "sweep-unknown-key": (
        sweep_failure,
        {"bench_sweep_variants": {"max_model_length": [256]}},
        "expand_sweep",
        ("did you mean 'max_model_len'",),
    ),
    "sweep-tensor-parallel-3": (
        sweep_failure,
        {"bench_sweep_variants": {"tensor_parallel": [2, 3]}},
        "engine_fit",
        ("tensor parallel 3", "the cluster has 2 node(s)"),
    ),
}


@pytest.mark.parametrize("case_id", sorted(BENCH_CASES))
def test_bad_bench_and_sweep_input_stops_before_anything_runs(case_id):
    stops, extravars, proven_by, fragments = BENCH_CASES[case_id]
    failure = stops(extravars)
    assert failure is not None, "let through"
    assert failure.check == proven_by, failure.message
    for fragment in fragments:
        assert fragment in failure.message


def test_a_good_sweep_passes_every_check():
    assert sweep_failure({"bench_sweep_variants": {"max_model_len": [256, 512]}}) is None
