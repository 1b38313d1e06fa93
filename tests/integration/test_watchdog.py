"""The watchdog on the lab, for real: systemd's timer on node0, the canary through the API,
the head's own key into node1's forced command over the cable, Docker stopping and starting
the engines. A killed worker behind a head that may still answer /health: the doctor names
it, then the watchdog brings the cluster back (the one engine boot both share). A fault that
lasts (the head's API port dropped on loopback, where the canary asks) once the restarts a
window allows are spent: it restarts nothing more and says so once. watchdog_enabled: false
removes it all.
The time from a killed worker to serving again is measured by benchmarks, not here."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from conftest import (
    ENGINES,
    SITE,
    api_key,
    api_url,
    chat,
    engines_state,
    node_sh,
    run_playbook,
)
from test_doctor import DOCTOR, failing, verdict

pytestmark = pytest.mark.disruptive

# This machine on the lab's management network (lab/labctl.py MGMT_GATEWAY): node0 reaches
# the webhook there.
WEBHOOK_ADDRESS = "10.219.0.1"
UNIT = "gb10-serving-watchdog"
# Short enough for a test: a canary every 5 s, a restart after 2 failures, and one restart
# in two hours: the first test's restart spends it, so the second test's lasting fault gets
# none (no engine boot there; the unit tests count restarts within a window).
FAST = {
    "watchdog_enabled": True,
    "watchdog_interval": 5,
    "watchdog_failures": 2,
    "watchdog_canary_timeout": 4,
    "watchdog_boot_timeout": 120,
    "watchdog_max_restarts": 1,
    "watchdog_window": 7200,
}


def journal() -> list[str]:
    return node_sh("node0", f"journalctl -t {UNIT} -o cat --no-pager").splitlines()


def remote_journal() -> list[str]:
    return node_sh("node1", f"journalctl -t {UNIT} -o cat --no-pager").splitlines()


def kill_workers(node: str) -> list[str]:
    script = (
        "for p in /proc/[0-9]*; do case \"$(tr '\\0' ' ' < $p/cmdline)\" in "
        "VLLM::Worker*) echo ${p#/proc/}; kill -9 ${p#/proc/};; esac; done"
    )
    proc = subprocess.run(
        ["docker", "exec", ENGINES[node], "sh", "-c", script],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.split()


def wait_for(predicate, timeout: float, step: float = 5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def serves() -> bool:
    try:
        return chat(api_key()).status_code == 200
    except requests.RequestException:
        return False


@contextlib.contextmanager
def webhook():
    """A receiver on this machine's management address; yields the events it got."""
    events = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length", 0))
            events.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((WEBHOOK_ADDRESS, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{WEBHOOK_ADDRESS}:{server.server_address[1]}/gb10", events
    finally:
        server.shutdown()
        server.server_close()


def test_a_killed_worker_is_named_by_the_doctor_and_brought_back_by_the_watchdog(
    converged, tmp_path
):
    # Only what the journals say from now on counts.
    seen, seen_remote = len(journal()), len(remote_journal())
    assert kill_workers("node1"), "node1's engine had no worker process"
    time.sleep(5)
    doctor = run_playbook(
        DOCTOR,
        tmp_path / "doctor",
        extravars={"doctor_report_dir": str(tmp_path / "doctor"), "vllm_canary_timeout": 10},
    )
    assert doctor.status == "failed"
    (page,) = (tmp_path / "doctor" / "doctor").glob("*/doctor.json")
    report = json.loads(page.read_text())
    names = failing(report)
    assert ("canary completion", None) in names, names
    # node1 is named: its rank restarted alone, or its worker is gone from a running container.
    assert names & {("started together", "node1"), ("ranks", "node1"), ("container", "node1")}
    assert verdict(report, "canary completion", None)["fix"]

    with webhook() as (url, events):
        install = run_playbook(
            SITE,
            tmp_path / "install",
            extravars={**FAST, "watchdog_webhook_url": url},
            tags="watchdog",
        )
        assert install.status == "successful", install.failure_messages
        assert wait_for(serves, timeout=600), journal()
        wait_for(lambda: any(e.get("action") == "restarted" for e in events), timeout=120)
    lines = journal()[seen:]
    restart = next(i for i, line in enumerate(lines) if "restarting the cluster" in line)
    # The engine role's order: the head's engine stopped first, the worker's started first.
    assert lines[restart + 1 : restart + 5] == [
        "stopping the engine on node0",
        "stopping the engine on node1",
        "starting the engine on node1",
        "starting the engine on node0",
    ], lines
    assert "the restarted cluster serves" in lines
    # After watchdog_failures (2) canaries failed in a row, not before.
    assert lines[restart].startswith("the canary failed 2 times in a row")
    assert "1 of 2 in a row" in lines[restart - 1]
    # node1's engine came back through the forced command, which logged it there.
    remote = "\n".join(remote_journal()[seen_remote:])
    assert f"start the engine {ENGINES['node1']} at the head's request: done" in remote
    assert [e["action"] for e in events][:2] == ["restart", "restarted"], events
    assert requests.get(f"{api_url()}/health", timeout=10).status_code == 200
    # The key: in a root-only file on the head, in no journal line, in no webhook event.
    key = api_key()
    assert node_sh("node0", "stat -c %a:%U /etc/gb10-serving/watchdog/check.json").strip() == (
        "600:root"
    )
    assert key not in "\n".join(lines) + remote + json.dumps(events)
    # A worker's key entry lets the head run the forced command only, from its fabric address.
    entry = node_sh("node1", f"grep ' {UNIT}$' /root/.ssh/authorized_keys")
    assert entry.startswith('restrict,from="192.168.100.10",command="')


def test_with_its_restarts_spent_a_lasting_fault_is_given_up_on_and_the_watchdog_goes(
    converged, tmp_path
):
    seen = len(journal())
    drop = (
        "nft add table inet gb10_test && nft add chain inet gb10_test input "
        "'{ type filter hook input priority -50; }' && "
        "nft add rule inet gb10_test input iif lo tcp dport 8000 drop"
    )
    # The first test installed the watchdog (FAST) and spent its one restart.
    timer = node_sh("node0", f"systemctl is-active {UNIT}.timer", check=False).strip()
    assert timer == "active", "runs after the first test, which installs the watchdog"
    before = engines_state()
    node_sh("node0", drop)
    try:
        gave_up = wait_for(
            lambda: any("giving up" in line for line in journal()[seen:]), timeout=120, step=5
        )
        assert gave_up, journal()
        time.sleep(11)  # two more canaries: none restarts anything, none says it again
        lines = journal()[seen:]
        assert not [line for line in lines if "restarting the cluster" in line], lines
        (give_up,) = [line for line in lines if "giving up" in line]
        assert "after 1 restarts in 7200 s" in give_up
        assert "the canary failed 2 times" not in " ".join(lines)
        assert engines_state() == before
    finally:
        node_sh("node0", "nft delete table inet gb10_test", check=False)
    # The port open again, the next canary finds it serving and says so.
    assert wait_for(lambda: "the cluster serves again" in journal()[seen:], timeout=60)

    # watchdog_enabled: false takes it all away (on nodes that never had it, every site.yml
    # run of the suite proves it changes nothing).
    removed = run_playbook(
        SITE, tmp_path / "remove", extravars={"watchdog_enabled": False}, tags="watchdog"
    )
    assert removed.status == "successful", removed.failure_messages
    assert node_sh("node0", f"ls /etc/systemd/system/{UNIT}.timer", check=False) == ""
    assert (
        node_sh("node0", "ls /etc/gb10-serving/watchdog /usr/local/lib/gb10-serving", check=False)
        == ""
    )
    assert (
        node_sh("node1", f"grep -c ' {UNIT}$' /root/.ssh/authorized_keys", check=False).strip()
        == "0"
    )
    assert serves()
