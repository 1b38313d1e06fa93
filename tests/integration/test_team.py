"""Team access on the lab: a key per API user, client configurations, users come and go.

The lab inventory lists two users: alice (key generated on the controller) and bob (key
given in the inventory). The tests use each user's client directory the way a person would.
A re-run with the same users is in test_rerun.py; removing a user and adding them back, with
the restarts that takes, in test_lifecycle.py.
"""

from __future__ import annotations

import json
import shlex
import subprocess

import requests
from conftest import (
    CLIENTS,
    MODEL,
    NODE_CONTAINERS,
    api_key,
    api_url,
    chat,
    inspect,
    user_key,
)

LAB_USERS = ("alice", "bob")
# The lab inventory's given key (a lab-only value).
BOB_KEY = "gb10-lab-bob-key-not-a-secret-0123456789"  # noqa: S105
KEYS_FILE = "/var/lib/gb10-lab/node0/secrets/vllm-api-keys.yaml"


def mode(path) -> int:
    return path.stat().st_mode & 0o777


def client_env(name: str) -> dict[str, str]:
    """The variables a shell gets from the user's env file, the key loaded as it says."""
    env_file = shlex.quote(str(CLIENTS / name / "env"))
    script = (
        f'set -a; . {env_file}; set +a; export OPENAI_API_KEY="$(cat "$OPENAI_API_KEY_FILE")"; env'
    )
    out = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=True, env={}
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_each_users_key_is_accepted_and_a_wrong_one_refused(converged):
    assert user_key("bob") == BOB_KEY
    assert len(user_key("alice")) == 48
    for name in LAB_USERS:
        response = chat(user_key(name))
        assert response.status_code == 200, (name, response.text)
    assert chat(api_key()).status_code == 200
    assert chat(BOB_KEY[:-1] + "X").status_code == 401
    assert chat(None).status_code == 401


def test_client_configurations_are_private_and_point_at_the_api(converged):
    assert mode(CLIENTS) == 0o700
    for name in LAB_USERS:
        directory = CLIENTS / name
        assert mode(directory) == 0o700
        # A given key (bob's) is marked as given, so a run that no longer gives it rotates it.
        given = ["api-key.given"] if name == "bob" else []
        assert sorted(p.name for p in directory.iterdir()) == sorted(
            ["api-key", "client.json", "env", *given]
        )
        for path in directory.iterdir():
            assert mode(path) == 0o600, path
        config = json.loads((directory / "client.json").read_text())
        assert config["user"] == name
        assert config["base_url"] == f"{api_url()}/v1"
        assert config["model"] == MODEL
        assert config["api_key_file"] == str(directory / "api-key")
        # No key in the configuration files themselves.
        for path in ("client.json", "env"):
            assert user_key(name) not in (directory / path).read_text()


def test_the_files_of_each_user_make_a_real_request(converged):
    for name in LAB_USERS:
        env = client_env(name)
        assert env["OPENAI_BASE_URL"] == f"{api_url()}/v1"
        assert env["OPENAI_MODEL"] == MODEL
        assert env["OPENAI_API_KEY"] == user_key(name)
        response = requests.post(
            f"{env['OPENAI_BASE_URL']}/chat/completions",
            headers={"Authorization": f"Bearer {env['OPENAI_API_KEY']}"},
            json={
                "model": env["OPENAI_MODEL"],
                "messages": [{"role": "user", "content": "Hello"}],
                "max_tokens": 8,
            },
            timeout=120,
        )
        assert response.status_code == 200, (name, response.text)
        assert response.json()["model"] == MODEL


def test_the_engine_reads_the_keys_from_a_private_file(converged):
    head = inspect("gb10-lab-node0-vllm")
    cmd = head["Config"]["Cmd"]
    assert cmd[cmd.index("--config") + 1] == "/etc/gb10-serving/vllm-api-keys.yaml"
    assert head["Config"]["Labels"]["io.gb10-serving.api-users"] == "alice,bob"
    inspected = json.dumps(head)
    for key in (user_key("alice"), BOB_KEY):
        assert key not in inspected
    mounts = {m["Destination"]: m for m in head["Mounts"]}
    assert mounts["/etc/gb10-serving/vllm-api-keys.yaml"]["RW"] is False
    stat = subprocess.run(
        ["docker", "exec", NODE_CONTAINERS["node0"], "stat", "-c", "%a %u", KEYS_FILE],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert stat == ["600", "1000"]
    # The engine's processes carry no key on their command lines.
    cmdlines = subprocess.run(
        [
            "docker",
            "exec",
            "gb10-lab-node0-vllm",
            "sh",
            "-c",
            'for p in /proc/[0-9]*; do tr "\\0" " " < "$p/cmdline"; echo; done',
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--config" in cmdlines
    for key in (user_key("alice"), BOB_KEY, api_key()):
        assert key not in cmdlines
    worker = inspect("gb10-lab-node1-vllm")
    assert "--config" not in worker["Config"]["Cmd"]
