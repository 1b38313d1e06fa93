# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A node's fabric facts and engine environment, from its plan and the GIDs found per rail.

Pure Python, no Ansible imports. Input: the node's fabric plan (``_fabric_plan``, with its
``rails``) and, per rail in the same order, the GID table rows and the one RoCE v2 IPv4 GID
selected for the rail's netdev and address (``_roce_gids.select_rocev2_ipv4``, through the
``roce_gid_info`` module). Output: ``fabric_node`` and ``fabric_engine_env``.

How NCCL is told which GID to use, per node:

* every device of the node has its RoCE v2 IPv4 GID at the same index: ``NCCL_IB_GID_INDEX``
  pins it (one rail always does, which is the single-rail behaviour);
* the indexes differ (3 on one half, 4 on the other is normal): one ``NCCL_IB_GID_INDEX``
  cannot name both, so it is left unset and NCCL picks on each device the GID of address
  family ``AF_INET`` and RoCE version 2 (``NCCL_IB_ADDR_FAMILY``,
  ``NCCL_IB_ROCE_VERSION_NUM``). That is only safe when each device holds exactly one such
  GID, which is checked here; a second IPv4 address on a half (a link-local 169.254.x.x,
  say) is an error naming it, because NCCL could pick it.

Only devices whose GID carries one of the node's fabric addresses are listed; a device with
only link-local GIDs never has a selection, so it never reaches ``NCCL_IB_HCA``.
"""

from __future__ import annotations


class FabricEnvError(ValueError):
    """The rails and their GIDs do not give a usable environment."""


def _device(rail):
    return "%s:%s" % (rail["rdma_device"], rail["rdma_port"])


def _index_listing(rail_facts):
    return ", ".join("%s %s" % (_device(rail), rail["gid_index"]) for rail in rail_facts)


def _ipv4_v2_rows(rows, device, port):
    return [
        row
        for row in rows
        if row.get("device") == device
        and row.get("port") == port
        and row.get("version") == "v2"
        and row.get("ipv4")
    ]


def fabric_facts(node, found):
    """``{"node": fabric_node, "env": fabric_engine_env}`` of one node.

    ``node`` is the node's plan (``interface``, ``ipv4``, ``prefix``, ``mtu``, ``peer``,
    ``peers``, ``rails``). ``found`` has one ``{"selected": {...}, "rows": [...],
    "source": ...}`` per rail, in rail order (the ``roce_gid_info`` results).
    """
    rails = node.get("rails") or [
        {
            "interface": node["interface"],
            "ipv4": node["ipv4"],
            "prefix": node["prefix"],
            "network": node.get("network"),
            "peers": node["peers"],
        }
    ]
    if len(found) != len(rails):
        raise FabricEnvError(f"{len(rails)} rails planned but GIDs resolved for {len(found)}")
    rail_facts = []
    for number, rail in enumerate(rails):
        selected = found[number]["selected"]
        if selected["netdev"] != rail["interface"] or selected["ipv4"] != rail["ipv4"]:
            raise FabricEnvError(
                f"the GID selected for {rail['interface']} ({rail['ipv4']}) is of "
                f"{selected['netdev']} ({selected['ipv4']})"
            )
        rail_facts.append(
            {
                "interface": rail["interface"],
                "ipv4": rail["ipv4"],
                "prefix": rail["prefix"],
                "peers": list(rail["peers"]),
                "rdma_device": selected["device"],
                "rdma_port": selected["port"],
                "gid_index": selected["index"],
                "gid": selected["gid"],
            }
        )
    devices = [_device(rail) for rail in rail_facts]
    if len(set(devices)) != len(devices):
        raise FabricEnvError(
            f"two rails resolve to one RDMA device ({', '.join(devices)}): set "
            "fabric_twin_interface to the netdev of the port's other half (`ibdev2netdev`)"
        )
    indexes = {r["gid_index"] for r in rail_facts}
    pinned = len(indexes) == 1
    if not pinned:
        for number, rail in enumerate(rail_facts):
            rows = found[number]["rows"]
            others = [
                row
                for row in _ipv4_v2_rows(rows, rail["rdma_device"], rail["rdma_port"])
                if row.get("index") != rail["gid_index"]
            ]
            if others:
                listing = ", ".join(f"{row['ipv4']} at index {row['index']}" for row in others)
                raise FabricEnvError(
                    "the GID indexes differ between this node's devices "
                    f"({_index_listing(rail_facts)}), so NCCL must pick each device's RoCE v2 "
                    "IPv4 GID itself, but "
                    f"{rail['rdma_device']} ({rail['interface']}) also holds {listing}: remove "
                    f"that address from {rail['interface']} (only {rail['ipv4']} belongs there) "
                    "or set fabric_rails: 1"
                )
    first = rail_facts[0]
    env = {
        # Socket traffic (bootstrap, gloo, TensorPipe) on the first half, never an image's
        # baked-in ifname; RDMA on every half's device.
        "NCCL_SOCKET_IFNAME": first["interface"],
        "GLOO_SOCKET_IFNAME": first["interface"],
        "TP_SOCKET_IFNAME": first["interface"],
        "UCX_NET_DEVICES": ",".join(devices),
        # '=' makes every name of the list exact (a plain name is a prefix match).
        "NCCL_IB_HCA": "=" + ",".join(devices),
        "VLLM_HOST_IP": first["ipv4"],
    }
    if pinned:
        env["NCCL_IB_GID_INDEX"] = str(first["gid_index"])
    else:
        env["NCCL_IB_ADDR_FAMILY"] = "AF_INET"
        env["NCCL_IB_ROCE_VERSION_NUM"] = "2"
    fabric_node = {
        "interface": first["interface"],
        "ipv4": first["ipv4"],
        "prefix": first["prefix"],
        "mtu": node["mtu"],
        "peer": node["peer"],
        "peers": list(node["peers"]),
        "rdma_device": first["rdma_device"],
        "rdma_port": first["rdma_port"],
        "gid_index": first["gid_index"],
        "gid": first["gid"],
        "gid_source": found[0].get("source"),
        "rails": rail_facts,
        "gid_selection": "index" if pinned else "auto",
        "gid_selection_reason": (
            f"every device has its RoCE v2 IPv4 GID at index {first['gid_index']}: "
            "NCCL_IB_GID_INDEX pins it"
            if pinned
            else f"the devices' GID indexes differ ({_index_listing(rail_facts)}): NCCL picks "
            "each device's one RoCE v2 IPv4 GID (NCCL_IB_ADDR_FAMILY=AF_INET, "
            "NCCL_IB_ROCE_VERSION_NUM=2)"
        ),
    }
    return {"node": fabric_node, "env": env}
