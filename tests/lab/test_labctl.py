"""labctl's SSH access for the lab inventory: the ssh_config it writes, and the addresses
the inventory relies on."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def labctl(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT / "lab" / "node"))
    spec = importlib.util.spec_from_file_location("labctl_under_test", ROOT / "lab" / "labctl.py")
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules.
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "SSH_DIR", tmp_path / "ssh")
    (tmp_path / "ssh").mkdir()
    yield module
    sys.modules.pop("labdocker", None)
    sys.modules.pop("image", None)


def parse_config(text: str) -> dict:
    """ssh_config blocks as {pattern: {keyword: value}}."""
    blocks, current = {}, None
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        keyword, value = line.split(None, 1)
        if keyword == "Host":
            current = blocks.setdefault(value, {})
        else:
            current[keyword] = value
    return blocks


def test_config_maps_each_node_name_to_its_management_address(labctl, tmp_path):
    key = tmp_path / "ssh" / "id_ed25519"
    lines = [f"{n.container},{n.mgmt_ipv4} ssh-ed25519 AAAA{n.name}" for n in labctl.NODES]
    config = labctl.write_ssh_config(key, lines)
    blocks = parse_config(config.read_text())
    for node in labctl.NODES:
        assert blocks[node.container] == {"HostName": node.mgmt_ipv4}
    common = blocks["gb10-lab-*"]
    assert common["User"] == "root"
    assert common["IdentityFile"] == str(key)
    # Host keys are checked, against what up recorded from the nodes.
    assert common["StrictHostKeyChecking"] == "yes"
    known = Path(common["UserKnownHostsFile"])
    assert known.read_text().splitlines() == lines


def test_addresses_are_in_the_management_subnet_and_distinct(labctl):
    addresses = [node.mgmt_ipv4 for node in labctl.NODES]
    assert len(set(addresses)) == len(addresses)
    prefix = labctl.MGMT_SUBNET.rsplit(".", 1)[0] + "."
    assert all(a.startswith(prefix) and a != labctl.MGMT_GATEWAY for a in addresses)


def test_the_lab_inventory_reaches_the_nodes_as_labctl_sets_them_up(labctl):
    group_vars = yaml.safe_load((ROOT / "inventory/lab/group_vars/gb10_cluster.yml").read_text())
    hosts = yaml.safe_load((ROOT / "inventory/lab/hosts.yml").read_text())
    head = hosts["gb10_cluster"]["children"]["gb10_head"]["hosts"]["node0"]
    by_container = {node.container: node for node in labctl.NODES}
    # Clients reach the head's API at the address labctl gives the head's container.
    assert group_vars["vllm_api_host"] == by_container[head["ansible_host"]].mgmt_ipv4
    # The ssh connection reads the config up writes, from the checkout's .cache.
    assert group_vars["ansible_user"] == "root"
    config = group_vars["ansible_ssh_common_args"].removeprefix("-F ")
    config = config.replace("{{ inventory_dir }}", str(ROOT / "inventory" / "lab"))
    assert Path(config).resolve() == (ROOT / ".cache" / "lab" / "ssh" / "config").resolve()


def _hosts(path: Path) -> dict:
    """Host variables of a YAML inventory (or overlay), by host."""
    found = {}

    def walk(tree):
        for body in (tree or {}).values():
            body = body or {}
            for host, variables in (body.get("hosts") or {}).items():
                found.setdefault(host, {}).update(variables or {})
            walk(body.get("children"))

    walk(yaml.safe_load(path.read_text()))
    return found


def test_the_inventories_give_each_node_the_addresses_labctl_connects_it_with(labctl):
    """The lab inventory (and the three-node overlay) address both halves as labctl wires
    them: first half on the cable network, second half on its own, every address once."""
    hosts = _hosts(ROOT / "inventory" / "lab" / "hosts.yml")
    hosts.update(_hosts(ROOT / "tests" / "integration" / "inventories" / "three_nodes.yml"))
    seen = []
    for node in labctl.ALL_NODES:
        variables = hosts[node.name]
        assert variables["ansible_host"] == node.container
        assert variables["fabric_address"] == f"{node.fabric_ipv4}/24"
        assert variables["fabric_twin_address"] == f"{node.twin_ipv4}/24"
        seen += [node.mgmt_ipv4, node.fabric_ipv4, node.twin_ipv4]
    assert len(seen) == len(set(seen))
    # node0's halves agree on the GID index, node1's and node2's do not: both ways of
    # telling NCCL the GID run in the lab.
    agree = {node.name: node.gid_index == node.twin_gid_index for node in labctl.ALL_NODES}
    assert agree == {"node0": True, "node1": False, "node2": False}
