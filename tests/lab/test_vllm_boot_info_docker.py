# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The boot-log reader against the real Docker engine of this machine.

A short-lived container of the lab engine image prints the lab's real head log (bind-mounted
read-only) on stdout and one line on stderr, with no network, and exits; the module's Docker
code (module_utils/_docker_logs.py, loaded by path) reads its state and log over
/var/run/docker.sock and the parser must find in it exactly what it finds in the file, plus
the stderr line. Skipped when the Docker engine or the image (``make setup``) is missing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULE_UTILS = REPO / "plugins" / "module_utils"
FIXTURE = (
    REPO
    / "tests"
    / "unit"
    / "plugins"
    / "module_utils"
    / "fixtures"
    / "vllm"
    / "vllm_cpu_tiny_tp2_2node_head_v0.32.log"
)
IMAGE = "gb10-lab-engine:lab"
DOCKER_HOST = "unix:///var/run/docker.sock"


def load(name):
    """plugins/module_utils/<name>.py imported by path (standard library only)."""
    spec = importlib.util.spec_from_file_location("gb10_lab_" + name, MODULE_UTILS / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


docker_logs = load("_docker_logs")
vllm_log = load("_vllm_log")


def docker(*args, timeout=120):
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=timeout
    )


@pytest.fixture(scope="module")
def engine_image():
    if shutil.which("docker") is None:
        pytest.skip("docker is not installed")
    info = docker("info", timeout=30)
    if info.returncode != 0:
        pytest.skip(f"the Docker engine does not answer (docker info: {info.stderr.strip()})")
    if docker("image", "inspect", IMAGE).returncode != 0:
        pytest.skip(f"image {IMAGE} is not built here (make setup builds it)")
    return IMAGE


@pytest.fixture(scope="module")
def exited_container(engine_image):
    """The name of a container that printed the fixture and one stderr line, then exited."""
    name = f"gb10-test-boot-info-{uuid.uuid4().hex[:12]}"
    try:
        run = docker(
            "run",
            "--detach",
            "--name",
            name,
            "--network",
            "none",
            "--volume",
            f"{FIXTURE}:/fixture.log:ro",
            engine_image,
            "sh",
            "-c",
            "cat /fixture.log; echo ERR >&2",
        )
        assert run.returncode == 0, run.stderr
        wait = docker("wait", name)
        assert wait.returncode == 0, wait.stderr
        assert wait.stdout.strip() == "0"
        yield name
    finally:
        docker("rm", "--force", name)


def read(name, since_start=True, since=None):
    """What the module reads: (container summary, since, parser result, raw log).

    ``since`` (whole Unix seconds, the module's O(since) rounded down) overrides
    ``since_start``, as in the module.
    """
    client = docker_logs.DockerClient(DOCKER_HOST, timeout=60)
    info = client.inspect(name)
    assert info is not None
    container = docker_logs.container_summary(info)
    if since is None and since_start:
        since = docker_logs.started_at_seconds(container["started_at"])
    parser = vllm_log.VllmLogParser()
    raw = []
    for block in docker_logs.log_blocks(client.logs(name, since), container["tty"], raw.append):
        parser.feed_bytes(block)
    return container, since, parser.result(), b"".join(raw)


def test_log_read_from_docker_parses_like_the_file(exited_container):
    container, since, result, raw = read(exited_container)
    text = FIXTURE.read_bytes().decode("utf-8")
    expected = vllm_log.parse_text(text)
    assert result == dict(expected, lines=expected["lines"] + 1)
    assert result["kv_cache_tokens"] == 4194304
    assert result["version"] == "0.32.0"
    assert container["running"] is False
    assert container["status"] == "exited"
    assert container["exit_code"] == 0
    assert container["tty"] is False
    assert container["image"] == IMAGE
    assert isinstance(since, int)
    # stdout and stderr arrive interleaved; together they are the file and the stderr line.
    assert sorted(raw.splitlines(keepends=True)) == sorted(
        FIXTURE.read_bytes().splitlines(keepends=True) + [b"ERR\n"]
    )


def test_whole_log_without_since(exited_container):
    _container, since, result, _raw = read(exited_container, since_start=False)
    assert since is None
    expected = vllm_log.parse_text(FIXTURE.read_bytes().decode("utf-8"))
    assert result == dict(expected, lines=expected["lines"] + 1)


def test_since_before_the_start_reads_everything(exited_container):
    container, _since, _result, _raw = read(exited_container)
    before = docker_logs.started_at_seconds(container["started_at"]) - 60
    _container, since, result, _raw = read(exited_container, since=before)
    assert since == before
    expected = vllm_log.parse_text(FIXTURE.read_bytes().decode("utf-8"))
    assert result == dict(expected, lines=expected["lines"] + 1)
    assert result["throughput_summary"]["lines"] == 1


def test_since_after_the_end_reads_nothing(exited_container):
    container, _since, _result, _raw = read(exited_container)
    after = docker_logs.started_at_seconds(container["finished_at"]) + 1
    _container, since, result, raw = read(exited_container, since=after)
    assert since == after
    assert raw == b""
    assert result["lines"] == 0
    assert result["throughput_summary"] is None


def test_no_such_container(engine_image):
    client = docker_logs.DockerClient(DOCKER_HOST, timeout=60)
    assert client.inspect(f"gb10-test-absent-{os.getpid()}-{uuid.uuid4().hex[:8]}") is None
