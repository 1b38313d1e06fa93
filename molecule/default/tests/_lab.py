"""How the verifier reaches the two lab nodes: over SSH, as the play does.

`lab/labctl.py up` writes the ssh_config that maps each node's container name to its
management address, with the lab's key and the nodes' host keys. The lab inventory names
that file through a template (`{{ inventory_dir }}`), which testinfra's Ansible backend
passes to ssh unrendered; the verifier therefore opens the same ssh_config itself. Only
module runs (`host.ansible`) go through Ansible, with the lab inventory.
"""

from __future__ import annotations

import os
from pathlib import Path

import testinfra

PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3]))
INVENTORY = PROJECT / "inventory" / "lab"
SSH_CONFIG = PROJECT / ".cache" / "lab" / "ssh" / "config"


def lab_host(name: str):
    """A node (node0, node1) for commands and file checks, through the lab's ssh_config."""
    return testinfra.get_host(f"ssh://gb10-lab-{name}", ssh_config=str(SSH_CONFIG))


def ansible_host(name: str):
    """A node for running a module through Ansible with the lab inventory."""
    return testinfra.get_host(f"ansible://{name}?ansible_inventory={INVENTORY}")
