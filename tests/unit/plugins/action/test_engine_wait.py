# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine_wait action: one copy per node, side by side (threads here, worker processes
under Ansible), each calling the module on its node (here: this machine, through a local
connection) and sharing what it saw through the run's temporary directory."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from ansible import constants as C
from ansible_collections.gb10.serving.plugins.action import engine_wait
from ansible_collections.gb10.serving.tests.unit.plugins.action.utils import (
    load_shell_plugins,
    run_action,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.docker_api import (
    FakeDockerApi,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.vllm_api import (
    FakeVllmApi,
)
from ansible_collections.gb10.serving.tests.unit.plugins.modules.test_engine_wait import (
    Engine,
)

MODEL = "team-coder"
KEY = "k-0123456789"


@pytest.fixture
def shown(monkeypatch, tmp_path):
    # The run's temporary directory, which Ansible makes for each run.
    run_tmp = tmp_path / "run"
    run_tmp.mkdir()
    monkeypatch.setattr(C, "DEFAULT_LOCAL_TMP", str(run_tmp))
    lines = []
    monkeypatch.setattr(engine_wait.display, "display", lambda msg, *a, **k: lines.append(msg))
    return lines


@pytest.fixture
def dockers(tmp_path):
    """One Docker engine per node (each node has its own)."""
    with FakeDockerApi(tmp_path / "node0") as node0, FakeDockerApi(tmp_path / "node1") as node1:
        yield {"node0": node0, "node1": node1}


@pytest.fixture(autouse=True)
def node_dirs(tmp_path):
    for node in ("node0", "node1"):
        (tmp_path / node).mkdir()


def wait_on_both(dockers, api_url, **extra):
    """Run the task on node0 (the head) and node1 at once; their results by node."""
    started = time.time()
    results = {}

    def one(node):
        args = {
            "container": "gb10-vllm",
            "nodes": ["node0", "node1"],
            "head": "node0",
            "started": started,
            "docker_host": dockers[node].docker_host,
            "poll": 0.02,
            "timeout": 60,
            **extra,
        }
        if node == "node0":
            args.update(url=api_url, model=MODEL, api_key=KEY)
        task_vars = {"ansible_python_interpreter": sys.executable, "inventory_hostname": node}
        results[node] = run_action(
            engine_wait.ActionModule,
            "gb10.serving.engine_wait",
            args,
            task_vars=task_vars,
            task_uuid="the-wait-task",
        )

    load_shell_plugins()
    threads = [threading.Thread(target=one, args=(node,)) for node in ("node0", "node1")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results, time.time() - started


def test_both_end_when_the_head_serves(dockers, shown):
    for docker in dockers.values():
        docker.add(Engine())
    with FakeVllmApi(models=[MODEL], key=KEY, healthy_after=20) as api:
        results, seconds = wait_on_both(dockers, api.url)
    for node, result in results.items():
        assert (result["ready"], result["stopped"], result["timed_out"]) == (True, [], False), node
        assert result["changed"] is False
    assert results["node0"]["health"] == 200
    assert results["node1"]["health"] is None
    assert results["node0"]["rounds"] >= 21
    # The worker learnt it from the head's answer, well before the timeout.
    assert seconds < 30
    assert any(line.startswith("node0 ") and "serving" in line for line in shown)
    assert any(line.startswith("node1 ") and "running" in line for line in shown)


def test_both_end_when_the_worker_s_engine_stops(dockers, shown):
    dockers["node0"].add(Engine())
    dockers["node1"].add(Engine(looks=5, exit_code=137))
    with FakeVllmApi(models=[MODEL], key=KEY, healthy_after=10**6) as api:
        results, seconds = wait_on_both(dockers, api.url)
    for node, result in results.items():
        assert (result["ready"], result["stopped"], result["timed_out"]) == (
            False,
            ["node1"],
            False,
        ), node
    assert results["node1"]["container"]["exit_code"] == 137
    assert results["node0"]["health"] == 503
    assert seconds < 30
    assert any(line.startswith("node1 ") and "stopped (exited)" in line for line in shown)


def test_the_timeout_ends_both(dockers, shown):
    """The role's vllm_ready_timeout is this timeout (roles/vllm/tasks/wait.yml)."""
    for docker in dockers.values():
        docker.add(Engine())
    with FakeVllmApi(models=[MODEL], key=KEY, healthy_after=10**6) as api:
        results, _seconds = wait_on_both(dockers, api.url, timeout=0.5)
    for node, result in results.items():
        assert (result["ready"], result["stopped"], result["timed_out"]) == (False, [], True), node
        assert result["elapsed"] >= 0.5


def test_a_node_whose_docker_cannot_be_read_counts_as_stopped(dockers, shown, tmp_path):
    dockers["node0"].add(Engine())
    dockers["node1"] = type("Gone", (), {"docker_host": f"unix://{tmp_path}/none.sock"})()
    with FakeVllmApi(models=[MODEL], key=KEY, healthy_after=10**6) as api:
        results, seconds = wait_on_both(dockers, api.url)
    for node, result in results.items():
        assert result["stopped"] == ["node1"], node
        assert "cannot talk to the Docker engine" in result["errors"]["node1"]
    assert seconds < 30


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"nodes": ["node1"]}, "node0 is not one of the nodes"),
        ({"url": None}, "the head's wait needs url and model"),
        ({"poll": -1}, "poll must be 0 or more seconds"),
    ],
    ids=["not-a-node", "head-without-url", "negative-poll"],
)
def test_bad_arguments_fail_before_any_look(shown, extra, message):
    args = {
        "container": "gb10-vllm",
        "nodes": ["node0", "node1"],
        "head": "node0",
        "started": time.time(),
        "url": "http://127.0.0.1:9",
        "model": MODEL,
        **extra,
    }
    with pytest.raises(engine_wait.AnsibleActionFail, match=message):
        run_action(
            engine_wait.ActionModule,
            "gb10.serving.engine_wait",
            args,
            task_vars={"inventory_hostname": "node0"},
        )
