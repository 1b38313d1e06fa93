"""Drive gb10.serving's playbooks against the lab through ansible-runner.

The lab (two simulated GB10 nodes) must be up: `scripts/test.sh integration` brings it up
and down around these tests; `make lab-up` does it by hand.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import ansible_runner
import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB_INVENTORY = ROOT / "inventory" / "lab"
HERE = Path(__file__).resolve().parent
NODE_CONTAINERS = {"node0": "gb10-lab-node0", "node1": "gb10-lab-node1"}
# Preflight, then a play that leaves MARKER on every node: what "before any change" means.
GUARD = HERE / "playbooks" / "preflight_guard.yml"
MARKER = "/tmp/gb10-preflight-passed"  # noqa: S108 (a path inside the lab nodes)


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
    check: bool = False,
    diff: bool = False,
    tags: str | None = None,
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
        cmdline=" ".join(["--check"] * check + ["--diff"] * (diff or check)) or None,
        verbosity=verbosity or None,
        tags=tags,
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


def remove_node_file(node: str, path: str) -> None:
    subprocess.run(["docker", "exec", NODE_CONTAINERS[node], "rm", "-f", path], check=True)


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


@pytest.fixture(scope="session")
def converged(tmp_path_factory, lab_is_up):
    """site.yml has run once on the lab (tests that need a fresh lab run before it)."""
    run = run_playbook(ROOT / "site.yml", tmp_path_factory.mktemp("converge"))
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
