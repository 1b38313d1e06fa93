# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters from_sparkrun_recipe and to_sparkrun_recipe: sparkrun v2 recipes both ways."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain
from ansible_collections.gb10.serving.plugins.module_utils._sparkrun import (
    SparkrunError,
    dump_recipe,
    dump_vars_file,
    export_recipe,
    import_recipe,
)


def _flag(filter_name, option, value):
    try:
        return boolean(value, strict=True)
    except TypeError as exc:
        raise AnsibleFilterError(
            f"{filter_name}: {option} must be a boolean (true or false): {exc}"
        ) from exc


def from_sparkrun_recipe(source, as_text=False):
    """A sparkrun v2 recipe (YAML text or data) as a vllm_recipe, with what it cannot honour."""
    text = _flag("from_sparkrun_recipe", "as_text", as_text)
    try:
        # Plain data: the import copies parts of it, and a copy of Ansible's lazy containers
        # would copy their templar with every variable of the play.
        imported = import_recipe(plain(source))
        return dump_vars_file(imported) if text else imported.as_dict()
    except SparkrunError as exc:
        raise AnsibleFilterError(f"from_sparkrun_recipe: {exc}") from exc


def to_sparkrun_recipe(
    recipe, extra=None, runtime_cache=False, as_text=False, distributed_backend=None
):
    """A vllm_recipe as a sparkrun v2 recipe: data, or with as_text=true its YAML text."""
    text = _flag("to_sparkrun_recipe", "as_text", as_text)
    if isinstance(runtime_cache, str):
        runtime_cache = _flag("to_sparkrun_recipe", "runtime_cache", runtime_cache)
    try:
        exported = export_recipe(
            plain(recipe),
            extra=plain(extra),
            runtime_cache=runtime_cache,
            distributed_backend=plain(distributed_backend),
        )
        return dump_recipe(exported) if text else exported
    except SparkrunError as exc:
        raise AnsibleFilterError(f"to_sparkrun_recipe: {exc}") from exc


class FilterModule:
    """gb10.serving sparkrun recipe filters."""

    def filters(self):
        return {
            "from_sparkrun_recipe": from_sparkrun_recipe,
            "to_sparkrun_recipe": to_sparkrun_recipe,
        }
