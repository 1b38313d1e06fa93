# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.compare_snapshots: differences between the nodes' HF snapshots."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._hf_cache import (
    HfCacheError,
    compare_manifests,
)


def compare_snapshots(value):
    """{node: hf_snapshot_info result or manifest} -> list of difference strings."""
    if not isinstance(value, Mapping):
        raise AnsibleFilterError(
            "compare_snapshots expects a mapping of node name to hf_snapshot_info result, "
            f"got {type(value).__name__}"
        )
    try:
        return compare_manifests(value)
    except HfCacheError as exc:
        raise AnsibleFilterError(f"compare_snapshots: {exc}") from exc


class FilterModule:
    """gb10.serving Hugging Face cache filters."""

    def filters(self):
        return {"compare_snapshots": compare_snapshots}
