"""Drive gb10.serving's playbooks against the lab through ansible-runner.

The lab (two simulated GB10 nodes) must be up: `scripts/test.sh integration` brings it up
and down around these tests; `make lab-up` does it by hand.

One converged lab serves the whole session (the `converged` fixture runs site.yml once). Tests
that only read it share it; a test that breaks something puts it back itself. The order of
the tests is set here, not by file names: tests marked `fresh_lab` (which need nodes that no
run has touched; their fixture purges the lab when it finds it used) run first, tests marked
`disruptive` (which restart engines) run last, so that the read-only tests all share the one
cold boot of the engines.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import ansible_runner
import pytest
import requests
import yaml

ROOT = Path(__file__).resolve().parents[2]
LAB_INVENTORY = ROOT / "inventory" / "lab"
# The lab inventory's cluster-wide variables, as written (nothing templated).
LAB_VARS = yaml.safe_load((LAB_INVENTORY / "group_vars" / "gb10_cluster.yml").read_text())
HERE = Path(__file__).resolve().parent
NODE_CONTAINERS = {"node0": "gb10-lab-node0", "node1": "gb10-lab-node1"}
# Preflight, then a play that leaves MARKER on every node: what "before any change" means.
GUARD = HERE / "playbooks" / "preflight_guard.yml"
MARKER = "/tmp/gb10-preflight-passed"  # noqa: S108 (a path inside the lab nodes)
SITE = ROOT / "site.yml"
KEY_FILE = ROOT / ".cache" / "lab" / "vllm-api-key"
REPORTS = ROOT / "reports"
LOG_DIR = REPORTS / "vllm-logs"
CLIENTS = ROOT / ".cache" / "lab" / "clients"
MODEL = "gb10-lab/tiny-llama"
ENGINES = {node: f"gb10-lab-{node}-vllm" for node in NODE_CONTAINERS}
# What each stage leaves on a node: a lab no run has touched has none of them.
FIRST_CHANGES = ("/etc/netplan/60-gb10-fabric.yaml", "/etc/gb10-serving/fabric.env")


@dataclass
class PlaybookRun:
    """What a test asserts on: runner status, per-host stats and the failure messages."""

    status: str
    rc: int
    stats: dict
    failure_messages: list[str]
    debug_messages: list[str]
    stdout: str
    events_data: list[dict]

    def count(self, kind: str) -> int:
        return sum((self.stats.get(kind) or {}).values())


def run_playbook(
    playbook: Path,
    tmp_path: Path,
    *,
    inventories: tuple[Path, ...] = (LAB_INVENTORY,),
    extravars: dict | None = None,
    vars_files: tuple[Path, ...] = (),
    check: bool = False,
    diff: bool = False,
    tags: str | None = None,
    skip_tags: str | None = None,
    verbosity: int = 0,
) -> PlaybookRun:
    private = tmp_path / "runner"
    private.mkdir(parents=True, exist_ok=True)
    result = ansible_runner.run(
        private_data_dir=str(private),
        project_dir=str(ROOT),
        playbook=str(playbook),
        inventory=[str(p) for p in inventories],
        extravars=extravars or {},
        # A vars file goes in as an owner gives it: -e @FILE, read by ansible-playbook itself.
        cmdline=" ".join(
            [f"-e @{path}" for path in vars_files]
            + ["--check"] * check
            + ["--diff"] * (diff or check)
        )
        or None,
        verbosity=verbosity or None,
        tags=tags,
        skip_tags=skip_tags,
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
        quiet=True,
    )
    failures, debugs = [], []
    events = list(result.events)
    for event in events:
        kind = event.get("event")
        res = event.get("event_data", {}).get("res", {})
        if kind in ("runner_on_failed", "runner_on_unreachable"):
            failures.append(str(res.get("msg", "")))
            # A looped task fails with "One or more items failed"; each failed item says why,
            # as the play's output shows it.
            failures += [
                str(item.get("msg", ""))
                for item in res.get("results", [])
                if isinstance(item, dict) and item.get("failed")
            ]
        elif kind == "runner_on_ok" and event["event_data"].get("task_action", "").endswith(
            "debug"
        ):
            debugs.append(str(res.get("msg", "")))
    return PlaybookRun(
        result.status,
        result.rc,
        result.stats or {},
        failures,
        debugs,
        result.stdout.read(),
        events,
    )


def node_has_file(node: str, path: str) -> bool:
    proc = subprocess.run(
        ["docker", "exec", NODE_CONTAINERS[node], "test", "-e", path], check=False
    )
    return proc.returncode == 0


def node_sh(node: str, script: str, check: bool = True) -> str:
    """Run a shell script on a lab node (as root); its output."""
    return subprocess.run(
        ["docker", "exec", NODE_CONTAINERS[node], "sh", "-c", script],
        capture_output=True,
        text=True,
        check=check,
    ).stdout


def remove_node_file(node: str, path: str) -> None:
    subprocess.run(["docker", "exec", NODE_CONTAINERS[node], "rm", "-f", path], check=True)


def pytest_collection_modifyitems(items):
    """Fresh-lab tests first, engine-restarting tests last, the rest as collected."""

    def rank(item) -> int:
        if item.get_closest_marker("fresh_lab"):
            return 0
        return 2 if item.get_closest_marker("disruptive") else 1

    items.sort(key=rank)  # a stable sort: within a rank, the collected order stays


@pytest.fixture(scope="session", autouse=True)
def lab_is_up():
    for container in NODE_CONTAINERS.values():
        proc = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Running}}", container],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.stdout.strip() != "true":
            pytest.fail(f"{container} is not running: bring the lab up with `make lab-up`")


def lab_is_fresh() -> bool:
    return not any(node_has_file(node, path) for node in NODE_CONTAINERS for path in FIRST_CHANGES)


@pytest.fixture(scope="session")
def fresh_lab(lab_is_up):
    """Nodes that no run has touched: the lab is purged and brought up again if it was used."""
    if not lab_is_fresh():
        labctl = [sys.executable, str(ROOT / "lab" / "labctl.py")]
        subprocess.run([*labctl, "down", "--purge"], check=True, capture_output=True)
        subprocess.run([*labctl, "up"], check=True, capture_output=True)
    assert lab_is_fresh()


@pytest.fixture(scope="session")
def converged(tmp_path_factory, lab_is_up):
    """site.yml has run once on the lab in this session (a cold boot on a fresh lab)."""
    run = run_playbook(SITE, tmp_path_factory.mktemp("converge"))
    assert run.status == "successful", run.failure_messages
    return run


def run_guarded(tmp_path: Path, **kwargs) -> PlaybookRun:
    """Run the guard playbook with no marker left from an earlier run."""
    for node in NODE_CONTAINERS:
        remove_node_file(node, MARKER)
    return run_playbook(GUARD, tmp_path, **kwargs)


def assert_stopped_before_any_change(run: PlaybookRun, fragments) -> None:
    """The run failed, changed nothing anywhere, and said each fragment."""
    assert run.status == "failed"
    assert run.count("changed") == 0
    for node in NODE_CONTAINERS:
        assert not node_has_file(node, MARKER)
    joined = "\n".join(run.failure_messages)
    for fragment in fragments:
        assert fragment in joined


# --- the engines and the API ------------------------------------------------------------------


def inspect(container: str) -> dict | None:
    proc = subprocess.run(
        ["docker", "inspect", container], capture_output=True, text=True, check=False
    )
    return json.loads(proc.stdout)[0] if proc.returncode == 0 else None


def engines_state() -> dict[str, tuple[str, str, bool] | None]:
    """Per node: container ID, start time, running."""
    state = {}
    for node, name in ENGINES.items():
        info = inspect(name)
        state[node] = (
            (info["Id"], info["State"]["StartedAt"], info["State"]["Running"]) if info else None
        )
    return state


def api_url() -> str:
    """The head's API, through its management address (the engine shares the node's network)."""
    info = inspect(NODE_CONTAINERS["node0"])
    address = info["NetworkSettings"]["Networks"]["gb10-lab-mgmt"]["IPAddress"]
    return f"http://{address}:8000"


def api_key() -> str:
    return KEY_FILE.read_text().strip()


def user_key(name: str) -> str:
    """An API user's key, from the client directory the vllm role wrote for them."""
    return (CLIENTS / name / "api-key").read_text().strip()


def chat(key: str | None, content: str = "Hello") -> requests.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return requests.post(
        f"{api_url()}/v1/chat/completions",
        headers=headers,
        json={
            "model": MODEL,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": 16,
            "min_tokens": 4,
        },
        timeout=120,
    )


# The vllm role's task that hands every node its part of the engine plan (__vllm_node) and
# the deployment's fingerprint (vllm_deployment).
ENGINE_PLAN_TASK = "Hand each node its part of the plan, and every node the fingerprint"


def task_facts(run: PlaybookRun, task: str) -> dict[str, dict]:
    """ansible_facts a set_fact task returned, per host."""
    facts = {}
    for event in run.events_data:
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_ok" and data.get("task") == task:
            facts[data["host"]] = data["res"].get("ansible_facts", {})
    return facts


def assert_no_key_in(run: PlaybookRun, keys) -> None:
    """No key in the run's output or in any event it sent (verbose results included)."""
    events = json.dumps(run.events_data)
    for key in keys:
        assert key not in run.stdout
        assert key not in events


def saved_log_dirs() -> set[Path]:
    return set(LOG_DIR.iterdir()) if LOG_DIR.exists() else set()
