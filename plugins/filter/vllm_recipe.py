# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters over vLLM recipes (sparkrun's v2 shape): merge, check, warn, render."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain
from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import (
    RecipeError,
    command_argv,
    merge_recipe,
    recipe_problems,
    recipe_warnings,
    render_command,
)


def render_recipe_command(recipe, values=None, argv=False):
    """The recipe's command with its placeholders filled: one line, or its arguments."""
    try:
        as_argv = boolean(argv, strict=True)
    except TypeError as exc:
        raise AnsibleFilterError(f"render_recipe_command: argv must be a boolean: {exc}") from exc
    try:
        command = render_command(recipe, values)
        return command_argv(command) if as_argv else command
    except RecipeError as exc:
        raise AnsibleFilterError(f"render_recipe_command: {exc}") from exc


def merge_recipe_filter(recipe, overrides):
    """A new recipe with the flat ``overrides`` applied (null removes a key)."""
    try:
        # Plain data first: a deep copy of Ansible's lazy containers copies their templar,
        # every variable of the play with it (about half a second a task in site.yml).
        return merge_recipe(plain(recipe), plain(overrides))
    except RecipeError as exc:
        raise AnsibleFilterError(f"merge_recipe: {exc}") from exc


def recipe_problems_filter(recipe, provided=None):
    """Every reason the recipe cannot be deployed; an empty list when there is none."""
    if provided is not None and not isinstance(provided, (list, tuple)):
        raise AnsibleFilterError(
            "recipe_problems: provided must be a list of placeholder names, for example "
            "['host', 'port']"
        )
    return recipe_problems(recipe, provided)


def recipe_warnings_filter(recipe):
    """What would deploy but run badly; an empty list when there is nothing to say."""
    return recipe_warnings(recipe)


class FilterModule:
    """gb10.serving vLLM recipe filters."""

    def filters(self):
        return {
            "render_recipe_command": render_recipe_command,
            "merge_recipe": merge_recipe_filter,
            "recipe_problems": recipe_problems_filter,
            "recipe_warnings": recipe_warnings_filter,
        }
