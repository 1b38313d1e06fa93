#!/usr/bin/python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: roce_gid_info
short_description: Find the RoCE v2 IPv4 GID index of an RDMA port
version_added: 0.1.0
description:
  - Reads the RDMA GID tables of the target, from the output of C(show_gids) or directly from
    sysfs, and returns every row.
  - Selects the one RoCE v2 GID that carries an IPv4 address, optionally restricted to a
    network device (O(netdev)) and/or an address (O(ipv4)). Its C(index) is what
    C(NCCL_IB_GID_INDEX) wants; it differs from node to node (for example 3 on one GB10 and 4
    on its peer), so resolve it on every node, every run.
  - Fails, listing every RoCE v2 IPv4 GID it saw and what to check, when no row or more than one
    row matches. It never falls back to a default index.
  - Only reads the target; never reports a change.
author:
  - gb10.serving maintainers (@gb10)
extends_documentation_fragment:
  - gb10.serving.attributes
  - gb10.serving.attributes.info_module
options:
  source:
    description:
      - Where to read the GID tables from.
      - V(show_gids) runs C(show_gids) (Mellanox mlnx-tools) found on the target's E(PATH) or in
        C(/sbin), C(/usr/sbin), C(/usr/local/sbin).
      - V(sysfs) reads C(<sysfs_root>/class/infiniband/<dev>/ports/<port>/gids/<n>) with
        C(gid_attrs/types/<n>) and C(gid_attrs/ndevs/<n>).
      - V(auto) uses V(show_gids) when the command is found, otherwise V(sysfs).
    type: str
    choices: [auto, show_gids, sysfs]
    default: auto
  sysfs_root:
    description:
      - Where sysfs is mounted, for O(source=sysfs).
      - When it is not V(/sys) and C(show_gids) is used, C(show_gids) runs with
        E(SHOW_GIDS_SYSFS_ROOT) set to it. That is the lab's hook - the lab's C(show_gids)
        stand-in reads its simulated tree from there - and the real C(show_gids) ignores it.
    type: path
    default: /sys
  netdev:
    description:
      - Only select a GID of this network device (for example V(enp1s0f1np1)).
    type: str
  ipv4:
    description:
      - Only select the GID of this IPv4 address (for example V(192.168.100.10)).
    type: str
  require_selection:
    description:
      - When V(true), fail unless exactly one RoCE v2 IPv4 GID matches O(netdev) and O(ipv4).
      - When V(false), return the rows with RV(selected=null) and the reason in
        RV(selection_error) instead of failing; for inspection. Unreadable or malformed
        tables fail either way.
    type: bool
    default: true
notes:
  - Select by both O(netdev) and O(ipv4) on hosts where several ports carry an IPv4 address;
    the DGX Spark exposes each ConnectX-7 port as two RDMA devices.
seealso:
  - plugin: gb10.serving.parse_show_gids
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Resolve the RoCE v2 IPv4 GID index of the fabric port
  gb10.serving.roce_gid_info:
    netdev: enp1s0f1np1
    ipv4: 192.168.100.10
  register: __fabric_gid

- name: Show the GID index NCCL must use on this node
  ansible.builtin.debug:
    msg: >-
      NCCL_IB_HCA={{ __fabric_gid.selected.device }}
      NCCL_IB_GID_INDEX={{ __fabric_gid.selected.index }}

- name: Read the lab's simulated tree from sysfs
  gb10.serving.roce_gid_info:
    source: sysfs
    sysfs_root: /var/lib/gb10-lab/sys
    netdev: enp1s0f1np1

- name: List every GID without requiring a match
  gb10.serving.roce_gid_info:
    require_selection: false
  register: __fabric_gids
"""

RETURN = r"""
source:
  description: Where the rows were read from.
  returned: always
  type: str
  choices: [show_gids, sysfs]
  sample: show_gids
rows:
  description:
    - Every used GID slot of every RDMA port, sorted by device, port and index.
    - Empty when the table could not be read.
  returned: always
  type: list
  elements: dict
  contains:
    device:
      description: RDMA device name.
      type: str
      sample: rocep1s0f1
    port:
      description: Port number on the device.
      type: int
      sample: 1
    index:
      description: GID table index.
      type: int
      sample: 3
    gid:
      description: The GID, 8 groups of 4 hex digits.
      type: str
      sample: "0000:0000:0000:0000:0000:ffff:c0a8:640a"
    ipv4:
      description: IPv4 address of an IPv4-mapped GID, otherwise V(null).
      type: str
      sample: 192.168.100.10
    version:
      description: V(v1) (IB or RoCE v1), V(v2) (RoCE v2), or V(null) when unknown.
      type: str
      sample: v2
    netdev:
      description: Network device of the GID, V(null) on InfiniBand ports.
      type: str
      sample: enp1s0f1np1
selected:
  description:
    - The one RoCE v2 GID with an IPv4 address matching O(netdev) and O(ipv4).
    - V(null) when O(require_selection=false) and not exactly one row matched.
  returned: success
  type: dict
  contains:
    device:
      description: RDMA device name (for C(NCCL_IB_HCA)).
      type: str
      sample: rocep1s0f1
    port:
      description: Port number on the device.
      type: int
      sample: 1
    index:
      description: GID index (for C(NCCL_IB_GID_INDEX)).
      type: int
      sample: 3
    netdev:
      description: Network device of the GID.
      type: str
      sample: enp1s0f1np1
    ipv4:
      description: IPv4 address of the GID.
      type: str
      sample: 192.168.100.10
    gid:
      description: The GID.
      type: str
      sample: "0000:0000:0000:0000:0000:ffff:c0a8:640a"
selection_error:
  description:
    - Why no row was selected, with every RoCE v2 IPv4 GID seen and what to check.
    - V(null) when a row was selected.
  returned: success
  type: str
  sample: "no RoCE v2 IPv4 GID matches netdev=enp1s0f1np1. RoCE v2 IPv4 GIDs seen: none. Check: ..."
"""

# Imports follow the documentation blocks, as validate-modules requires.
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.gb10.serving.plugins.module_utils._roce_gids import (  # noqa: E402
    GidParseError,
    GidSelectionError,
    parse_show_gids,
    read_sysfs_gids,
    select_rocev2_ipv4,
    sort_rows,
)

SELECTED_KEYS = ("device", "port", "index", "netdev", "ipv4", "gid")
# The lab's show_gids stand-in reads its tree from here; the real show_gids ignores it.
SYSFS_ROOT_ENV = "SHOW_GIDS_SYSFS_ROOT"


def run_show_gids(module, path, sysfs_root):
    """Rows printed by show_gids; fail_json when it does not exit 0."""
    environ = {}
    if os.path.normpath(sysfs_root) != "/sys":
        environ[SYSFS_ROOT_ENV] = sysfs_root
    rc, out, err = module.run_command([path], environ_update=environ)
    if rc != 0:
        module.fail_json(
            msg="%s exited with %d: %s" % (path, rc, err.strip() or out.strip()),
            rows=[],
            source="show_gids",
        )
    if err.strip():
        module.warn("%s wrote to stderr: %s" % (path, err.strip()))
    return sort_rows(parse_show_gids(out))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type="str", default="auto", choices=["auto", "show_gids", "sysfs"]),
            sysfs_root=dict(type="path", default="/sys"),
            netdev=dict(type="str"),
            ipv4=dict(type="str"),
            require_selection=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    source = params["source"]
    show_gids = None
    if source in ("auto", "show_gids"):
        show_gids = module.get_bin_path("show_gids")
        if show_gids is None and source == "show_gids":
            module.fail_json(
                msg="source=show_gids, but show_gids is not on the target's PATH nor in /sbin,"
                " /usr/sbin, /usr/local/sbin: install mlnx-tools or use source=sysfs",
                rows=[],
                source=source,
            )
        source = "show_gids" if show_gids else "sysfs"

    try:
        if source == "show_gids":
            rows = run_show_gids(module, show_gids, params["sysfs_root"])
        else:
            rows = read_sysfs_gids(params["sysfs_root"])
    except GidParseError as exc:
        module.fail_json(msg=str(exc), rows=[], source=source)

    row_dicts = [row.to_dict() for row in rows]
    try:
        row = select_rocev2_ipv4(rows, netdev=params["netdev"], ipv4=params["ipv4"])
    except GidSelectionError as exc:
        if params["require_selection"]:
            module.fail_json(msg=str(exc), rows=row_dicts, source=source)
        module.exit_json(
            changed=False, source=source, rows=row_dicts, selected=None, selection_error=str(exc)
        )
    selected = dict((key, getattr(row, key)) for key in SELECTED_KEYS)
    module.exit_json(
        changed=False, source=source, rows=row_dicts, selected=selected, selection_error=None
    )


if __name__ == "__main__":
    main()
