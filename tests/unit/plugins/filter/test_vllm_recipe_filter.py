# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters render_recipe_command, merge_recipe, recipe_problems, recipe_warnings.

The parser's behaviour is tested in module_utils/test_vllm_recipe.py; these tests cover the
filter glue: arguments, return types, and RecipeError turned into AnsibleFilterError.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.vllm_recipe import FilterModule
from ansible_collections.gb10.serving.tests.unit.plugins.filter.lazy import uncopyable
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.test_vllm_recipe import (
    FIXTURE_ARGV,
    ROLE_VALUES,
    SPECULATIVE,
    load_recipe,
)

FILTERS = FilterModule().filters()
SIDECARS = Path(__file__).resolve().parents[4] / "plugins" / "filter"


def test_render_returns_one_line_by_default():
    command = FILTERS["render_recipe_command"](load_recipe(), ROLE_VALUES)
    assert isinstance(command, str)
    assert "\n" not in command
    assert command.endswith(f"--speculative-config '{SPECULATIVE}'")


@pytest.mark.parametrize("argv", [True, "true", "yes", 1])
def test_render_returns_the_arguments_with_argv_true(argv):
    assert FILTERS["render_recipe_command"](load_recipe(), ROLE_VALUES, argv=argv) == FIXTURE_ARGV


@pytest.mark.parametrize("argv", [False, "false", "no", 0])
def test_render_returns_a_string_with_argv_false(argv):
    assert isinstance(FILTERS["render_recipe_command"](load_recipe(), ROLE_VALUES, argv), str)


def test_render_rejects_an_argv_that_is_not_a_boolean():
    with pytest.raises(AnsibleFilterError, match="argv must be a boolean"):
        FILTERS["render_recipe_command"](load_recipe(), ROLE_VALUES, argv="maybe")


@pytest.mark.parametrize(
    ("recipe", "values", "message"),
    [
        pytest.param(load_recipe(), {"port": 8000}, r"uses \{host\} but nothing", id="unknown"),
        pytest.param("recipe", None, "the recipe is the string 'recipe'", id="not-a-mapping"),
        pytest.param(
            {"command": "vllm serve --x '{x}", "defaults": {"x": 1}},
            None,
            "No closing quotation",
            id="unbalanced",
        ),
    ],
)
def test_render_errors_are_filter_errors_with_the_message(recipe, values, message):
    with pytest.raises(AnsibleFilterError, match="render_recipe_command: .*" + message):
        FILTERS["render_recipe_command"](recipe, values, argv=True)


def test_merge_applies_flat_overrides():
    merged = FILTERS["merge_recipe"](load_recipe(), {"max_model_len": 262144, "gen_config": None})
    assert merged["defaults"]["max_model_len"] == 262144
    assert "gen_config" not in merged["defaults"]


@pytest.mark.parametrize("overrides", ["max_model_len=262144", ["max_model_len"]])
def test_merge_errors_are_filter_errors_naming_the_variable(overrides):
    with pytest.raises(AnsibleFilterError, match="merge_recipe: vllm_recipe_overrides is"):
        FILTERS["merge_recipe"](load_recipe(), overrides)


def test_problems_come_back_as_a_list_never_an_exception():
    assert FILTERS["recipe_problems"](load_recipe()) == []
    assert FILTERS["recipe_problems"](load_recipe(), ["host", "port"]) == []
    problems = FILTERS["recipe_problems"](load_recipe(), ["host"])
    assert len(problems) == 1
    assert "{port}" in problems[0]
    assert len(FILTERS["recipe_problems"](None)) == 1


def test_problems_reject_provided_that_is_not_a_list():
    with pytest.raises(AnsibleFilterError, match="provided must be a list"):
        FILTERS["recipe_problems"](load_recipe(), "host")


def test_warnings_come_back_as_a_list():
    assert FILTERS["recipe_warnings"](load_recipe()) == []
    merged = FILTERS["merge_recipe"](load_recipe(), {"max_cudagraph_capture_size": 8})
    warnings = FILTERS["recipe_warnings"](merged)
    assert len(warnings) == 1
    assert "max_cudagraph_capture_size 8" in warnings[0]


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_every_filter_has_its_sidecar_documentation(name):
    with (SIDECARS / f"{name}.yml").open(encoding="utf-8") as stream:
        docs = yaml.safe_load(stream)
    assert docs["DOCUMENTATION"]["name"] == name
    assert f"gb10.serving.{name}" in docs["EXAMPLES"]


def test_merge_copies_plain_data_not_ansibles_containers():
    recipe = load_recipe()
    overrides = {"max_model_len": 262144, "env": {"EXTRA": "1"}}
    merged = FILTERS["merge_recipe"](uncopyable(recipe), uncopyable(overrides))
    assert merged == FILTERS["merge_recipe"](recipe, overrides)
    assert merged["defaults"]["max_model_len"] == 262144
    assert merged["env"]["EXTRA"] == "1"
