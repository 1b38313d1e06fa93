"""The watchdog's script (roles/watchdog/files/gb10_serving_watchdog.py), the parts that need
no node: when it restarts, when it gives up, and the order it stops and starts the engines.
The lab proves the rest for real (tests/integration/test_watchdog.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "roles/watchdog/files/gb10_serving_watchdog.py"
_spec = importlib.util.spec_from_file_location("gb10_serving_watchdog", SCRIPT)
watchdog = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(watchdog)

LIMITS = {"failures": 3, "max_restarts": 2, "window": 3600}


def run(results, start=1000.0, step=60.0, state=None):
    """Feed canary results one interval apart; the actions, and the last state."""
    state = state or {}
    actions = []
    for number, ok in enumerate(results):
        state, action = watchdog.decide(state, ok, start + number * step, **LIMITS)
        actions.append(action)
    return actions, state


def test_a_healthy_cluster_is_left_alone():
    actions, state = run([True] * 5)
    assert actions == ["ok"] * 5
    assert state == {"failures": 0, "restarts": [], "gave_up": False}


def test_it_restarts_after_the_failures_in_a_row_and_counts_again_after():
    actions, state = run([False, False, False, False, True])
    assert actions == ["failing", "failing", "restart", "failing", "recovered"]
    assert state["restarts"] == [1120.0]


def test_a_success_in_between_resets_the_count():
    actions, _state = run([False, False, True, False, False])
    assert "restart" not in actions


def test_it_gives_up_after_the_maximum_restarts_in_the_window_and_says_so_once():
    actions, state = run([False] * 12)
    assert actions.count("restart") == LIMITS["max_restarts"]
    assert actions.count("give_up") == 1
    assert actions[-1] == "given_up"
    assert state["gave_up"] is True
    # Serving again ends the episode; failing again within the window (both restarts still
    # in it) gives up at once, and says so again.
    again, _state = run([True] + [False] * 3, start=2000.0, state=state)
    assert again == ["recovered", "failing", "failing", "give_up"]


def test_restarts_older_than_the_window_no_longer_count():
    _actions, state = run([False] * 12)
    # Still failing an hour later: the old restarts left the window, so it tries again.
    later, _state = run([False] * 3, start=1000.0 + 3600 + 700, state=state)
    assert later[0] == "restart"


def test_it_stops_the_head_first_and_starts_in_the_plan_s_order(monkeypatch):
    calls = []
    monkeypatch.setattr(
        watchdog, "node_action", lambda c, node, verb: calls.append((verb, node["host"])) or True
    )
    monkeypatch.setattr(watchdog.time, "sleep", lambda seconds: None)
    config = {
        "nodes": [
            {"host": h, "container": "c", "address": a, "local": h == "node0"}
            for h, a in (("node0", "10.0.0.1"), ("node1", "10.0.0.2"), ("node2", "10.0.0.3"))
        ],
        "stop_order": ["node0", "node1", "node2"],
        "start_order": ["node1", "node2", "node0"],
    }
    assert watchdog.restart_cluster(config) is True
    assert calls == [
        ("stop", "node0"),
        ("stop", "node1"),
        ("stop", "node2"),
        ("start", "node1"),
        ("start", "node2"),
        ("start", "node0"),
    ]


@pytest.mark.parametrize("command", ["", "rm -rf /", "start; reboot", "stop now", "restart"])
def test_the_forced_command_runs_only_stop_or_start(monkeypatch, command):
    monkeypatch.setenv("SSH_ORIGINAL_COMMAND", command)
    monkeypatch.setattr(watchdog, "docker_action", lambda *a: pytest.fail("Docker was called"))
    assert watchdog.remote({"container": "gb10-vllm"}) == 2


def test_docker_takes_only_stop_and_start():
    with pytest.raises(ValueError, match="only stop and start"):
        watchdog.docker_action("gb10-vllm", "kill")
