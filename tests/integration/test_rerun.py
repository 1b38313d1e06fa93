"""A re-run on a serving cluster: after a run that stopped at once because a node did not
answer, the next run changes nothing, restarts nothing, measures nothing again and shows no
key, even at the highest verbosity with --diff. One re-run proves all of it."""

from __future__ import annotations

import contextlib
import subprocess

import pytest
from conftest import (
    NODE_CONTAINERS,
    REPORTS,
    SITE,
    api_key,
    assert_no_key_in,
    chat,
    engines_state,
    inspect,
    run_playbook,
    user_key,
)


@contextlib.contextmanager
def paused(container: str):
    subprocess.run(["docker", "pause", container], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["docker", "unpause", container], check=True, capture_output=True)


def fingerprint() -> str:
    return inspect("gb10-lab-node0-vllm")["Config"]["Labels"]["io.gb10-serving.deployment"]


def reports_of(label: str) -> list:
    return sorted(REPORTS.glob(f"*-{label[:12]}/bench.json"))


@pytest.fixture(scope="module")
def runs(converged, tmp_path_factory):
    before = engines_state()
    reports = reports_of(fingerprint())
    # Short waits for the silent node (a user's choice too): the preflight gives up on it
    # after 5 s instead of 20, each SSH attempt after 5 s instead of ansible.cfg's 30.
    with paused(NODE_CONTAINERS["node1"]):
        unreachable = run_playbook(
            SITE,
            tmp_path_factory.mktemp("unreachable"),
            extravars={"preflight_connect_timeout": 5, "ansible_ssh_timeout": 5},
        )
    paused_state = engines_state()
    rerun = run_playbook(SITE, tmp_path_factory.mktemp("rerun"), verbosity=4, diff=True)
    return {
        "before": before,
        "reports": reports,
        "unreachable": unreachable,
        "paused_state": paused_state,
        "rerun": rerun,
    }


def test_a_node_unreachable_at_the_start_changes_nothing_anywhere(runs):
    run = runs["unreachable"]
    assert run.status == "failed"
    joined = "\n".join(run.failure_messages)
    for fragment in ("node1", "did not answer within 5 s", "Nothing has been changed"):
        assert fragment in joined, joined
    assert run.count("changed") == 0
    assert runs["paused_state"] == runs["before"]


def test_the_next_run_changes_nothing_and_leaves_the_engines_untouched(runs):
    run = runs["rerun"]
    assert run.status == "successful", run.failure_messages
    # Every stage ran on both nodes, none failed or lost a node, and nothing changed.
    assert set(run.stats["ok"]) == {"node0", "node1"}
    assert run.count("failures") == 0
    assert run.count("dark") == 0
    assert run.count("changed") == 0
    assert engines_state() == runs["before"]
    assert chat(api_key()).status_code == 200


def test_the_next_run_measures_nothing_again(runs):
    assert runs["reports"], "site.yml left no report of the running deployment"
    assert reports_of(fingerprint()) == runs["reports"]
    assert any("was measured already" in msg for msg in runs["rerun"].debug_messages)


def test_the_next_run_shows_no_key_even_verbose_with_diff(runs):
    keys = [api_key(), user_key("alice"), user_key("bob")]
    assert_no_key_in(runs["rerun"], keys)
    assert_no_key_in(runs["unreachable"], keys)
