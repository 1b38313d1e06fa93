# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_sparkrun: sparkrun v2 recipes in and out of a vllm_recipe.

The reference case is the GB10 field report's hybrid-v3 sparkrun recipe
(fixtures/sparkrun/dspark-hybrid-v3.sparkrun.yaml): it must import as the vllm role's default
recipe and export back to itself. The other cases are that recipe with sparkrun fields added
(set aside by name) or broken (refused, naming the field).
"""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from ansible_collections.gb10.serving.plugins.module_utils._sparkrun import (
    RUNTIME_CACHE_ENV,
    UNSUPPORTED_FIELDS,
    SparkrunError,
    dump_recipe,
    dump_vars_file,
    export_recipe,
    import_recipe,
    left_to_runtime_cache,
)
from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import render_command
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.test_vllm_default_recipe import (  # noqa: E501
    DEFAULTS,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.test_vllm_recipe import (
    FIXTURE,
    ROLE_VALUES,
    load_recipe,
)

FIXTURE_TEXT = FIXTURE.read_text(encoding="utf-8")
# The four JIT variables of the fixture that sparkrun 0.4's vLLM runtime manages itself;
# VLLM_CACHE_DIR and TVM_FFI_CACHE_DIR are not among its cache variables.
FIXTURE_MANAGED_ENV = [
    "TRITON_CACHE_DIR",
    "TORCH_EXTENSIONS_DIR",
    "FLASHINFER_WORKSPACE_BASE",
    "XDG_CACHE_HOME",
]


def role_default_recipe():
    with DEFAULTS.open(encoding="utf-8") as stream:
        return yaml.safe_load(stream)["vllm_recipe"]


def fixture_with(**fields):
    """The fixture's data with fields added or replaced (``...`` removes one)."""
    data = load_recipe()
    for key, value in fields.items():
        if value is ...:
            del data[key]
        else:
            data[key] = value
    return data


# --- the reference recipe, both ways ----------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(FIXTURE_TEXT, id="hybrid-v3-yaml-text"),
        pytest.param(load_recipe(), id="hybrid-v3-parsed"),
    ],
)
def test_the_field_report_recipe_round_trips(source):
    imported = import_recipe(source)
    assert imported.unsupported == {}
    assert imported.notes == []
    assert export_recipe(imported.recipe, imported.unsupported) == load_recipe()


def test_the_imported_recipe_is_the_role_default():
    assert import_recipe(FIXTURE_TEXT).recipe == role_default_recipe()


def test_the_imported_recipe_deploys_the_default_command():
    imported = import_recipe(FIXTURE_TEXT).recipe
    expected = render_command(role_default_recipe(), ROLE_VALUES)
    assert render_command(imported, ROLE_VALUES) == expected
    assert expected.startswith("vllm serve deepseek-ai/DeepSeek-V4-Flash-DSpark --host 0.0.0.0")


def test_the_exported_text_reads_back_as_the_same_recipe():
    text = dump_recipe(export_recipe(role_default_recipe()))
    assert yaml.safe_load(text) == load_recipe()
    assert import_recipe(text).recipe == role_default_recipe()


def test_the_exported_text_keeps_sparkruns_field_order_and_a_literal_command():
    text = dump_recipe(export_recipe(role_default_recipe()))
    keys = re.findall(r"^([a-z_]+):", text, flags=re.MULTILINE)
    assert keys == [
        "recipe_version",
        "model",
        "runtime",
        "min_nodes",
        "container",
        "defaults",
        "env",
        "command",
    ]
    assert "recipe_version: '2'\n" in text
    assert "  VLLM_ENABLE_PCIE_ALLREDUCE: '0'\n" in text
    assert "command: |\n  vllm serve {model} --host {host} --port {port}" in text
    assert text == dump_recipe(yaml.safe_load(text)), "the text is not stable"


def test_neither_input_is_changed():
    recipe, extra = role_default_recipe(), {"model_revision": "abc", "env.X": "{launch.node_rank}"}
    before = copy.deepcopy((recipe, extra))
    export_recipe(recipe, extra, runtime_cache=True)
    assert (recipe, extra) == before
    data = fixture_with(pre_exec=["echo hi"])
    before = copy.deepcopy(data)
    import_recipe(data)
    assert data == before


def test_a_recipe_without_recipe_version_exports_as_version_2():
    recipe = role_default_recipe()
    del recipe["recipe_version"]
    assert export_recipe(recipe)["recipe_version"] == "2"


class TaggedInt(int):
    """Ansible hands over subclasses of the plain types (its tagged values)."""


class TaggedStr(str):
    pass


def test_the_text_is_written_from_subclasses_of_plain_types():
    recipe = role_default_recipe()
    recipe["min_nodes"] = TaggedInt(2)
    recipe["model"] = TaggedStr(recipe["model"])
    assert yaml.safe_load(dump_recipe(export_recipe(recipe))) == load_recipe()


# --- what a vllm_recipe cannot honour: set aside by name, given back ---------------------

UNSUPPORTED_CASES = [
    # (id, fields added to the fixture, defaults/env changes, set-aside paths, note text)
    ("model-revision", {"model_revision": "5e0d1b7"}, {}, ["model_revision"],
     "set node_model_revision: '5e0d1b7' instead"),
    ("description", {"description": "hybrid-v3"}, {}, ["description"], "description only"),
    ("pre-exec-hook", {"pre_exec": ["pip install b12x"]}, {}, ["pre_exec"], "runs no hooks"),
    ("runtime-cache", {"runtime_cache": {"enabled": True}}, {}, ["runtime_cache"],
     "node_hf_cache_dir"),
    ("per-host-images", {"containers": [{"host": "spark2", "image": "x:1"}]}, {},
     ["containers"], "vllm_recipe.container"),
    ("max-nodes", {"max_nodes": 2}, {}, ["max_nodes"], "inventory"),
    ("v1-version-marker", {"sparkrun_version": "2"}, {}, ["sparkrun_version"],
     "older spelling"),
    ("unknown-field", {"frobnicate": 1}, {}, ["frobnicate"],
     "no field sparkrun 0.4.2 knows"),
    ("port-default", {}, {"defaults": {"port": 9000}}, ["defaults.port"],
     "set vllm_port to 9000 instead"),
    ("host-default", {}, {"defaults": {"host": "127.0.0.1"}}, ["defaults.host"],
     "vllm_bind_address"),
    ("launch-template-env", {}, {"env": {"NODE_RANK": "{launch.node_rank}"}},
     ["env.NODE_RANK"], "launch template"),
    ("config-template-env", {}, {"env": {"MY_TP": "tp={config.tensor_parallel}"}},
     ["env.MY_TP"], "launch template"),
    ("several", {"model_revision": "5e0d1b7", "readiness": {"timeout": 600}, "mods": ["a"]},
     {}, ["model_revision", "readiness", "mods"], "vllm_ready_timeout"),
]  # fmt: skip


def build_case(fields, inner):
    data = fixture_with(**fields)
    for section, values in inner.items():
        data[section].update(values)
    return data


@pytest.mark.parametrize(
    ("fields", "inner", "paths", "text"),
    [pytest.param(*case[1:], id=case[0]) for case in UNSUPPORTED_CASES],
)
def test_fields_it_cannot_honour_are_set_aside_by_name(fields, inner, paths, text):
    imported = import_recipe(build_case(fields, inner))
    assert sorted(imported.unsupported) == sorted(paths)
    assert [note.split(": not deployed, ")[0] for note in imported.notes] == paths
    assert all(note.endswith("; kept for the export.") for note in imported.notes)
    assert any(text in note for note in imported.notes), imported.notes
    # What is left deploys, and is the default recipe.
    assert imported.recipe == role_default_recipe()


@pytest.mark.parametrize(
    ("fields", "inner"),
    [pytest.param(*case[1:3], id=case[0]) for case in UNSUPPORTED_CASES],
)
def test_the_export_gives_back_what_the_import_set_aside(fields, inner):
    data = build_case(fields, inner)
    imported = import_recipe(data)
    assert export_recipe(imported.recipe, imported.unsupported) == data


def test_every_sparkrun_field_has_a_reason():
    assert all(reason.strip() for reason in UNSUPPORTED_FIELDS.values())


def test_an_escaped_template_is_a_plain_value():
    data = build_case({}, {"env": {"LITERAL": "{{launch.node_rank}}", "JSON": '{"a":1}'}})
    imported = import_recipe(data)
    assert imported.unsupported == {}
    assert imported.recipe["env"]["LITERAL"] == "{{launch.node_rank}}"


# --- bad input: refused, naming the field and the fix ------------------------------------

BAD_IMPORTS = [
    ("not-v2-version-1", fixture_with(recipe_version="1"),
     r"not a v2 recipe: its recipe_version is the string '1'.*set recipe_version: '2'"),
    ("not-v2-version-3", fixture_with(recipe_version=3),
     r"not a v2 recipe: its recipe_version is the number 3"),
    ("not-v2-v1-marker", fixture_with(sparkrun_version="1"),
     r"not a v2 recipe: its sparkrun_version is the string '1'"),
    ("not-a-mapping-list", [load_recipe()], r"the sparkrun recipe is a list, not a mapping"),
    ("not-a-mapping-text", "just some words\n",
     r"the sparkrun recipe is the string 'just some words', not a mapping"),
    ("not-a-mapping-empty", "", r"the sparkrun recipe is null, not a mapping"),
    ("bad-yaml", "recipe_version: '2'\nmodel: [unclosed\n",
     r"not valid YAML at line 3, column 1 .*fix the file's syntax"),
    ("bad-yaml-tab", "recipe_version: '2'\n\tmodel: x\n", r"not valid YAML at line 2"),
    ("missing-model", fixture_with(model=...), r"the recipe's model is missing: set it to"),
    ("no-command-quote-in-json", fixture_with(command=..., defaults={"hf_overrides": "{'a':1}"}),
     r"no command and its defaults.hf_overrides holds a single quote"),
    ("missing-container", fixture_with(container=...), r"the recipe's container is missing"),
    ("other-runtime", fixture_with(runtime="sglang"),
     r"not a vLLM recipe: its runtime is sglang\. This collection deploys only vLLM"),
    ("sglang-by-command", fixture_with(runtime=..., command="python3 -m sglang.launch_server"),
     r"its command starts with python3, so sparkrun runs it with its sglang runtime"),
    ("llama-server-by-command", fixture_with(runtime="", command="llama-server -m {model}"),
     r"with its llama-cpp runtime"),
    ("ray-runtime-mp-flag", fixture_with(runtime="vllm-ray",
     command="vllm serve {model} --distributed-executor-backend mp"),
     r"vllm-ray runtime \(a Ray cluster\), but the command's --distributed-executor-backend mp"),
    ("other-backend", fixture_with(command="vllm serve {model} --distributed-executor-backend uni"),
     r"--distributed-executor-backend uni asks vLLM for another executor backend"),
    ("literal-braced-name", fixture_with(command="vllm serve {model} --x '{{model}}'"),
     r"a literal brace pair around a name"),
    ("includes-a-base", fixture_with(include="base-recipe"),
     r"include: the recipe includes a base recipe.*sparkrun recipe show"),
    ("unfilled-placeholder", fixture_with(command="vllm serve {model} --x {nothing}"),
     r"the command uses \{nothing\} but nothing fills it"),
    ("mapping-default", fixture_with(defaults={"gen_config": {"temperature": 0.4}}),
     r"defaults.gen_config is a mapping.*quoted string"),
    ("key-not-a-name", {**load_recipe(), 7: "x"}, r"a key 7 that is not a name"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("source", "message"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_IMPORTS],
)
def test_bad_recipes_are_refused_naming_the_field(source, message):
    with pytest.raises(SparkrunError, match=message):
        import_recipe(source)


BAD_EXPORTS = [
    ("not-a-mapping", "recipe", {}, None, r"the vllm_recipe is the string 'recipe'"),
    ("missing-model", {k: v for k, v in load_recipe().items() if k != "model"}, {}, None,
     r"cannot be exported: the recipe's model is missing"),
    ("extra-not-a-mapping", load_recipe(), ["model_revision"], None,
     r"extra fields are a list, not a mapping"),
    ("extra-clashes-top", load_recipe(), {"model": "other/model"}, None,
     r"extra field model is also a field of the recipe"),
    ("extra-clashes-env", load_recipe(), {"env.XDG_CACHE_HOME": "/x"}, None,
     r"extra field env.XDG_CACHE_HOME is also set in the recipe's env"),
    ("extra-key-not-a-name", load_recipe(), {"": 1}, None, r"key '' that is not a field name"),
    ("runtime-cache-a-string", load_recipe(), {}, "yes",
     r"runtime_cache is the string 'yes': give true"),
    ("runtime-cache-unknown-key", load_recipe(), {}, {"enabled": True, "size": 3},
     r"runtime_cache has size, which sparkrun 0.4.2's runtime_cache does not take"),
    ("runtime-cache-twice", load_recipe(), {"runtime_cache": {"enabled": False}}, True,
     r"already carry a runtime_cache field"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("recipe", "extra", "runtime_cache", "message"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_EXPORTS],
)
def test_bad_exports_are_refused_naming_the_field(recipe, extra, runtime_cache, message):
    with pytest.raises(SparkrunError, match=message):
        export_recipe(recipe, extra, runtime_cache=runtime_cache)


# --- runtime_cache: the JIT caches left to sparkrun --------------------------------------


@pytest.mark.parametrize(
    ("option", "written"),
    [
        pytest.param(True, {"enabled": True}, id="true"),
        pytest.param(
            {"enabled": True, "key_by_image": True, "prune": {"max_age_days": 7}},
            {"enabled": True, "key_by_image": True, "prune": {"max_age_days": 7}},
            id="mapping",
        ),
    ],
)
def test_runtime_cache_leaves_the_managed_jit_env_to_sparkrun(option, written):
    exported = export_recipe(role_default_recipe(), runtime_cache=option)
    assert exported["runtime_cache"] == written
    left = [name for name in load_recipe()["env"] if name not in exported["env"]]
    assert left == FIXTURE_MANAGED_ENV
    assert left == left_to_runtime_cache(role_default_recipe())
    # The two JIT variables sparkrun does not manage stay, as does everything else.
    assert exported["env"] == {
        "VLLM_ENABLE_PCIE_ALLREDUCE": "0",
        "VLLM_PCIE_ALLREDUCE_BACKEND": "cpp",
        "VLLM_CACHE_DIR": "/cache/huggingface/jitcache/vllm",
        "TVM_FFI_CACHE_DIR": "/cache/huggingface/jitcache/tvm-ffi",
    }
    assert {k: v for k, v in exported.items() if k not in ("env", "runtime_cache")} == {
        k: v for k, v in load_recipe().items() if k != "env"
    }


@pytest.mark.parametrize("option", [None, False])
def test_without_runtime_cache_the_env_is_exported_as_it_is(option):
    assert export_recipe(role_default_recipe(), runtime_cache=option) == load_recipe()


def test_the_managed_list_holds_the_catch_all():
    assert "XDG_CACHE_HOME" in RUNTIME_CACHE_ENV
    assert "VLLM_CACHE_DIR" not in RUNTIME_CACHE_ENV


# --- the vars file an import writes ------------------------------------------------------


def test_the_vars_file_holds_the_recipe_and_what_was_set_aside():
    imported = import_recipe(fixture_with(model_revision="5e0d1b7"))
    text = dump_vars_file(imported)
    assert yaml.safe_load(text) == {
        "vllm_recipe": role_default_recipe(),
        "vllm_distributed_backend": "mp",
        "sparkrun_extra_fields": {"model_revision": "5e0d1b7"},
    }
    assert "#   model_revision: not deployed, " in text


def test_the_vars_file_of_a_complete_import_says_nothing_was_set_aside():
    text = dump_vars_file(import_recipe(FIXTURE_TEXT))
    assert "#   nothing.\n" in text
    assert yaml.safe_load(text)["sparkrun_extra_fields"] == {}


# --- read as sparkrun reads it -------------------------------------------------------------


def test_a_recipe_without_recipe_version_is_a_v2_recipe():
    imported = import_recipe(fixture_with(recipe_version=...))
    assert "recipe_version" not in imported.recipe
    assert export_recipe(imported.recipe)["recipe_version"] == "2"


@pytest.mark.parametrize(
    ("runtime", "command", "backend"),
    [
        pytest.param("vllm", "vllm serve {model}", "mp", id="vllm"),
        pytest.param(..., "vllm serve {model}", "mp", id="none"),
        pytest.param("", "python -m vllm.entrypoints.openai.api_server", "mp", id="unknown-cmd"),
        pytest.param("vllm-distributed", "vllm serve {model}", "mp", id="vllm-distributed"),
        pytest.param("vllm-ray", "vllm serve {model}", "ray", id="vllm-ray"),
        pytest.param("eugr-vllm", "vllm serve {model}", "ray", id="eugr-vllm"),
        pytest.param("vllm", "vllm serve {model} --distributed-executor-backend ray", "ray",
                     id="command-ray"),
        pytest.param("vllm", "vllm serve {model} --distributed_executor_backend=mp", "mp",
                     id="command-mp-underscores"),
    ],
)  # fmt: skip
def test_the_backend_is_the_one_sparkrun_runs(runtime, command, backend):
    imported = import_recipe(fixture_with(runtime=runtime, command=command))
    assert imported.backend == backend
    assert (
        imported.recipe["command"].strip() == "vllm serve {model}"
        or "vllm.entrypoints" in (imported.recipe["command"])
    )


def test_a_backend_flag_leaves_the_command_with_its_layout():
    command = "vllm serve {model} \\\n  --distributed-executor-backend ray \\\n  -tp 2\n"
    imported = import_recipe(fixture_with(command=command))
    assert imported.recipe["command"] == "vllm serve {model} \\\n  -tp 2\n"
    assert imported.recipe["runtime"] == "vllm-ray"
    assert any("vllm_distributed_backend: ray" in change for change in imported.changes)
    exported = export_recipe(imported.recipe, imported.unsupported, None, imported.backend)
    assert exported["runtime"] == "vllm-ray"


@pytest.mark.parametrize(
    ("backend", "runtime", "written"),
    [
        pytest.param("ray", "vllm", "vllm-ray", id="ray-over-vllm"),
        pytest.param("mp", "vllm-ray", "vllm-distributed", id="mp-over-vllm-ray"),
        pytest.param("mp", "vllm", "vllm", id="mp-kept"),
        pytest.param(None, "vllm-ray", "vllm-ray", id="unset"),
    ],
)
def test_the_export_makes_sparkrun_run_the_roles_backend(backend, runtime, written):
    recipe = {**role_default_recipe(), "runtime": runtime}
    assert export_recipe(recipe, distributed_backend=backend)["runtime"] == written


def test_escaped_braces_become_single_braces():
    command = 'vllm serve {model} --hf-overrides \'{{"a":{{"b":{x}}}}}\' --y \'{"c":1}\''
    imported = import_recipe(fixture_with(command=command, defaults={"x": 1, "j": "{{1}}"}))
    assert (
        imported.recipe["command"]
        == 'vllm serve {model} --hf-overrides \'{"a":{"b":{x}}}\' --y \'{"c":1}\''
    )
    assert imported.recipe["defaults"]["j"] == "{1}"
    assert render_command(imported.recipe, ROLE_VALUES).endswith(
        '--hf-overrides \'{"a":{"b":1}}\' --y \'{"c":1}\''
    )
    assert len(imported.changes) == 2


def test_the_generated_command_follows_sparkruns_flag_map():
    defaults = {
        "port": 8000,
        "host": "0.0.0.0",  # noqa: S104 - a recipe value, not a bind
        "tensor_parallel": 2,
        "trust_remote_code": True,
        "enable_prefix_caching": False,
        "enforce_eager": False,
        "max_model_len": "auto",
        "speculative_config": {"method": "mtp"},
        "nothing_maps_here": 1,
        "api_key": "k",
    }
    imported = import_recipe(fixture_with(command=..., defaults=defaults))
    assert imported.recipe["command"] == (
        "vllm serve {model} -tp {tensor_parallel} --port {port} --host {host} "
        "--max-model-len {max_model_len} --no-enable-prefix-caching --trust-remote-code "
        "--speculative-config '{speculative_config}'\n"
    )
    assert imported.recipe["defaults"] == {
        "tensor_parallel": 2,
        "max_model_len": "auto",
        "speculative_config": '{"method":"mtp"}',
    }
    assert sorted(imported.unsupported) == [
        "defaults.api_key",
        "defaults.host",
        "defaults.nothing_maps_here",
        "defaults.port",
    ]
