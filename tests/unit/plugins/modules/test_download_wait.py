# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""download_wait against a Docker Engine API on a real unix socket (the boot-log tests' one)."""

from __future__ import annotations

import pytest
from ansible_collections.gb10.serving.plugins.modules import download_wait
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.docker_api import (
    Container,
    FakeDockerApi,
    inspect_document,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.fake_time import FakeTime
from ansible_collections.gb10.serving.tests.unit.plugins.modules.utils import (
    module_exit,
    module_fail,
)

NAME = "gb10-hf-download"


class EndsAfter(Container):
    """A download container that runs for ``looks`` inspections, then exits ``exit_code``."""

    def __init__(self, looks, exit_code=0):
        super().__init__(NAME, [])
        self.looks = 0
        self.until = looks
        self.exit_code = exit_code

    @property
    def document(self):
        self.looks += 1
        running = self.looks < self.until
        return inspect_document(NAME, running=running, exit_code=self.exit_code)

    @document.setter
    def document(self, _value):
        pass


@pytest.fixture
def api(tmp_path):
    with FakeDockerApi(tmp_path) as fake:
        yield fake


def args(api, path, **extra):
    return {"container": NAME, "path": str(path), "docker_host": api.docker_host, **extra}


def test_a_thousand_looks_in_one_call(api, tmp_path):
    container = api.add(EndsAfter(1000, exit_code=0))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "blob").write_bytes(b"x" * 4096)
    result = module_exit(download_wait.main, args(api, repo, poll=0, budget=600))
    assert container.looks == 1000
    assert result["rounds"] == 1000
    assert (result["finished"], result["exists"], result["exit_code"]) == (True, True, 0)
    assert result["bytes"] == 4096
    assert result["changed"] is False


def test_a_running_download_answers_when_the_budget_is_spent(api, tmp_path, monkeypatch):
    fake = FakeTime()
    monkeypatch.setattr(download_wait, "follow", fake.follow())
    api.add(EndsAfter(10**9))
    result = module_exit(download_wait.main, args(api, tmp_path / "none", poll=30, budget=100))
    assert (result["finished"], result["exit_code"], result["bytes"]) == (False, None, 0)
    # Looks at 0, 30, 60 and 90 s; none at 120, which would come after the budget.
    assert (result["rounds"], fake.sleeps, result["elapsed"]) == (4, [30] * 3, 90)


def test_a_failed_download_reports_its_exit_code(api, tmp_path):
    api.add(EndsAfter(3, exit_code=1))
    result = module_exit(download_wait.main, args(api, tmp_path, poll=0, budget=60))
    assert (result["finished"], result["exit_code"], result["rounds"]) == (True, 1, 3)


def test_the_log_is_quoted_once_the_download_ends(api, tmp_path):
    log = tmp_path / ".gb10-download.log"
    log.write_text("".join(f"step {n}\n" for n in range(20)) + "Error: offline\n")
    api.add(EndsAfter(2, exit_code=1))
    result = module_exit(
        download_wait.main, args(api, tmp_path, poll=0, budget=60, log=str(log), log_lines=2)
    )
    assert (result["log_tail"], result["log_problem"]) == (["step 19", "Error: offline"], None)


def test_the_log_is_not_read_while_the_download_runs(api, tmp_path):
    log = tmp_path / ".gb10-download.log"
    log.write_text("downloading\n")
    api.add(EndsAfter(10**9))
    result = module_exit(download_wait.main, args(api, tmp_path, poll=0, budget=0, log=str(log)))
    assert (result["finished"], result["log_tail"]) == (False, [])


def test_a_log_planted_as_a_link_is_refused_unread(api, tmp_path):
    """The log lies where the container UID writes; the module runs as root."""
    secret = tmp_path / "root-only"
    secret.write_text("SECRET-KEY-MATERIAL\n")
    log = tmp_path / ".gb10-download.log"
    log.symlink_to(secret)
    api.add(EndsAfter(1, exit_code=1))
    result = module_exit(download_wait.main, args(api, tmp_path, poll=0, budget=60, log=str(log)))
    assert result["log_tail"] == []
    assert "symlink" in result["log_problem"]
    assert "SECRET" not in str(result)


def test_no_container_counts_as_ended_without_exit_code(api, tmp_path):
    result = module_exit(download_wait.main, args(api, tmp_path, poll=0, budget=60))
    assert (result["finished"], result["exists"], result["exit_code"]) == (True, False, None)
    assert result["rounds"] == 1


def test_negative_poll_fails_before_asking_docker(api, tmp_path):
    result = module_fail(download_wait.main, args(api, tmp_path, poll=-1))
    assert result["msg"] == "poll must be 0 or more seconds, got -1.0"
    assert api.requests == []


def test_engine_error_fails_with_its_message(api, tmp_path):
    api.status = 500
    result = module_fail(download_wait.main, args(api, tmp_path))
    assert "the Docker engine answered 500: server error: broken on purpose" in result["msg"]
