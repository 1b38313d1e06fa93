# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.parse_show_gids: show_gids output -> list of GID row dicts."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._roce_gids import (
    GidParseError,
    parse_show_gids,
)


def parse_show_gids_filter(text):
    """show_gids output (one string, or a list of lines) -> list of row dicts."""
    if isinstance(text, (list, tuple)):
        if not all(isinstance(line, str) for line in text):
            raise AnsibleFilterError("parse_show_gids expects a string or a list of strings")
    elif not isinstance(text, str):
        raise AnsibleFilterError(
            f"parse_show_gids expects show_gids output as a string, got {type(text).__name__}"
        )
    try:
        return [row.to_dict() for row in parse_show_gids(text)]
    except GidParseError as exc:
        raise AnsibleFilterError(f"parse_show_gids: {exc}") from exc


class FilterModule:
    """gb10.serving RoCE filters."""

    def filters(self):
        return {"parse_show_gids": parse_show_gids_filter}
