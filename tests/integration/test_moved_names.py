"""Every name and path a user may choose, moved, in one check-mode run of site.yml.

inventories/moved_names.yml, layered over the lab's inventory, puts the nodes in other head
and worker groups (node1 the head this time), and moves the engine's environment files, the
firewall's rules file and unit, the engine containers' names, restart policy and log
options, the cache's mount and owner; it also turns HF_HUB_OFFLINE off, reads the GID table
from sysfs, pings five times, leaves out the runtime check, pins a commit no cache holds,
launches the engines through Ray on another port and drops an API user (bob).
The run is in check mode with --diff: what each moved value does is read from what the run
says it would write (the templates' destinations and text, the cache's owner) and start (the
engine plan the start task hands to Docker as it is), and nothing changes on the nodes or the
controller. The converge's run, at the lab's values, is the control: each assertion fails on
the values it would give.
"""

from __future__ import annotations

import hashlib
import shlex

import pytest
import yaml
from conftest import (
    CLIENTS,
    ENGINE_PLAN_TASK,
    HERE,
    LAB_INVENTORY,
    LAB_VARS,
    MODEL,
    NODE_CONTAINERS,
    REPORTS,
    ROOT,
    SITE,
    engines_state,
    inspect,
    node_has_file,
    node_sh,
    run_playbook,
    task_facts,
)

MOVED = HERE / "inventories" / "moved_names.yml"
MOVED_INVENTORY = yaml.safe_load(MOVED.read_text(encoding="utf-8"))["gb10_cluster"]
MOVED_VARS = MOVED_INVENTORY["vars"]
HEAD = next(iter(MOVED_INVENTORY["children"][MOVED_VARS["vllm_head_group"]]["hosts"]))
WORKER = next(iter(MOVED_INVENTORY["children"][MOVED_VARS["vllm_worker_group"]]["hosts"]))
MOVED_HOSTVARS = {
    node: values
    for group in MOVED_INVENTORY["children"].values()
    for node, values in group["hosts"].items()
}
REVISION = MOVED_HOSTVARS[HEAD]["node_model_revision"]
# The nodes whose firewall the moved inventory leaves on, and those it leaves alone.
FIREWALLED = sorted(n for n in NODE_CONTAINERS if MOVED_HOSTVARS[n].get("firewall_enabled", True))
UNFIREWALLED = sorted(set(NODE_CONTAINERS) - set(FIREWALLED))
LAB_HOSTS = yaml.safe_load((LAB_INVENTORY / "hosts.yml").read_text(encoding="utf-8"))


def role_default(role: str, name: str):
    defaults = ROOT / "roles" / role / "defaults" / "main.yml"
    return yaml.safe_load(defaults.read_text(encoding="utf-8"))[name]


# What a run at the lab's values writes on a node: none of it may change (the API key file
# and the keys file exist on the head only; node1, the moved head, has neither).
WATCHED = (
    role_default("fabric", "fabric_env_file"),
    role_default("node", "node_env_file"),
    role_default("firewall", "firewall_rules_file"),
    f"/etc/systemd/system/{role_default('firewall', 'firewall_unit_name')}.service",
    "/etc/gb10-serving/vllm-secret.env",
    LAB_VARS["vllm_engine_keys_file"],
)
MOVED_UNIT = f"/etc/systemd/system/{MOVED_VARS['firewall_unit_name']}.service"
MOVED_FILES = (
    MOVED_VARS["fabric_env_file"],
    MOVED_VARS["node_env_file"],
    MOVED_VARS["firewall_rules_file"],
    MOVED_UNIT,
)
PLAN_TASK = ENGINE_PLAN_TASK
FABRIC_FACTS_TASK = "Set this node's fabric facts and engine environment"
PING_TASK = "Ping every peer on every half at full MTU without fragmenting"
RUNTIME_TASK = "Ask the Docker engine about itself"
NODE_ENGINE_TASK = "Hand the node's engine settings to the vllm role"


def fabric_ip(node: str) -> str:
    for group in LAB_HOSTS["gb10_cluster"]["children"].values():
        if node in group["hosts"]:
            return group["hosts"][node]["fabric_address"].split("/")[0]
    raise KeyError(node)


def container_name(node: str) -> str:
    return MOVED_VARS["vllm_container_name"].replace("{{ inventory_hostname }}", node)


def results(run, task: str) -> dict[str, dict]:
    """The result of ``task`` on each host that ran it (its runner_on_ok events)."""
    found = {}
    for event in run.events_data:
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_ok" and data.get("task") == task:
            found[data["host"]] = data["res"]
    return found


def ran(run, task: str) -> bool:
    """Whether any event of the run names ``task`` (started, skipped or done)."""
    return any(event.get("event_data", {}).get("task") == task for event in run.events_data)


def written(run, task: str) -> dict[str, tuple[str, str]]:
    """Per host, where a template task would write and the text it would write (--diff)."""
    found = {}
    for host, res in results(run, task).items():
        assert res["changed"], (task, host)
        dest = res["invocation"]["module_args"]["dest"]
        found[host] = (dest, res["diff"][0]["after"])
    return found


def node_state(node: str, cache_dir: str) -> str:
    """The watched files' digests (or their absence) and the cache's owner, on ``node``."""
    paths = [shlex.quote(path.replace("{{ inventory_hostname }}", node)) for path in WATCHED]
    script = " ; ".join(
        [f"if [ -e {path} ]; then sha256sum {path}; else echo absent {path}; fi" for path in paths]
        + [f"stat -c '%n %u:%g' {shlex.quote(cache_dir)}"]
    )
    return node_sh(node, script)


def controller_state() -> dict[str, str]:
    """Every client file (keys among them) and report on the controller: its digest."""
    files = [*CLIENTS.rglob("*"), *REPORTS.glob("*-*/bench.json")]
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(files)
        if path.is_file()
    }


@pytest.fixture(scope="module")
def moved(converged, tmp_path_factory):
    """The converge's run (the control), the moved check run, and the state around it."""
    cache_dirs = {
        node: facts["node_engine"]["hf_cache_dir"]
        for node, facts in task_facts(converged, NODE_ENGINE_TASK).items()
    }
    before = {
        "engines": engines_state(),
        "nodes": {node: node_state(node, cache_dirs[node]) for node in NODE_CONTAINERS},
        "controller": controller_state(),
    }
    run = run_playbook(
        SITE, tmp_path_factory.mktemp("moved"), inventories=(LAB_INVENTORY, MOVED), check=True
    )
    after = {
        "engines": engines_state(),
        "nodes": {node: node_state(node, cache_dirs[node]) for node in NODE_CONTAINERS},
        "controller": controller_state(),
    }
    return {"control": converged, "run": run, "before": before, "after": after}


def test_the_check_run_passes_and_changes_nothing(moved):
    run = moved["run"]
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") > 0  # it says it would change things, and does none of them
    assert moved["after"] == moved["before"]
    for node in NODE_CONTAINERS:
        for path in (*MOVED_FILES, "/etc/gb10-moved"):
            assert not node_has_file(node, path), (node, path)
        assert inspect(container_name(node)) is None


def test_node1_heads_the_moved_groups_through_ray_on_its_port(moved):
    # vllm_head_group and vllm_worker_group: the lab's own groups, which still hold node0 as
    # the head and node1 as the worker, made the control's plan (vLLM's own launch); the
    # moved groups swap them, and vllm_distributed_backend ray launches them through Ray on
    # vllm_ray_port.
    control = task_facts(moved["control"], PLAN_TASK)
    for node, rank in ((WORKER, "0"), (HEAD, "1")):
        command = control[node]["__vllm_node"]["spec"]["command"]
        assert command[command.index("--node-rank") + 1] == rank
        assert command[command.index("--master-addr") + 1] == fabric_ip(WORKER)
    assert "--headless" in control[HEAD]["__vllm_node"]["spec"]["command"]
    plans = task_facts(moved["run"], PLAN_TASK)
    head = plans[HEAD]["__vllm_node"]["spec"]["command"]
    worker = plans[WORKER]["__vllm_node"]["spec"]["command"]
    port = str(MOVED_VARS["vllm_ray_port"])
    assert head[:2] == ["sh", "-c"]
    assert "ray start --head" in head[2]
    assert head[3:5] == [port, "2"]
    assert head[5:7] == ["vllm", "serve"]
    assert head[-2:] == ["--distributed-executor-backend", "ray"]
    assert "--nnodes" not in head
    assert worker == [
        "ray",
        "start",
        "--block",
        "--disable-usage-stats",
        f"--address={fabric_ip(HEAD)}:{port}",
        f"--node-ip-address={fabric_ip(WORKER)}",
    ]


def test_the_engines_are_planned_under_the_moved_names(moved):
    # What "Start the engines in the order the launch needs" hands to Docker, as it is.
    control = task_facts(moved["control"], PLAN_TASK)
    plans = task_facts(moved["run"], PLAN_TASK)
    engine = task_facts(moved["control"], NODE_ENGINE_TASK)
    mount = MOVED_VARS["node_hf_cache_mount"]
    for node in NODE_CONTAINERS:
        plan = plans[node]["__vllm_node"]
        spec = plan["spec"]
        assert plan["container"] == container_name(node)
        assert spec["restart_policy"] == MOVED_VARS["vllm_restart_policy"]
        assert spec["log_options"] == MOVED_VARS["vllm_log_options"]
        assert (
            spec["user"] == f"{MOVED_VARS['node_container_uid']}:{MOVED_VARS['node_container_gid']}"
        )
        assert spec["volumes"][0] == f"{engine[node]['node_engine']['hf_cache_dir']}:{mount}"
        assert spec["env"]["HF_HOME"] == mount
        for name in ("TRITON_CACHE_DIR", "VLLM_CACHE_DIR", "XDG_CACHE_HOME"):
            assert spec["env"][name].startswith(mount + "/"), name
        # vllm_hf_offline false: no HF_HUB_OFFLINE, which the lab's (the default, true) sets.
        assert "HF_HUB_OFFLINE" not in spec["env"]
        assert control[node]["__vllm_node"]["spec"]["env"]["HF_HUB_OFFLINE"] == "1"
        assert control[node]["__vllm_node"]["container"] != plan["container"]
    # The run looked for the engines under their moved names, found none, and says so.
    said = "\n".join(moved["run"].debug_messages)
    assert "Check mode: this run would restart the engine on every node" in said
    for node in NODE_CONTAINERS:
        assert f"{node}: no engine container" in said


def test_the_files_would_be_written_at_the_moved_paths(moved):
    run = moved["run"]
    unit, rules_file = MOVED_VARS["firewall_unit_name"], MOVED_VARS["firewall_rules_file"]
    fabric = written(run, "Render the engine's fabric environment")
    node_env = written(run, "Render the engine's cache environment")
    rules = written(run, "Write the rules")
    units = written(run, "Write the unit that loads the rules at boot")
    for node in NODE_CONTAINERS:
        dest, text = fabric[node]
        assert dest == MOVED_VARS["fabric_env_file"]
        assert f"VLLM_HOST_IP={fabric_ip(node)}" in text.splitlines()
        dest, text = node_env[node]
        assert dest == MOVED_VARS["node_env_file"]
        assert f"HF_HOME={MOVED_VARS['node_hf_cache_mount']}" in text.splitlines()
        assert f"owned by UID {MOVED_VARS['node_container_uid']}" in text
    assert sorted(rules) == sorted(units) == FIREWALLED
    for node in FIREWALLED:
        dest, text = rules[node]
        assert dest == rules_file
        assert f"Loaded by {unit}.service" in text
        # The engine's ports follow vllm_ray_port: only the peer may reach it.
        (engine_ports,) = [
            line.split("{")[1].split("}")[0].replace(",", " ").split()
            for line in text.splitlines()
            if line.strip().startswith("tcp dport {") and line.endswith("reject with tcp reset")
        ]
        assert str(MOVED_VARS["vllm_ray_port"]) in engine_ports
        dest, text = units[node]
        assert dest == MOVED_UNIT
        assert f"ExecStart=/usr/sbin/nft -f {rules_file}" in text.splitlines()


def test_the_firewall_is_left_alone_where_it_is_disabled(moved):
    # firewall_enabled false on node1: neither its rules nor its live table are looked at
    # (the control did both on every node), while node0's firewall is done as always.
    assert UNFIREWALLED
    for task in ("Write the rules", "Look for the live table"):
        assert sorted(results(moved["control"], task)) == sorted(NODE_CONTAINERS)
        assert sorted(results(moved["run"], task)) == FIREWALLED


def test_the_cache_would_go_to_the_moved_owner(moved):
    caches = results(moved["run"], "Create the Hugging Face cache for the container UID")
    for node in NODE_CONTAINERS:
        res = caches[node]
        assert res["changed"]
        assert res["diff"]["after"]["owner"] == MOVED_VARS["node_container_uid"]
        assert res["diff"]["after"]["group"] == MOVED_VARS["node_container_gid"]
        assert res["diff"]["before"]["owner"] != MOVED_VARS["node_container_uid"]


def pinged(res: dict) -> str:
    """How many pings the ping task's commands send (their -c; one command per peer)."""
    counts = set()
    for item in res["results"]:
        command = item["cmd"] if isinstance(item["cmd"], list) else shlex.split(item["cmd"])
        counts.add(command[command.index("-c") + 1])
    (count,) = counts
    return count


def test_the_gid_table_source_and_the_ping_count_are_the_inventory_s(moved):
    control = task_facts(moved["control"], FABRIC_FACTS_TASK)
    facts = task_facts(moved["run"], FABRIC_FACTS_TASK)
    control_pings, pings = results(moved["control"], PING_TASK), results(moved["run"], PING_TASK)
    count = str(MOVED_VARS["fabric_ping_count"])
    for node in NODE_CONTAINERS:
        assert facts[node]["fabric_node"]["gid_source"] == MOVED_VARS["fabric_gid_source"]
        assert control[node]["fabric_node"]["gid_source"] != MOVED_VARS["fabric_gid_source"]
        # The same GID either way: the lab's show_gids stand-in reads the same sysfs tree.
        assert facts[node]["fabric_node"]["gid_index"] == control[node]["fabric_node"]["gid_index"]
        assert pinged(pings[node]) == count
        assert pinged(control_pings[node]) != count


def test_the_runtime_check_is_left_out(moved):
    assert ran(moved["control"], RUNTIME_TASK)
    assert not ran(moved["run"], RUNTIME_TASK)


def test_the_pinned_revision_is_looked_for(moved):
    # The lab's main resolves to the lab model's commit; the pinned commit is in no cache, so
    # check mode says a real run would fetch it (and the engine would serve no --revision yet).
    commits = task_facts(moved["control"], "Set the checkpoint commit the engine will serve")
    said = "\n".join(moved["run"].debug_messages)
    for node in NODE_CONTAINERS:
        assert commits[node]["node_model_commit"] != REVISION
        assert (
            f"Check mode: {MODEL}@{REVISION} is not in the cache on {node} yet; a real run would"
            " fetch it"
        ) in said
    control = task_facts(moved["control"], PLAN_TASK)
    plans = task_facts(moved["run"], PLAN_TASK)
    assert "--revision" in control[HEAD]["__vllm_node"]["spec"]["command"]
    assert "--revision" not in plans[HEAD]["__vllm_node"]["spec"]["command"]


def test_a_user_no_longer_listed_would_be_removed_and_is_kept(moved):
    # (No "API users removed" among the restart's reasons here: that compares with the
    # running head's engine, and the moved head, node1, runs none under the moved name.
    # test_lifecycle.py's removal says it, for real.)
    said = " ".join(" ".join(moved["run"].debug_messages).split())
    assert (
        "Check mode: this run would remove the client directory and key of the API users"
        " no longer in vllm_api_users: bob"
    ) in said
    # Nothing on the controller changed (moved["after"] == moved["before"] holds every
    # client file): bob's key is still there.
    assert (CLIENTS / "bob" / "api-key").exists()
