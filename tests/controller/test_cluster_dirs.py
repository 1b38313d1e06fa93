"""Two clusters run from one controller keep their keys and client directories apart.

The engine role keeps a cluster's generated service key and its users' client directories
under ~/.config/gb10-serving/<gb10_cluster_name>/ on the controller (the default name: the
inventory's directory name). Versions before the name kept one set for every cluster, so
running one cluster removed the other's users; the first run of a cluster with the default
paths moves that set into its own directory.

These tests run the role's controller side (its preflight, then controller_dirs, api_key,
api_users and clients; tests/controller/playbooks/controller_keys.yml) with a HOME of their
own: nothing of the lab is needed, the two "nodes" are names for this machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "controller_keys.yml"
# A key an earlier version generated (48 letters and digits, as the role generates them).
OLD_SERVICE_KEY = "Old0service0key0" * 3
OLD_ALICE_KEY = "Old0alice0key000" * 3
RECAP = re.compile(r"^(?P<host>\S+)\s+: ok=\d+\s+changed=(?P<changed>\d+)\s", re.M)


def _inventory(home: Path, name: str, users: list[str], extra: str = "") -> Path:
    """inventories/<name>/hosts.yml: a head and a worker on this machine, with API users."""
    directory = home / "inventories" / name
    directory.mkdir(parents=True)
    user_list = ", ".join(f"{{name: {user}}}" for user in users)
    (directory / "hosts.yml").write_text(
        textwrap.dedent(f"""\
            gb10_cluster:
              vars:
                ansible_connection: local
                ansible_python_interpreter: {sys.executable}
                gb10_platform: lab
                vllm_api_users: [{user_list}]
            {textwrap.indent(extra, "    ")}
              children:
                gb10_head:
                  hosts:
                    node0:
                gb10_workers:
                  hosts:
                    node1:
            """)
    )
    return directory


def _run(home: Path, inventory: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HOME": str(home),
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
    }
    return subprocess.run(
        ["ansible-playbook", "-i", str(inventory), *args, str(PLAYBOOK)],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _changed(run: subprocess.CompletedProcess) -> int:
    """Changes of the whole run (every host), from the play recap; the run must have passed."""
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    recap = list(RECAP.finditer(run.stdout))
    assert {m["host"] for m in recap} == {"node0", "node1"}, run.stdout[-2000:]
    return sum(int(m["changed"]) for m in recap)


def _private_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(text)
    path.chmod(0o600)


def _old_layout(home: Path) -> Path:
    """What an earlier version left: one service key and alice's directory, for every cluster."""
    shared = home / ".config" / "gb10-serving"
    _private_file(shared / "vllm-api-key", OLD_SERVICE_KEY + "\n")
    _private_file(shared / "clients" / "alice" / "api-key", OLD_ALICE_KEY + "\n")
    _private_file(
        shared / "clients" / "alice" / "client.json",
        json.dumps({"user": "alice", "managed_by": "gb10.serving"}),
    )
    return shared


def _key(path: Path) -> str:
    return path.read_text().strip()


def test_an_earlier_versions_keys_move_into_the_first_cluster_that_runs(tmp_path):
    shared = _old_layout(tmp_path)
    blue = _inventory(tmp_path, "blue", ["alice"])
    mine = shared / "blue"

    check = _run(tmp_path, blue, "--check")
    assert _changed(check) > 0
    assert "Check mode: this run would move" in check.stdout
    # Check mode moves nothing and reads the keys where they are: alice keeps her key.
    assert not mine.exists()
    assert _key(shared / "vllm-api-key") == OLD_SERVICE_KEY
    assert "would rotate" not in check.stdout

    run = _run(tmp_path, blue)
    assert _changed(run) > 0
    said = " ".join(run.stdout.split())
    assert f"Moving {shared}/vllm-api-key and {shared}/clients" in said
    assert f"into this cluster's directory {mine} (gb10_cluster_name blue)" in said
    assert not (shared / "vllm-api-key").exists()
    assert not (shared / "clients").exists()
    assert _key(mine / "vllm-api-key") == OLD_SERVICE_KEY
    assert _key(mine / "clients" / "alice" / "api-key") == OLD_ALICE_KEY
    config = json.loads((mine / "clients" / "alice" / "client.json").read_text())
    assert config["api_key_file"] == str(mine / "clients" / "alice" / "api-key")
    assert (mine.stat().st_mode & 0o777) == 0o700

    assert _changed(_run(tmp_path, blue)) == 0


def test_two_clusters_keep_their_users_apart(tmp_path):
    shared = tmp_path / ".config" / "gb10-serving"
    blue = _inventory(tmp_path, "blue", ["alice"])
    green = _inventory(tmp_path, "green", ["bob"])

    _changed(_run(tmp_path, blue))
    _changed(_run(tmp_path, green))
    # Each run removes the client directories of users it no longer lists: only its own.
    assert _changed(_run(tmp_path, blue)) == 0

    assert sorted(p.name for p in (shared / "blue" / "clients").iterdir()) == ["alice"]
    assert sorted(p.name for p in (shared / "green" / "clients").iterdir()) == ["bob"]
    assert _key(shared / "blue" / "vllm-api-key") != _key(shared / "green" / "vllm-api-key")
    assert not (shared / "clients").exists()
    assert not (shared / "vllm-api-key").exists()


def test_a_cluster_name_that_is_a_path_stops_before_any_change(tmp_path):
    bad = _inventory(tmp_path, "blue", ["alice"], extra="gb10_cluster_name: ../escaped")
    run = _run(tmp_path, bad)
    assert run.returncode != 0
    said = " ".join(run.stdout.split())
    assert "gb10_cluster_name names this cluster's directory" in said
    assert "(got ../escaped)" in said
    assert not (tmp_path / ".config").exists()


def test_the_name_can_be_set_apart_from_the_inventory(tmp_path):
    shared = tmp_path / ".config" / "gb10-serving"
    named = _inventory(tmp_path, "blue", ["alice"], extra="gb10_cluster_name: team-2.a")
    _changed(_run(tmp_path, named))
    assert (shared / "team-2.a" / "clients" / "alice" / "api-key").is_file()
    assert not (shared / "blue").exists()
