"""How the verifier reaches the two lab nodes: over SSH, as the play does.

`lab/labctl.py up` writes the ssh_config that maps each node's container name to its
management address, with the lab's key and the nodes' host keys. The lab inventory names
that file through a template (`{{ inventory_dir }}`), which testinfra's Ansible backend
passes to ssh unrendered; the verifier therefore opens the same ssh_config itself. Only
module runs (`host.ansible`) go through Ansible, with the lab inventory.

Each node's commands share one SSH connection (a control socket in a directory of this
process's own): without one, every command paid a fresh handshake, 0.3 to 1.3 s, and the
verifier runs about a hundred of them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import testinfra

PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3]))
INVENTORY = PROJECT / "inventory" / "lab"
SSH_CONFIG = PROJECT / ".cache" / "lab" / "ssh" / "config"
# A short path: a control socket's path must fit in a Unix socket address (about 100 bytes).
# The masters exit a minute after the last command; the directory goes with the process.
_CONTROL = tempfile.TemporaryDirectory(prefix="gb10-verify-")


def lab_host(name: str):
    """A node (node0, node1) for commands and file checks, through the lab's ssh_config."""
    return testinfra.get_host(
        f"ssh://gb10-lab-{name}",
        ssh_config=str(SSH_CONFIG),
        controlpath=f"{_CONTROL.name}/{name}",
    )


def ansible_host(name: str):
    """A node for running a module through Ansible with the lab inventory."""
    return testinfra.get_host(f"ansible://{name}?ansible_inventory={INVENTORY}")
