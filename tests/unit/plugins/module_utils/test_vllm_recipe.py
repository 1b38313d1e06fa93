# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_vllm_recipe: checking, merging and rendering sparkrun v2 recipes.

The reference case is the GB10 field report's hybrid-v3 recipe
(fixtures/sparkrun/dspark-hybrid-v3.sparkrun.yaml); the bad cases are that recipe with one
field changed.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import (
    RecipeError,
    command_argv,
    format_value,
    merge_recipe,
    placeholders,
    recipe_problems,
    recipe_value,
    recipe_warnings,
    render_command,
)

FIXTURE = (
    Path(__file__).resolve().parent / "fixtures" / "sparkrun" / "dspark-hybrid-v3.sparkrun.yaml"
)
ROLE_VALUES = {"host": "0.0.0.0", "port": 8000}  # noqa: S104 - the engine listens on all addresses

FIXTURE_PLACEHOLDERS = [
    "model",
    "host",
    "port",
    "tensor_parallel",
    "kv_cache_dtype",
    "gpu_memory_utilization",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "max_cudagraph_capture_size",
    "compilation_config",
    "tokenizer_mode",
    "tool_call_parser",
    "reasoning_parser",
    "gen_config",
    "speculative_config",
]

SPECULATIVE = '{"method":"dspark","num_speculative_tokens":3,"draft_sample_method":"probabilistic"}'
COMPILATION = '{"cudagraph_mode":"FULL_AND_PIECEWISE","custom_ops":["all"]}'

# The fixture rendered with ROLE_VALUES, split as a shell would: what the engine must get.
FIXTURE_ARGV = [
    "vllm", "serve", "deepseek-ai/DeepSeek-V4-Flash-DSpark",
    "--host", ROLE_VALUES["host"], "--port", "8000", "--trust-remote-code",
    "-tp", "2", "--kv-cache-dtype", "fp8", "--block-size", "256", "--load-format", "auto",
    "--gpu-memory-utilization", "0.85", "--max-model-len", "393216",
    "--max-num-seqs", "128", "--max-num-batched-tokens", "4096",
    "--max-cudagraph-capture-size", "128",
    "--compilation-config", COMPILATION,
    "--async-scheduling", "--no-scheduler-reserve-full-isl",
    "--enable-chunked-prefill", "--enable-prefix-caching", "--enable-flashinfer-autotune",
    "--tokenizer-mode", "deepseek_v4", "--tool-call-parser", "deepseek_v4",
    "--reasoning-parser", "deepseek_v4",
    "--enable-auto-tool-choice", "--override-generation-config", '{"temperature":0.4}',
    "--default-chat-template-kwargs.thinking=true",
    "--default-chat-template-kwargs.reasoning_effort=high",
    "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4", "--moe-backend", "b12x",
    "--disable-custom-all-reduce",
    "--speculative-config", SPECULATIVE,
]  # fmt: skip


def load_recipe():
    """The hybrid-v3 recipe as YAML gives it (a fresh copy every call)."""
    with FIXTURE.open(encoding="utf-8") as stream:
        return yaml.safe_load(stream)


@pytest.fixture
def recipe():
    return load_recipe()


def changed(**fields):
    """The fixture with top-level fields replaced (``...`` removes a field)."""
    result = load_recipe()
    for key, value in fields.items():
        if value is ...:
            del result[key]
        else:
            result[key] = value
    return result


def with_defaults(**values):
    """The fixture with defaults replaced (``...`` removes a default)."""
    result = load_recipe()
    for key, value in values.items():
        if value is ...:
            del result["defaults"][key]
        else:
            result["defaults"][key] = value
    return result


def with_env(**values):
    result = load_recipe()
    result["env"].update(values)
    return result


# --- the fixture itself ---------------------------------------------------------------


def test_fixture_is_the_field_report_recipe(recipe):
    assert recipe["recipe_version"] == "2"
    assert recipe["runtime"] == "vllm"
    assert recipe["min_nodes"] == 2
    assert recipe["defaults"]["max_cudagraph_capture_size"] == 128
    assert recipe["defaults"]["speculative_config"] == SPECULATIVE
    assert recipe["env"]["VLLM_ENABLE_PCIE_ALLREDUCE"] == "0"  # a string, as quoted


def test_fixture_has_no_problems_and_no_warnings(recipe):
    assert recipe_problems(recipe) == []
    assert recipe_problems(recipe, provided=["host", "port"]) == []
    assert recipe_warnings(recipe) == []


# --- recipe_problems --------------------------------------------------------------------

PROBLEMS = [
    pytest.param(changed(model=...), ["model is missing", "Hugging Face repo id"], id="no-model"),
    pytest.param(changed(model="  "), ["model is empty"], id="blank-model"),
    pytest.param(changed(model=["a"]), ["model is a list, not a string"], id="list-model"),
    pytest.param(changed(container=...), ["container is missing", "engine image"], id="no-image"),
    pytest.param(changed(container=""), ["container is empty"], id="empty-image"),
    pytest.param(changed(command=...), ["command is missing"], id="no-command"),
    pytest.param(changed(command=["vllm", "serve"]), ["command is a list"], id="list-command"),
    pytest.param(
        changed(runtime="sglang"), ["runtime is the string 'sglang'", "vllm"], id="sglang"
    ),
    pytest.param(changed(runtime=None), ["runtime is null"], id="null-runtime"),
    pytest.param(
        changed(defaults=["a"]), ["defaults is a list, not a mapping"], id="list-defaults"
    ),
    pytest.param(changed(defaults=None), ["defaults is null, not a mapping"], id="null-defaults"),
    pytest.param(
        with_defaults(gen_config={"temperature": 0.4}),
        ["defaults.gen_config is a mapping", "quoted string"],
        id="defaults-mapping-value",
    ),
    pytest.param(
        with_defaults(max_num_seqs=None),
        ["defaults.max_num_seqs is null, not a string, number or boolean"],
        id="defaults-null-value",
    ),
    pytest.param(
        with_defaults(**{"max-num-seqs": 64}),
        ["defaults key 'max-num-seqs' is not a valid placeholder name"],
        id="defaults-dashed-key",
    ),
    pytest.param(changed(env="A=1"), ["env is the string 'A=1', not a mapping"], id="string-env"),
    pytest.param(
        with_env(**{"1CACHE": "x"}),
        ["env key '1CACHE' is not a valid environment variable name"],
        id="env-digit-name",
    ),
    pytest.param(
        with_env(**{"CACHE-DIR": "x"}),
        ["env key 'CACHE-DIR' is not a valid"],
        id="env-dash-name",
    ),
    pytest.param(with_env(NCCL_DEBUG=None), ["env.NCCL_DEBUG is null"], id="env-null-value"),
    pytest.param(with_env(NCCL_DEBUG=["INFO"]), ["env.NCCL_DEBUG is a list"], id="env-list-value"),
    pytest.param(changed(min_nodes=0), ["min_nodes is the number 0", "at least 1"], id="nodes-0"),
    pytest.param(changed(min_nodes=-2), ["min_nodes is the number -2"], id="nodes-negative"),
    pytest.param(changed(min_nodes="2"), ["min_nodes is the string '2'"], id="nodes-string"),
    pytest.param(changed(min_nodes=True), ["min_nodes is the boolean true"], id="nodes-bool"),
    pytest.param(changed(min_nodes=1.5), ["min_nodes is the number 1.5"], id="nodes-float"),
    pytest.param(changed(recipe_version="1"), ["recipe_version is the string '1'"], id="v1"),
    pytest.param(changed(recipe_version=2.0), ["recipe_version is the number 2.0"], id="v2-float"),
    pytest.param(
        changed(command="vllm serve {model} --override-generation-config '{gen_config}"),
        ["cannot be split into arguments", "No closing quotation", "close every quote"],
        id="unbalanced-quote",
    ),
]


@pytest.mark.parametrize(("bad", "expected"), PROBLEMS)
def test_each_bad_field_is_one_problem_naming_it(bad, expected):
    problems = recipe_problems(bad)
    assert len(problems) == 1, problems
    for text in expected:
        assert text in problems[0]


@pytest.mark.parametrize("value", [None, "recipe", ["model"], 3])
def test_a_recipe_that_is_not_a_mapping_is_one_problem(value):
    problems = recipe_problems(value)
    assert len(problems) == 1
    assert "not a mapping" in problems[0]


def test_every_problem_is_reported_at_once():
    bad = {
        "recipe_version": "3",
        "runtime": "sglang",
        "min_nodes": 0,
        "defaults": {"a": [1]},
        "env": {"B-C": "1"},
    }
    problems = recipe_problems(bad)
    expected = [
        "recipe_version is the string '3'",
        "model is missing",
        "container is missing",
        "command is missing",
        "runtime is the string 'sglang'",
        "min_nodes is the number 0",
        "defaults.a is a list",
        "env key 'B-C'",
    ]
    assert len(problems) == len(expected), problems
    for problem, text in zip(problems, expected, strict=True):
        assert text in problem


GOOD = [
    pytest.param(changed(recipe_version=2), id="version-as-int"),
    pytest.param(changed(recipe_version=..., runtime=..., min_nodes=...), id="optional-fields"),
    pytest.param(changed(env=...), id="no-env"),
    pytest.param(changed(env={}), id="empty-env"),
    pytest.param(changed(min_nodes=1), id="one-node"),
    pytest.param(changed(description="hybrid-v3", metadata={"owner": "x"}), id="extra-fields"),
    pytest.param(with_defaults(enforce_eager=False, temperature=0.4), id="bool-and-float"),
    pytest.param(
        changed(defaults=..., command="vllm serve {model} --port {port}"), id="no-defaults"
    ),
]


@pytest.mark.parametrize("good", GOOD)
def test_valid_variants_have_no_problems(good):
    assert recipe_problems(good) == []


def test_placeholders_nothing_fills_are_a_problem_only_when_asked():
    recipe = changed(command="vllm serve {model} --port {port} --seed {seed} {seed}")
    assert recipe_problems(recipe) == []
    problems = recipe_problems(recipe, provided=["host", "port"])
    assert len(problems) == 1
    assert "uses {seed} but nothing fills it in" in problems[0]
    assert recipe_problems(recipe, provided=["port", "seed"]) == []


# --- merge_recipe -----------------------------------------------------------------------


def test_merge_returns_a_new_recipe_and_leaves_both_inputs_alone(recipe):
    overrides = {"env": {"NCCL_DEBUG": "INFO"}, "defaults": {"max_model_len": 262144}}
    before = (copy.deepcopy(recipe), copy.deepcopy(overrides))
    merged = merge_recipe(recipe, overrides)
    assert (recipe, overrides) == before
    assert merged is not recipe
    assert merged["env"] is not recipe["env"]
    assert merged["defaults"] is not recipe["defaults"]
    merged["defaults"]["max_num_seqs"] = 1
    assert recipe["defaults"]["max_num_seqs"] == 128


@pytest.mark.parametrize("overrides", [None, {}])
def test_no_overrides_give_an_equal_copy(recipe, overrides):
    merged = merge_recipe(recipe, overrides)
    assert merged == recipe
    assert merged is not recipe


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("model", "deepseek-ai/DeepSeek-V4-Flash"),
        ("container", "vllm/vllm-openai:v0.12.0"),
        ("runtime", "vllm"),
        ("command", "vllm serve {model}"),
        ("min_nodes", 1),
        ("recipe_version", 2),
    ],
)
def test_top_level_fields_are_replaced(recipe, key, value):
    merged = merge_recipe(recipe, {key: value})
    assert merged[key] == value
    assert key not in merged["defaults"]


def test_other_top_level_keys_of_the_recipe_are_replaced_or_removed(recipe):
    recipe["description"] = "hybrid-v3"
    recipe["metadata"] = {"source": "field report"}
    merged = merge_recipe(recipe, {"description": "shorter context", "metadata": None})
    assert merged["description"] == "shorter context"
    assert "metadata" not in merged
    assert "description" not in merged["defaults"]


def test_a_name_the_recipe_lacks_at_the_top_becomes_a_default(recipe):
    # max_nodes is a sparkrun field, but the fixture has none: it lands in defaults.
    merged = merge_recipe(recipe, {"max_nodes": 2})
    assert "max_nodes" not in merged
    assert merged["defaults"]["max_nodes"] == 2


def test_flat_keys_set_and_remove_defaults(recipe):
    merged = merge_recipe(recipe, {"max_model_len": 262144, "gen_config": None, "not_there": None})
    assert merged["defaults"]["max_model_len"] == 262144
    assert "gen_config" not in merged["defaults"]
    assert "not_there" not in merged["defaults"]
    assert merged["defaults"]["max_num_seqs"] == 128  # the rest stays


def test_a_defaults_mapping_is_merged_and_null_removes(recipe):
    merged = merge_recipe(recipe, {"defaults": {"max_num_seqs": 64, "gen_config": None}})
    assert merged["defaults"]["max_num_seqs"] == 64
    assert "gen_config" not in merged["defaults"]
    assert merged["defaults"]["max_cudagraph_capture_size"] == 128


def test_env_is_merged_and_null_removes_a_variable(recipe):
    merged = merge_recipe(
        recipe,
        {"env": {"NCCL_DEBUG": "INFO", "VLLM_ENABLE_PCIE_ALLREDUCE": "1", "XDG_CACHE_HOME": None}},
    )
    assert merged["env"]["NCCL_DEBUG"] == "INFO"
    assert merged["env"]["VLLM_ENABLE_PCIE_ALLREDUCE"] == "1"
    assert "XDG_CACHE_HOME" not in merged["env"]
    assert merged["env"]["VLLM_CACHE_DIR"] == "/cache/huggingface/jitcache/vllm"
    assert "NCCL_DEBUG" not in merged["defaults"]


def test_a_recipe_without_defaults_or_env_gets_them():
    merged = merge_recipe(
        {"model": "m", "command": "vllm serve {model}"}, {"seed": 1, "env": {"A": "1"}}
    )
    assert merged["defaults"] == {"seed": 1}
    assert merged["env"] == {"A": "1"}


def test_the_same_name_at_the_top_and_under_defaults_must_agree(recipe):
    with pytest.raises(RecipeError, match="sets max_num_seqs twice"):
        merge_recipe(recipe, {"max_num_seqs": 64, "defaults": {"max_num_seqs": 32}})
    merged = merge_recipe(recipe, {"max_num_seqs": 64, "defaults": {"max_num_seqs": 64}})
    assert merged["defaults"]["max_num_seqs"] == 64


MERGE_ERRORS = [
    pytest.param("recipe", ["max_model_len"], "vllm_recipe_overrides is the string", id="str"),
    pytest.param("recipe", [[1, 2]], "vllm_recipe_overrides is a list", id="list"),
    pytest.param("recipe", [7], "vllm_recipe_overrides is the number 7", id="number"),
    pytest.param("recipe", [{"env": ["A=1"]}], "vllm_recipe_overrides.env is a list", id="env"),
    pytest.param("recipe", [{"env": None}], "vllm_recipe_overrides.env is null", id="env-null"),
    pytest.param(
        "recipe", [{"defaults": "x"}], "vllm_recipe_overrides.defaults is the string", id="def"
    ),
    pytest.param("recipe", [{1: "x"}], "vllm_recipe_overrides key 1 is not a name", id="key"),
    pytest.param(None, [{}], "vllm_recipe is null, not a mapping", id="no-recipe"),
    pytest.param(
        "defaults-list", [{"seed": 1}], "vllm_recipe.defaults is a list", id="recipe-defaults"
    ),
]


@pytest.mark.parametrize(("base", "args", "message"), MERGE_ERRORS)
def test_merge_errors_name_the_variable(base, args, message):
    recipe = {"recipe": load_recipe(), "defaults-list": changed(defaults=[1]), None: None}[base]
    with pytest.raises(RecipeError, match=message):
        merge_recipe(recipe, *args)


# --- placeholders -------------------------------------------------------------------------


def test_placeholders_of_the_fixture_command(recipe):
    assert placeholders(recipe["command"]) == FIXTURE_PLACEHOLDERS


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param("a {x} {y} {x}", ["x", "y"], id="each-once-in-order"),
        pytest.param('--c \'{"a":1}\' --d \'{"b": {"c": 2}}\'', [], id="json-is-not-one"),
        pytest.param("{0} {1x} {a-b} { a } {}", [], id="not-identifiers"),
        pytest.param("{_a1} {B}", ["_a1", "B"], id="identifiers"),
        pytest.param("'{json}'", ["json"], id="inside-quotes"),
    ],
)
def test_placeholders(command, expected):
    assert placeholders(command) == expected


def test_placeholders_of_a_non_string_is_an_error():
    with pytest.raises(RecipeError, match="not a string"):
        placeholders(["vllm", "{model}"])


# --- render_command / command_argv --------------------------------------------------------


def test_fixture_renders_to_one_line_with_the_expected_arguments(recipe):
    command = render_command(recipe, ROLE_VALUES)
    assert "\n" not in command
    assert "\\" not in command
    assert "  " not in command
    assert command.startswith(
        "vllm serve deepseek-ai/DeepSeek-V4-Flash-DSpark --host 0.0.0.0 --port 8000 "
    )
    assert command.endswith(f"--speculative-config '{SPECULATIVE}'")
    argv = command_argv(command)
    assert argv == FIXTURE_ARGV
    assert argv[argv.index("--speculative-config") + 1] == SPECULATIVE
    assert argv[argv.index("--max-cudagraph-capture-size") + 1] == "128"
    assert json.loads(argv[argv.index("--compilation-config") + 1])["custom_ops"] == ["all"]


def test_values_win_over_defaults_and_defaults_over_the_model(recipe):
    recipe["defaults"]["model"] = "/models/local-copy"
    values = dict(ROLE_VALUES, max_model_len=131072)
    argv = command_argv(render_command(recipe, values))
    assert argv[2] == "/models/local-copy"
    assert argv[argv.index("--max-model-len") + 1] == "131072"


def test_an_unknown_placeholder_is_named_with_the_known_keys(recipe):
    with pytest.raises(RecipeError) as caught:
        render_command(recipe, {"host": "0.0.0.0"})  # noqa: S104
    message = str(caught.value)
    assert "uses {port} but nothing gives a value for it" in message
    known = sorted(["model", "host", *recipe["defaults"]])
    assert message.endswith("Known keys: " + ", ".join(known) + ".")


def test_every_unknown_placeholder_is_named(recipe):
    with pytest.raises(RecipeError, match=r"uses \{host\}, \{port\} but nothing gives a value"):
        render_command(recipe)


def test_a_null_value_is_an_error(recipe):
    with pytest.raises(RecipeError, match=r"uses \{port\} but the value is null"):
        render_command(recipe, {"host": "0.0.0.0", "port": None})  # noqa: S104


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (False, "false"),
        (0.85, "0.85"),
        (0.1 + 0.2, "0.30000000000000004"),
        (2.0, "2.0"),
        (1e-05, "1e-05"),
        (393216, "393216"),
        (0, "0"),
        ("deepseek_v4", "deepseek_v4"),
        ("", ""),
        (
            {"method": "dspark", "num_speculative_tokens": 3},
            '{"method":"dspark","num_speculative_tokens":3}',
        ),
        ([1, "all", None], '[1,"all",null]'),
    ],
)
def test_values_are_written_as_vllm_reads_them(value, text):
    assert format_value(value) == text
    recipe = {"model": "m", "command": "x {v} y", "defaults": {"v": value}}
    assert render_command(recipe) == f"x {text} y"


def test_a_value_of_another_type_is_an_error():
    with pytest.raises(RecipeError, match=r"placeholder \{v\}: a set cannot be written"):
        render_command({"model": "m", "command": "x {v}"}, {"v": {1}})


def test_continuations_and_line_breaks_become_single_spaces():
    recipe = {"model": "m", "command": "  vllm serve {model} \\\n   --a 1\t\\\r\n--b\n  --c \\\n"}
    assert render_command(recipe) == "vllm serve m --a 1 --b --c"


def test_a_value_is_not_read_for_placeholders_again():
    recipe = {"model": "m", "command": "x {a} {b}", "defaults": {"a": "{b}", "b": "2"}}
    assert render_command(recipe) == "x {b} 2"


RENDER_ERRORS = [
    pytest.param(["command"], None, "the recipe is a list, not a mapping", id="list"),
    pytest.param({"model": "m"}, None, "command is null", id="no-command"),
    pytest.param({"command": " "}, None, "command is the string ' '", id="blank-command"),
    pytest.param({"command": "x", "defaults": [1]}, None, "defaults is a list", id="defaults"),
    pytest.param({"command": "x"}, ["port"], "values for the command are a list", id="values"),
]


@pytest.mark.parametrize(("recipe", "values", "message"), RENDER_ERRORS)
def test_render_errors(recipe, values, message):
    with pytest.raises(RecipeError, match=message):
        render_command(recipe, values)


def test_command_argv_joins_continuations_itself(recipe):
    argv = command_argv(recipe["command"])
    assert argv[:4] == ["vllm", "serve", "{model}", "--host"]
    assert "{speculative_config}" in argv


@pytest.mark.parametrize(
    "command",
    ['vllm serve --x \'{"a":1}', 'vllm serve --x "a', 'vllm serve --x \'{"name":"it\'s"}\''],
)
def test_unbalanced_quotes_are_a_clear_error(command):
    with pytest.raises(RecipeError, match="cannot be split into arguments.*close every quote"):
        command_argv(command)


def test_command_argv_of_a_non_string_is_an_error():
    with pytest.raises(RecipeError, match="not a string"):
        command_argv(None)  # shlex.split(None) would read standard input


# --- recipe_warnings ------------------------------------------------------------------


def test_capture_size_below_max_num_seqs_is_a_loud_warning(recipe):
    # The field report's costliest mistake: capture size 8 with 128 sequences.
    warnings = recipe_warnings(merge_recipe(recipe, {"max_cudagraph_capture_size": 8}))
    assert len(warnings) == 1
    warning = warnings[0]
    assert warning.startswith(
        "max_cudagraph_capture_size 8 (defaults.max_cudagraph_capture_size) is below "
        "max_num_seqs 128 (defaults.max_num_seqs)"
    )
    for text in ("batches of up to 8 sequences", "runs eager", "concurrency collapses"):
        assert text in warning
    assert "+40-170% aggregate throughput" in warning


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param("--max-cudagraph-capture-size 8 --max-num-seqs 128", id="spaced"),
        pytest.param("--max-cudagraph-capture-size=8 --max-num-seqs=128", id="equals"),
        pytest.param("--max_cudagraph_capture_size 8 --max_num_seqs 128", id="underscores"),
        pytest.param(
            "--max-cudagraph-capture-size 512 --max-num-seqs 128 --max-cudagraph-capture-size 8",
            id="last-one-wins",
        ),
    ],
)
def test_literal_flags_in_the_command_are_read_too(flags):
    recipe = {"model": "m", "command": f"vllm serve {{model}} {flags}"}
    warnings = recipe_warnings(recipe)
    assert len(warnings) == 1
    assert "max_cudagraph_capture_size 8 (the command's literal " in warnings[0]
    assert "max_num_seqs 128 (the command's literal --max-num-seqs 128)" in warnings[0]


def test_numbers_given_as_strings_are_compared_as_numbers(recipe):
    merged = merge_recipe(recipe, {"max_cudagraph_capture_size": "8", "max_num_seqs": "128"})
    assert len(recipe_warnings(merged)) == 1


@pytest.mark.parametrize(("capture", "seqs"), [(128, 128), (256, 128), (8, 8)])
def test_capture_size_at_or_above_max_num_seqs_is_fine(recipe, capture, seqs):
    merged = merge_recipe(recipe, {"max_cudagraph_capture_size": capture, "max_num_seqs": seqs})
    assert recipe_warnings(merged) == []


def test_capture_size_without_max_num_seqs_warns_that_vllm_picks_it():
    recipe = {
        "model": "m",
        "command": "vllm serve {model} --max-cudagraph-capture-size {c}",
        "defaults": {"c": 64},
    }
    warnings = recipe_warnings(recipe)
    assert len(warnings) == 1
    assert warnings[0].startswith("max_cudagraph_capture_size is 64 (defaults.c) but the command")
    assert "--max-num-seqs {max_num_seqs}" in warnings[0]


def test_a_default_no_placeholder_uses_is_named(recipe):
    # A misspelt override (max_num_seq for max_num_seqs) becomes such a default.
    warnings = recipe_warnings(merge_recipe(recipe, {"max_num_seq": 64}))
    assert warnings == [
        "defaults.max_num_seq is set but the command has no {max_num_seq} placeholder, so it "
        "has no effect: add it to the command (for example --max-num-seq {max_num_seq}) or "
        "remove it; a misspelt override name lands here too."
    ]


def test_a_default_that_looks_like_json_but_does_not_parse(recipe):
    bad = merge_recipe(recipe, {"gen_config": "{'temperature': 0.4}"})
    warnings = recipe_warnings(bad)
    assert len(warnings) == 1
    assert warnings[0].startswith("defaults.gen_config looks like JSON but does not parse (")


@pytest.mark.parametrize("value", [None, [], "recipe", {"command": ["x"], "defaults": 3}])
def test_warnings_skip_what_problems_report(value):
    assert recipe_warnings(value) == []


# --- recipe_value -----------------------------------------------------------------------


def test_recipe_value_reads_what_the_placeholder_would_get(recipe):
    assert recipe_value(recipe, "max_num_seqs") == 128
    assert recipe_value(recipe, "model") == "deepseek-ai/DeepSeek-V4-Flash-DSpark"
    assert recipe_value(recipe, "port") is None
    assert recipe_value(recipe, "port", 8000) == 8000
    with pytest.raises(RecipeError, match="not a mapping"):
        recipe_value("recipe", "model")
