# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The download_wait action: it calls the module on the node (here: this machine, through a
local connection) until the download ends or time is up, one progress line per call."""

from __future__ import annotations

import sys

import pytest
from ansible.errors import AnsibleActionFail
from ansible_collections.gb10.serving.plugins.action import download_wait
from ansible_collections.gb10.serving.tests.unit.plugins.action.utils import run_action
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.docker_api import (
    FakeDockerApi,
)
from ansible_collections.gb10.serving.tests.unit.plugins.modules.test_download_wait import (
    NAME,
    EndsAfter,
)


@pytest.fixture
def api(tmp_path):
    with FakeDockerApi(tmp_path) as fake:
        yield fake


@pytest.fixture
def shown(monkeypatch):
    lines = []
    monkeypatch.setattr(download_wait.display, "display", lambda msg, *a, **k: lines.append(msg))
    return lines


def wait(api, path, **extra):
    args = {"container": NAME, "path": str(path), "docker_host": api.docker_host, **extra}
    # The module runs for real on this machine, with the tests' own Python.
    task_vars = {"ansible_python_interpreter": sys.executable, "inventory_hostname": "node0"}
    return run_action(
        download_wait.ActionModule, "gb10.serving.download_wait", args, task_vars=task_vars
    )


def test_progress_line_format():
    state = {"bytes": 1_234_000_000, "finished": False}
    assert download_wait.progress_line("org/name", state, 61.9, 1200) == (
        "org/name: 1.2 GB on disk after 61 s, 1200 polls (downloading)"
    )
    done = download_wait.progress_line("m", {"bytes": 0, "finished": True}, 0, 1)
    assert done == "m: 0.0 GB on disk after 0 s, 1 polls (done)"


def test_follows_to_the_end_with_a_line_per_call(api, tmp_path, shown):
    container = api.add(EndsAfter(40, exit_code=0))
    (tmp_path / "blob").write_bytes(b"x" * 10)
    result = wait(api, tmp_path, poll=0.01, progress_interval=0.05, timeout=60, label="org/name")
    assert (result["finished"], result["exit_code"], result["bytes"]) == (True, 0, 10)
    assert result["rounds"] == container.looks == 40
    assert result["calls"] == len(shown) >= 2
    assert all(line.startswith("[node0] org/name: 0.0 GB on disk after ") for line in shown)
    assert shown[-1].endswith(", 40 polls (done)")
    assert result["msg"] == shown[-1][len("[node0] ") :]
    assert result["changed"] is False


def test_stops_at_the_timeout_while_the_download_goes_on(api, tmp_path, shown):
    api.add(EndsAfter(10**9))
    result = wait(api, tmp_path, poll=0.01, progress_interval=0.1, timeout=0.3)
    assert (result["finished"], result["exit_code"]) == (False, None)
    assert 0.3 <= result["elapsed"] < 10
    assert shown[-1].endswith("(downloading)")


def test_a_failing_module_fails_the_action(api, tmp_path, shown):
    api.status = 500
    with pytest.raises(AnsibleActionFail, match="answered 500"):
        wait(api, tmp_path, timeout=5)
    assert shown == []


def test_negative_timeout_is_refused_before_any_call(api, tmp_path):
    with pytest.raises(AnsibleActionFail, match="timeout must be 0 or more seconds"):
        wait(api, tmp_path, timeout=-1)
    assert api.requests == []
