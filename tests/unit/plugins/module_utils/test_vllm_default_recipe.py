# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm role's default recipe is the field report's hybrid-v3 recipe, field by field.

roles/vllm/defaults/main.yml holds ``vllm_recipe``; it must equal
fixtures/sparkrun/dspark-hybrid-v3.sparkrun.yaml in every top-level key, every default and
environment variable (value and type: '0' is not 0) and the command to the character.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.test_vllm_recipe import (
    load_recipe,
)


def collection_root():
    """The directory holding galaxy.yml: the repository, or ansible-test's copy of it."""
    for directory in Path(__file__).resolve().parents:
        if (directory / "galaxy.yml").is_file():
            return directory
    raise AssertionError(f"no galaxy.yml above {__file__}")


DEFAULTS = collection_root() / "roles" / "vllm" / "defaults" / "main.yml"
EXPECTED = load_recipe()


@pytest.fixture(scope="module")
def role_recipe():
    with DEFAULTS.open(encoding="utf-8") as stream:
        defaults = yaml.safe_load(stream)
    assert isinstance(defaults, dict), DEFAULTS
    assert "vllm_recipe" in defaults, f"{DEFAULTS} does not set vllm_recipe"
    return defaults["vllm_recipe"]


def typed(value):
    """A value with its type, so that '0' and 0 (or 2 and 2.0) differ."""
    return (type(value).__name__, value)


def test_same_top_level_keys(role_recipe):
    assert sorted(role_recipe) == sorted(EXPECTED)


@pytest.mark.parametrize("key", [k for k in EXPECTED if k not in ("defaults", "env")])
def test_top_level_value(role_recipe, key):
    assert typed(role_recipe.get(key)) == typed(EXPECTED[key])


def test_same_default_names(role_recipe):
    assert sorted(role_recipe["defaults"]) == sorted(EXPECTED["defaults"])


@pytest.mark.parametrize("key", list(EXPECTED["defaults"]))
def test_default_value(role_recipe, key):
    assert typed(role_recipe["defaults"].get(key)) == typed(EXPECTED["defaults"][key])


def test_same_env_names(role_recipe):
    assert sorted(role_recipe["env"]) == sorted(EXPECTED["env"])


@pytest.mark.parametrize("name", list(EXPECTED["env"]))
def test_env_value(role_recipe, name):
    assert typed(role_recipe["env"].get(name)) == typed(EXPECTED["env"][name])


def test_command_is_the_same_to_the_character(role_recipe):
    assert role_recipe["command"] == EXPECTED["command"]
