"""The lab itself: `labctl.py up` is idempotent and keeps running nodes as they are."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import NODE_CONTAINERS, ROOT

SSH_DIR = ROOT / ".cache" / "lab" / "ssh"


def inspect(container: str) -> dict:
    out = subprocess.run(
        ["docker", "inspect", container], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)[0]


def test_up_again_restarts_nothing():
    before = {name: inspect(c) for name, c in NODE_CONTAINERS.items()}
    key = SSH_DIR / "id_ed25519"
    key_before = key.read_bytes()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "lab" / "labctl.py"), "up"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "starting" not in proc.stderr
    for name, container in NODE_CONTAINERS.items():
        after = inspect(container)
        assert after["Id"] == before[name]["Id"]
        assert after["State"]["StartedAt"] == before[name]["State"]["StartedAt"]
    assert key.read_bytes() == key_before


def test_each_node_answers_over_ssh_as_the_inventory_reaches_it():
    """The lab inventory's connection: the node's container name through labctl's
    ssh_config, root with the lab key, the host key checked against the recorded one."""
    for container in NODE_CONTAINERS.values():
        proc = subprocess.run(
            ["ssh", "-F", str(SSH_DIR / "config"), "-o", "BatchMode=yes", container, "hostname"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == container


def test_nodes_run_with_capabilities_not_privileged():
    for container in NODE_CONTAINERS.values():
        host_config = inspect(container)["HostConfig"]
        assert host_config["Privileged"] is False
        # Docker reports capabilities with or without the CAP_ prefix, by version.
        caps = {cap.removeprefix("CAP_") for cap in host_config["CapAdd"]}
        assert {"SYS_ADMIN", "NET_ADMIN"} <= caps


def test_cable_network_is_internal_with_jumbo_mtu():
    net = json.loads(
        subprocess.run(
            ["docker", "network", "inspect", "gb10-lab-cx7"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )[0]
    assert net["Internal"] is True
    assert net["Options"]["com.docker.network.driver.mtu"] == "9000"
