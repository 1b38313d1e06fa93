"""Build and run the gb10.serving lab: two simulated GB10 nodes on one Docker engine.

    labctl.py image          build the node and engine images unless images of the same
                             inputs exist (the engine image is also tagged gb10-lab-engine:lab);
                             --only node|engine builds one of them
    labctl.py up             create the networks and both nodes (idempotent); --nodes 3 adds
                             node2 on the same networks (a switch's third Spark), and a
                             later `up` without it removes node2 again
    labctl.py down [--purge] remove the nodes, their engine containers and the networks;
                             --purge also deletes the per-node host directories
    labctl.py status         print one line per node
    labctl.py production-hub     serve its checkpoint from the throttled lab hub (foreground)

What is simulated and how (see DESIGN.md, "The lab"):

* each node is a Debian container with systemd as PID 1, built locally with mmdebstrap;
* ``gb10-lab-mgmt`` is the management network, ``gb10-lab-cx7`` stands for the direct
  ConnectX-7 cable (MTU 9000, no way out) as the port's first PCIe half sees it, and
  ``gb10-lab-cx7-p2`` for its second half (a GB10 shows each port as two RDMA devices with a
  netdev each); inside each node the interfaces are renamed to the real GB10 names
  ``enp1s0f1np1`` and ``enP2p1s0f1np1`` and left as a new port is: no address, MTU 1500
  (the fabric role configures them);
* each node gets an RDMA GID tree in the real sysfs layout (``lab/rdma/gid_tree.py``) at
  ``/var/lib/gb10-lab/sys`` and a ``show_gids`` stand-in that prints it;
* each node gets the host Docker socket, and a host directory of its own mounted at the
  identical path, so engine containers it starts can bind-mount what the node sees;
* the controller reaches each node over SSH, as it reaches a Spark: ``up`` makes a key pair
  in the checkout's ``.cache/lab/ssh/``, authorizes it for root on each node, records each
  node's host key, and writes the ``ssh_config`` that maps a node's container name (its
  ``ansible_host``) to its fixed management address.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

LAB_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(LAB_DIR / "node"))
sys.path.insert(1, str(LAB_DIR))

from image import LABEL, build_image, image_tag  # noqa: E402
from labdocker import docker, exists, log  # noqa: E402


def _engine_image():
    """lab/engine/image.py, loaded under its own name (lab/node has an image.py too)."""
    spec = importlib.util.spec_from_file_location("engine_image", LAB_DIR / "engine" / "image.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MGMT_NETWORK = "gb10-lab-mgmt"
# A fixed management subnet, so the lab inventory can name who may reach the API: this
# machine is the bridge's gateway (MGMT_GATEWAY); the firewall tests add an outsider.
MGMT_SUBNET = "10.219.0.0/24"
MGMT_GATEWAY = "10.219.0.1"
# What the lab inventory's ssh connection reads (ansible_ssh_common_args names the config).
SSH_DIR = LAB_DIR.parent / ".cache" / "lab" / "ssh"
CABLE_NETWORK = "gb10-lab-cx7"
CABLE_SUBNET = "192.168.100.0/24"
CABLE_MTU = 9000
# A ConnectX-7 port's MTU out of the box; the fabric role raises it.
FACTORY_MTU = 1500
FABRIC_IFNAME = "enp1s0f1np1"
# The same port's second PCIe half (fabric_rails: 2), on a segment of its own.
TWIN_NETWORK = "gb10-lab-cx7-p2"
TWIN_SUBNET = "192.168.101.0/24"
TWIN_IFNAME = "enP2p1s0f1np1"
# Where each node finds its lab RDMA tree; show_gids reads it by default.
NODE_SYSFS_ROOT = "/var/lib/gb10-lab/sys"
# /dev/shm of each node, which its engine shares (2 GiB; the CPU engine needs about 160 MiB).
NODE_SHM_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class Node:
    """One simulated GB10 node."""

    name: str
    mgmt_ipv4: str
    fabric_ipv4: str
    gid_index: int
    twin_ipv4: str
    twin_gid_index: int

    @property
    def container(self) -> str:
        return f"gb10-lab-{self.name}"


# The field report's cluster: the RoCE v2 IPv4 GID sits at index 3 on node0, 4 on node1.
# The second halves hold theirs at 3: node0's halves agree (NCCL_IB_GID_INDEX is pinned),
# node1's differ (NCCL picks each device's GID), so both branches of the fabric role run.
NODES = (
    Node("node0", "10.219.0.10", "192.168.100.10", 3, "192.168.101.10", 3),
    Node("node1", "10.219.0.11", "192.168.100.11", 4, "192.168.101.11", 3),
)
# A third Spark behind a switch, for the fabric's N-node checks (`up --nodes 3`); its halves'
# GID indexes differ too.
EXTRA_NODES = (Node("node2", "10.219.0.12", "192.168.100.12", 3, "192.168.101.12", 4),)
ALL_NODES = NODES + EXTRA_NODES


def host_root() -> Path:
    """Directory on the Docker host holding one sub-directory per node."""
    return Path(os.environ.get("GB10_LAB_ROOT", "/var/lib/gb10-lab"))


# --- up / down ----------------------------------------------------------------------------


def cgroup_args() -> list[str]:
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():  # unified (v2) hierarchy
        return ["--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw"]
    return ["-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro"]


def ensure_networks() -> None:
    if exists("network", MGMT_NETWORK):
        subnet = docker(
            "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}}{{end}}", MGMT_NETWORK
        ).stdout.strip()
        if subnet != MGMT_SUBNET:
            sys.exit(
                f"{MGMT_NETWORK} has subnet {subnet}, not {MGMT_SUBNET}: an older lab. "
                "Run `labctl.py down` (the caches stay), then `labctl.py up`."
            )
    else:
        docker(
            "network",
            "create",
            "--label",
            LABEL,
            "--subnet",
            MGMT_SUBNET,
            "--gateway",
            MGMT_GATEWAY,
            MGMT_NETWORK,
        )
    for network, subnet in ((CABLE_NETWORK, CABLE_SUBNET), (TWIN_NETWORK, TWIN_SUBNET)):
        if not exists("network", network):
            docker(
                "network",
                "create",
                "--internal",
                "--label",
                LABEL,
                "--subnet",
                subnet,
                "-o",
                f"com.docker.network.driver.mtu={CABLE_MTU}",
                network,
            )


def lay_gid_tree(node: Node) -> Path:
    root = host_root() / node.name / "sys"
    subprocess.run(
        [
            sys.executable,
            str(LAB_DIR / "rdma" / "gid_tree.py"),
            "--root",
            str(root),
            "--node",
            node.name,
            "--fabric-netdev",
            FABRIC_IFNAME,
            "--fabric-ipv4",
            node.fabric_ipv4,
            "--fabric-gid-index",
            str(node.gid_index),
            "--twin-netdev",
            TWIN_IFNAME,
            "--twin-ipv4",
            node.twin_ipv4,
            "--twin-gid-index",
            str(node.twin_gid_index),
        ],
        check=True,
    )
    return root


def node_running(node: Node, tag: str) -> bool:
    proc = docker("inspect", node.container, check=False)
    if proc.returncode != 0:
        return False
    info = json.loads(proc.stdout)[0]
    return (
        info["State"]["Running"]
        and info["Config"]["Image"] == tag
        and info["HostConfig"]["IpcMode"] == "shareable"
        and info["HostConfig"]["ShmSize"] == NODE_SHM_BYTES
        and info["NetworkSettings"]["Networks"].get(MGMT_NETWORK, {}).get("IPAddress")
        == node.mgmt_ipv4
        and TWIN_NETWORK in info["NetworkSettings"]["Networks"]
    )


def start_node(node: Node, tag: str) -> None:
    docker("rm", "-f", node.container, check=False)
    node_dir = host_root() / node.name
    node_dir.mkdir(parents=True, exist_ok=True)
    sysfs = lay_gid_tree(node)
    docker(
        "run",
        "-d",
        "--name",
        node.container,
        "--hostname",
        node.container,
        "--label",
        f"{LABEL}=node",
        "--stop-signal",
        "SIGRTMIN+3",
        "--cap-add",
        "SYS_ADMIN",
        "--cap-add",
        "NET_ADMIN",
        # The engine joins the node's IPC namespace, as it uses the host's on a Spark; vLLM's
        # shared-memory queues need more than Docker's default 64 MB /dev/shm.
        "--ipc",
        "shareable",
        "--shm-size",
        str(NODE_SHM_BYTES),
        "--tmpfs",
        "/run",
        "--tmpfs",
        "/run/lock",
        *cgroup_args(),
        "-v",
        "/var/run/docker.sock:/var/run/docker.sock",
        "-v",
        f"{node_dir}:{node_dir}",
        "-v",
        f"{sysfs}:{NODE_SYSFS_ROOT}:ro",
        "--network",
        MGMT_NETWORK,
        "--ip",
        node.mgmt_ipv4,
        tag,
    )
    docker("network", "connect", "--ip", node.fabric_ipv4, CABLE_NETWORK, node.container)
    docker("network", "connect", "--ip", node.twin_ipv4, TWIN_NETWORK, node.container)
    wait_for_systemd(node)
    factory_reset_cable_interface(node, node.fabric_ipv4, FABRIC_IFNAME)
    factory_reset_cable_interface(node, node.twin_ipv4, TWIN_IFNAME)


def node_exec(node: Node, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return docker("exec", node.container, *cmd, check=check)


def wait_for_systemd(node: Node, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        state = node_exec(node, "systemctl", "is-system-running", check=False).stdout.strip()
        if state in ("running", "degraded"):
            return
        time.sleep(1)
    raise SystemExit(f"{node.container}: systemd did not finish booting (state {state!r})")


def factory_reset_cable_interface(node: Node, ipv4: str, ifname: str) -> None:
    """Leave a half of the cabled port as a new GB10 has it: real name, no address, MTU 1500.

    Docker gives the interface ``ipv4`` and the network's MTU; a real CX-7 port starts
    with neither, so the fabric role must configure both for real.
    """
    addrs = json.loads(node_exec(node, "ip", "-j", "-4", "addr", "show").stdout)
    for link in addrs:
        if any(a.get("local") == ipv4 for a in link.get("addr_info", [])):
            current = link["ifname"]
            break
    else:
        raise SystemExit(f"{node.container}: no interface holds {ipv4}")
    node_exec(node, "ip", "link", "set", "dev", current, "down")
    if current != ifname:
        node_exec(node, "ip", "link", "set", "dev", current, "name", ifname)
    node_exec(node, "ip", "addr", "flush", "dev", ifname)
    node_exec(node, "ip", "link", "set", "dev", ifname, "mtu", str(FACTORY_MTU))
    node_exec(node, "ip", "link", "set", "dev", ifname, "up")


def ssh_key() -> Path:
    """The controller's lab key pair (made once; the checkout's .cache is ignored by git)."""
    key = SSH_DIR / "id_ed25519"
    if not key.exists():
        SSH_DIR.mkdir(parents=True, exist_ok=True)
        SSH_DIR.chmod(0o700)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gb10-lab", "-f", str(key)],
            check=True,
        )
    return key


def authorize_ssh(node: Node, key: Path) -> str:
    """Let the key log in as root on the node; return the node's known_hosts line."""
    public = key.with_suffix(".pub").read_text().strip()
    node_exec(
        node,
        "sh",
        "-c",
        'install -d -m 0700 /root/.ssh && printf "%s\\n" "$1" > /root/.ssh/authorized_keys'
        " && chmod 0600 /root/.ssh/authorized_keys",
        "-",
        public,
    )
    host_key = node_exec(node, "cat", "/etc/ssh/ssh_host_ed25519_key.pub").stdout.split()
    return f"{node.container},{node.mgmt_ipv4} {host_key[0]} {host_key[1]}"


def write_ssh_config(key: Path, known_hosts: list[str], nodes=NODES) -> Path:
    """The ssh_config the lab inventory passes with -F: each node by its container name."""
    (SSH_DIR / "known_hosts").write_text("".join(f"{line}\n" for line in known_hosts))
    blocks = [f"Host {node.container}\n  HostName {node.mgmt_ipv4}\n" for node in nodes]
    config = SSH_DIR / "config"
    config.write_text(
        "# Written by lab/labctl.py up; the lab inventory reads it (ansible_ssh_common_args).\n"
        + "".join(blocks)
        + "Host gb10-lab-*\n"
        "  User root\n"
        f"  IdentityFile {key}\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {SSH_DIR / 'known_hosts'}\n"
        "  StrictHostKeyChecking yes\n"
        # A node that stops answering (paused, removed) ends its shared connection quickly,
        # so the next run's connection attempt fails instead of hanging on it.
        "  ServerAliveInterval 5\n"
        "  ServerAliveCountMax 2\n"
        "  LogLevel ERROR\n"
    )
    return config


def up(count: int = 2) -> None:
    """The lab with exactly ``count`` nodes: the two of NODES, and node2 when asked for."""
    tag = build_image()
    _engine_image().build_image()
    ensure_networks()
    wanted = ALL_NODES[:count]
    for node in ALL_NODES[count:]:
        remove_node(node)
    for node in wanted:
        if node_running(node, tag):
            log(f"{node.container} is running")
            lay_gid_tree(node)
            continue
        log(f"starting {node.container}")
        start_node(node, tag)
    key = ssh_key()
    write_ssh_config(key, [authorize_ssh(node, key) for node in wanted], wanted)
    status()


def remove_node(node: Node) -> None:
    """Remove an extra node and every container it started (its engine, its downloads)."""
    names = [name for name in lab_containers() if name.startswith(node.container)]
    if names:
        log(f"removing {', '.join(names)}")
        docker("rm", "-f", "-v", *names)
    shutil.rmtree(host_root() / node.name, ignore_errors=True)


def lab_containers() -> list[str]:
    """The nodes and every container they started (engine containers carry the node name)."""
    out = docker("ps", "-a", "--format", "{{.Names}}").stdout.split()
    return [name for name in out if name.startswith("gb10-lab-")]


def down(purge: bool) -> None:
    names = lab_containers()
    if names:
        docker("rm", "-f", "-v", *names)
    for net in (TWIN_NETWORK, CABLE_NETWORK, MGMT_NETWORK):
        if exists("network", net):
            docker("network", "rm", net)
    if purge:
        for node in ALL_NODES:
            shutil.rmtree(host_root() / node.name, ignore_errors=True)
    log("down")


def status() -> None:
    for node in ALL_NODES:
        proc = docker(
            "inspect", "-f", "{{.State.Status}} {{.Config.Image}}", node.container, check=False
        )
        state = proc.stdout.strip() if proc.returncode == 0 else "absent"
        if node in NODES or state != "absent":
            print(f"{node.container}: {state}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    image_p = sub.add_parser("image")
    image_p.add_argument("--only", choices=["node", "engine"])
    sub.add_parser("image-tag")
    up_p = sub.add_parser("up")
    up_p.add_argument("--nodes", type=int, choices=[2, 3], default=2)
    down_p = sub.add_parser("down")
    down_p.add_argument("--purge", action="store_true")
    sub.add_parser("status")
    hub_p = sub.add_parser("production-hub")
    hub_p.add_argument("--log", type=Path, help="the hub's request log (default: stdout)")
    args = parser.parse_args(argv)
    if args.command == "image":
        if args.only != "engine":
            build_image()
        if args.only != "node":
            _engine_image().build_image()
    elif args.command == "image-tag":
        print(image_tag())
        print(_engine_image().image_tag())
    elif args.command == "up":
        up(args.nodes)
    elif args.command == "down":
        down(args.purge)
    elif args.command == "production-hub":
        import production

        # The hub replaces this process: a signal to this PID reaches the hub itself.
        command = production.hub_command(args.log)
        os.execv(command[0], command)  # noqa: S606 (no shell: the argv as it is)
    else:
        status()
    return 0


if __name__ == "__main__":
    sys.exit(main())
