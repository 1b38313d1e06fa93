# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters from_sparkrun_recipe and to_sparkrun_recipe.

The conversion itself is tested in module_utils/test_sparkrun.py; these tests cover the
filter glue: arguments, return types, and SparkrunError turned into AnsibleFilterError.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.gb10.serving.plugins.filter.sparkrun import FilterModule
from ansible_collections.gb10.serving.tests.unit.plugins.filter.lazy import uncopyable
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.test_vllm_recipe import (
    FIXTURE,
    load_recipe,
)

FILTERS = FilterModule().filters()
SIDECARS = Path(__file__).resolve().parents[4] / "plugins" / "filter"
FIXTURE_TEXT = FIXTURE.read_text(encoding="utf-8")


def test_from_returns_the_recipe_what_was_set_aside_and_notes():
    data = load_recipe()
    data["model_revision"] = "5e0d1b7"
    result = FILTERS["from_sparkrun_recipe"](data)
    assert sorted(result) == ["backend", "changes", "notes", "recipe", "unsupported"]
    assert result["unsupported"] == {"model_revision": "5e0d1b7"}
    assert result["notes"][0].startswith("model_revision: not deployed")
    assert "model_revision" not in result["recipe"]


@pytest.mark.parametrize("as_text", [True, "true", "yes"])
def test_from_as_text_is_a_vars_file(as_text):
    text = FILTERS["from_sparkrun_recipe"](FIXTURE_TEXT, as_text=as_text)
    assert isinstance(text, str)
    assert sorted(yaml.safe_load(text)) == [
        "sparkrun_extra_fields",
        "vllm_distributed_backend",
        "vllm_recipe",
    ]


def test_text_jinja_would_read_reaches_the_engine_as_it_is(tmp_path):
    # The vars file playbooks/import_sparkrun.yml writes. An env value with a template's
    # braces, and a command whose escaped braces sparkrun renders as "{#": Ansible must not
    # template either of them out of the vars file.
    data = load_recipe()
    data["env"] = {**data["env"], "GB10_NOTE": "{{ not_a_variable }}"}
    data["command"] = data["command"].rstrip() + " --hf-overrides '{{#}}'\n"
    text = FILTERS["from_sparkrun_recipe"](data, as_text=True)
    assert text.count("!unsafe") == 2
    vars_file = tmp_path / "vars.yml"
    vars_file.write_text(text, encoding="utf-8")
    # Read as Ansible reads a vars file: its text trusted as templates, unless tagged.
    loader = DataLoader()
    written = loader.load_from_file(str(vars_file), trusted_as_template=True)
    note = written["vllm_recipe"]["env"]["GB10_NOTE"]
    command = written["vllm_recipe"]["command"]
    assert note == "{{ not_a_variable }}"
    assert command.endswith(" --hf-overrides '{#}'\n")
    templar = Templar(loader=loader, variables={"not_a_variable": "templated"})
    assert templar.template(note) == note
    assert templar.template(command) == command
    # Text without Jinja's markers stays plain, as the corpus shows for every recipe.
    assert written["vllm_recipe"]["model"] == data["model"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param("recipe_version: '1'\n", r"not a v2 recipe", id="not-v2"),
        pytest.param("a: [b\n", r"not valid YAML", id="bad-yaml"),
        pytest.param(["x"], r"is a list, not a mapping", id="not-a-mapping"),
    ],
)
def test_from_errors_are_filter_errors_with_the_message(source, message):
    with pytest.raises(AnsibleFilterError, match="from_sparkrun_recipe: .*" + message):
        FILTERS["from_sparkrun_recipe"](source)


@pytest.mark.parametrize("name", ["from_sparkrun_recipe", "to_sparkrun_recipe"])
def test_as_text_must_be_a_boolean(name):
    source = FIXTURE_TEXT if name.startswith("from") else load_recipe()
    with pytest.raises(AnsibleFilterError, match=f"{name}: as_text must be a boolean"):
        FILTERS[name](source, as_text="maybe")


def test_to_returns_data_by_default_and_text_on_request():
    assert FILTERS["to_sparkrun_recipe"](load_recipe()) == load_recipe()
    text = FILTERS["to_sparkrun_recipe"](load_recipe(), as_text=True)
    assert yaml.safe_load(text) == load_recipe()


def test_to_gives_back_the_extra_fields():
    exported = FILTERS["to_sparkrun_recipe"](load_recipe(), {"model_revision": "5e0d1b7"})
    assert exported["model_revision"] == "5e0d1b7"


@pytest.mark.parametrize(
    ("option", "has_field"),
    [
        pytest.param("true", True, id="string-true"),
        pytest.param(True, True, id="true"),
        pytest.param({"enabled": True}, True, id="mapping"),
        pytest.param("false", False, id="string-false"),
        pytest.param(False, False, id="false"),
    ],
)
def test_to_takes_runtime_cache_as_a_boolean_or_a_mapping(option, has_field):
    exported = FILTERS["to_sparkrun_recipe"](load_recipe(), runtime_cache=option)
    assert ("runtime_cache" in exported) is has_field
    assert ("TRITON_CACHE_DIR" in exported["env"]) is not has_field


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        pytest.param(("x",), {}, r"the vllm_recipe is the string 'x'", id="not-a-mapping"),
        pytest.param(
            (load_recipe(), {"model": "y"}), {}, r"extra field model is also", id="clash"
        ),
        pytest.param((load_recipe(),), {"runtime_cache": "maybe"}, r"runtime_cache must be",
                     id="runtime-cache-not-boolean"),
    ],
)  # fmt: skip
def test_to_errors_are_filter_errors_with_the_message(args, kwargs, message):
    with pytest.raises(AnsibleFilterError, match="to_sparkrun_recipe: .*" + message):
        FILTERS["to_sparkrun_recipe"](*args, **kwargs)


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_every_filter_has_its_sidecar_documentation(name):
    with (SIDECARS / f"{name}.yml").open(encoding="utf-8") as stream:
        docs = yaml.safe_load(stream)
    assert docs["DOCUMENTATION"]["name"] == name
    assert f"gb10.serving.{name}" in docs["EXAMPLES"]


def test_both_ways_copy_plain_data_not_ansibles_containers():
    data = load_recipe()
    data["model_revision"] = "5e0d1b7"
    imported = FILTERS["from_sparkrun_recipe"](uncopyable(data))
    assert imported == FILTERS["from_sparkrun_recipe"](data)
    recipe, extra = imported["recipe"], imported["unsupported"]
    assert extra
    exported = FILTERS["to_sparkrun_recipe"](uncopyable(recipe), uncopyable(extra))
    assert exported == FILTERS["to_sparkrun_recipe"](recipe, extra)
    assert exported["model_revision"] == "5e0d1b7"
