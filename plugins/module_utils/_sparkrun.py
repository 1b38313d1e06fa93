# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Turn a sparkrun ``recipe_version: '2'`` recipe into a ``vllm_recipe``, and back.

Pure Python, no Ansible imports; PyYAML only for the text forms. The fields are the ones
sparkrun 0.4.2 knows (its recipe loader's list of top-level keys). A ``vllm_recipe`` has
the same shape, so eight of them carry over unchanged: ``recipe_version``, ``model``,
``runtime``, ``min_nodes``, ``container``, ``defaults``, ``env`` and ``command``.

Everything else of a sparkrun recipe is something this collection cannot honour (hooks,
per-host images, placement, sparkrun's own cache mount...). An import never drops such a
field silently: it comes back, by name, in ``SparkrunImport.unsupported`` (field path ->
value) with one sentence each in ``SparkrunImport.notes`` saying why and what to use
instead. Besides top-level fields, two kinds of value inside the recipe are set aside the
same way, under a dotted path: ``defaults.host`` and ``defaults.port`` (the vllm role fills
``{host}`` and ``{port}`` from ``vllm_bind_address`` and ``vllm_port``, so a recipe value
would be overridden without a word) and an ``env`` value holding one of sparkrun's launch
templates (``{launch.NAME}``, ``{config.NAME}``), which only sparkrun can fill in.

An export writes the recipe back in sparkrun's field order and gives the set-aside fields
back (``extra``), so importing and exporting a recipe returns it unchanged. With
``runtime_cache`` set, the export hands the JIT and compile caches to sparkrun instead: it
leaves out the environment variables sparkrun 0.4's vLLM runtime points at its persistent
runtime-cache mount (``RUNTIME_CACHE_ENV``; overriding them is what its ``managed-cache-env``
warning is about) and writes sparkrun's ``runtime_cache`` field. The collection's own
deployment keeps managing its JIT directories itself either way.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Dict, List

from ansible_collections.gb10.serving.plugins.module_utils._plain import plain
from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import (
    RECIPE_VERSION,
    RUNTIME,
    VLLM_RUNTIMES,
    RecipeError,
    _kind,
    command_argv,
    recipe_problems,
    template_parts,
    uses_brace_escapes,
)

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core on the controller
    yaml = None

# The sparkrun release whose recipe fields this module knows.
SPARKRUN_VERSION = "0.4.2"

# The fields a vllm_recipe shares with a sparkrun recipe, in sparkrun's export order.
HONOURED_FIELDS = (
    "recipe_version",
    "model",
    "runtime",
    "min_nodes",
    "container",
    "defaults",
    "env",
    "command",
)

# The placeholders the vllm role fills in per node, from its own variables.
ROLE_PLACEHOLDERS = {"host": "vllm_bind_address", "port": "vllm_port"}

# Every other top-level field sparkrun 0.4.2 reads, and why this collection cannot honour
# it: each sentence ends with what to use instead, where there is something.
UNSUPPORTED_FIELDS = {
    "sparkrun_version": "it is sparkrun's older spelling of the recipe version; "
    "recipe_version already says the same",
    "min_sparkrun_version": "it is a minimum sparkrun version, and nothing here runs sparkrun",
    "name": "sparkrun itself names a recipe after its file and ignores this field",
    "description": "it is a description only; nothing is deployed from it",
    "metadata": "it feeds sparkrun's memory estimate; the vllm role reads the engine's "
    "own KV-cache figures from its boot log instead",
    "model_revision": "the checkpoint revision is pinned by the node role: set "
    "node_model_revision: {value} instead",
    "runtime_version": "the engine version is the one in the container image "
    "(vllm_recipe.container)",
    "mode": "solo or cluster is decided by the inventory (gb10_head and gb10_workers)",
    "max_nodes": "the node count is the inventory's (gb10_head and gb10_workers)",
    "cluster_only": "the node count is the inventory's (gb10_head and gb10_workers)",
    "solo_only": "the node count is the inventory's (gb10_head and gb10_workers)",
    "containers": "the vllm role runs the one image of vllm_recipe.container on every node",
    "runtime_config": "it holds settings for sparkrun's own runtime plugins",
    "benchmark": "the bench role has its own settings (the bench_* variables)",
    "pre_exec": "the vllm role runs no hooks in the engine container; bake the step into the image",
    "post_exec": "the vllm role runs no hooks in the engine container",
    "post_commands": "the vllm role runs no commands after the engine starts",
    "stop_after_post": "the vllm role runs no commands after the engine starts",
    "mods": "sparkrun applies mods as hooks in the container; bake them into the image",
    "builder": "the vllm role runs vllm_recipe.container as it is and builds no image",
    "builder_config": "the vllm role runs vllm_recipe.container as it is and builds no image",
    "executor": "the vllm role always runs the engine as a Docker container",
    "executor_config": "container settings come from the vllm_* variables "
    "(vllm_restart_policy, vllm_log_options, vllm_memlock_unlimited)",
    "scheduler": "placement is the inventory's: the head is rank 0, the workers follow",
    "layout": "placement is the inventory's: the head is rank 0, the workers follow",
    "distribution_config": "the node role puts the checkpoint on every node (node_model, "
    "node_model_revision)",
    "cluster_config": "the vllm role sets the ranks, master address and port itself "
    "(vllm_master_port)",
    "runtime_cache": "it configures sparkrun's own cache mount; here the node role keeps the "
    "JIT caches in the Hugging Face cache it owns (node_hf_cache_dir)",
    "readiness": "the vllm role waits for the API itself (vllm_ready_timeout, vllm_ready_poll)",
    "capabilities": "it declares what the model can do for sparkrun's gateway",
    "unsupported_capabilities": "it declares what the model cannot do for sparkrun's gateway",
    "overrides": "sparkrun applies these layers per host or cluster; apply the one you want "
    "through vllm_recipe_overrides",
}
# Fields without which the rest of the recipe means something else: an error, not a note.
_REFUSED_FIELDS = {
    "include": "the recipe includes a base recipe from a sparkrun registry, so some of its "
    "fields live elsewhere: resolve it into one file first (sparkrun recipe show) and import "
    "that",
}

# Top-level fields sparkrun 0.4.2 does not know by name: it files them under runtime_config,
# where its builders and runtimes look for some of them.
SWEPT_FIELDS = {
    "build_args": "sparkrun hands these to its eugr image build; the vllm role runs "
    "vllm_recipe.container as it is and builds no image",
}

# --- which runtime sparkrun runs a recipe with ------------------------------------------

# sparkrun's own names for the runtime of a recipe whose command starts this way, when the
# recipe names no runtime (a command it does not recognise counts as vLLM's).
_COMMAND_RUNTIMES = (
    (re.compile(r"(?:sglang\s+serve|python3?\s+-m\s+sglang\.launch_server)\b"), "sglang"),
    (re.compile(r"llama-server\b"), "llama-cpp"),
    (re.compile(r"(?:trtllm-serve|mpirun\b.*trtllm)"), "trtllm"),
)
# What makes sparkrun pick its Ray runtime for a plain vllm recipe, in the command as written.
_RAY_HINT = re.compile(r"--distributed-executor-backend\s+ray\b")
# Where Jinja would start a template, a statement or a comment in a string.
JINJA_MARKER = re.compile(r"\{[{%#]")
# The executor backend of each vLLM runtime of sparkrun's, as vllm_distributed_backend.
RUNTIME_BACKENDS = {"vllm-distributed": "mp", "vllm-ray": "ray", "eugr-vllm": "ray"}
BACKEND_KEY = "distributed_executor_backend"
BACKEND_FLAG = "--distributed-executor-backend"
# The flag in a command's text, with its value (--flag V, --flag=V, V on the next line), and
# the blanks before it; vLLM reads '_' for '-' in the name.
_BACKEND_FLAG_TEXT = re.compile(
    r"[ \t]*(?<!\S)--distributed[-_]executor[-_]backend(?:=|[ \t]+(?:\\\r?\n[ \t]*)?)\S+"
)
_EMPTY_CONTINUATION = re.compile(r"\n[ \t]*\\[ \t]*(?=\r?\n)")


def sparkrun_runtime(data):
    """The runtime sparkrun 0.4.2 runs the recipe ``data`` with (its resolution rules).

    No runtime (or an empty one): a command starting with sglang's, llama.cpp's or
    TensorRT-LLM's server names that runtime, anything else is vLLM. ``vllm`` (given or
    inferred) is ``vllm-ray`` when ``defaults.distributed_executor_backend`` is ``ray`` or
    the command says ``--distributed-executor-backend ray``, else ``vllm-distributed``.
    Any other runtime is taken as it is named.
    """
    runtime = data.get("runtime") or ""
    command = data.get("command")
    command = command if isinstance(command, str) else ""
    if not runtime:
        for pattern, name in _COMMAND_RUNTIMES:
            if pattern.match(command.strip()):
                return name
    if runtime in ("", RUNTIME):
        defaults = data.get("defaults")
        defaults = defaults if isinstance(defaults, Mapping) else {}
        if str(defaults.get(BACKEND_KEY, "")).lower() == "ray" or _RAY_HINT.search(command):
            return "vllm-ray"
        return "vllm-distributed"
    return str(runtime)


def _runtime_problem(data, runtime):
    """Why a recipe sparkrun runs with ``runtime`` cannot be imported, or None."""
    if runtime in RUNTIME_BACKENDS:
        return None
    given = data.get("runtime")
    if given:
        how = f"its runtime is {given}"
    else:
        words = str(data.get("command") or "").split()
        how = f"it names no runtime and its command starts with {words[0]}, so sparkrun runs it"
        how += f" with its {runtime} runtime"
    return (
        f"the sparkrun recipe is not a vLLM recipe: {how}. This collection deploys only vLLM "
        f"(sparkrun's {', '.join(VLLM_RUNTIMES)} runtimes); use a vLLM recipe of the same model, "
        f"or run this one with sparkrun itself."
    )


# --- the command sparkrun generates when a recipe has none ------------------------------

# The defaults sparkrun 0.4.2's vLLM runtimes turn into flags, in the order they come; each
# flag is the name with '-' for '_', except these.
GENERATED_FLAG_KEYS = (
    "port", "host", "tensor_parallel", "gpu_memory_utilization", "max_model_len",
    "max_num_batched_tokens", "max_num_seqs", "served_model_name", "dtype", "quantization",
    "enforce_eager", "enable_prefix_caching", "trust_remote_code", BACKEND_KEY,
    "pipeline_parallel", "data_parallel", "kv_cache_dtype", "otlp_traces_endpoint", "api_key",
    "attention_backend", "load_format", "reasoning_parser", "tool_call_parser",
    "chat_template", "speculative_config", "tokenizer_mode", "mm_encoder_tp_mode",
    "block_size", "seed", "enable_auto_tool_choice", "enable_chunked_prefill",
    "async_scheduling", "generation_config", "hf_overrides", "compilation_config",
    "attention_config", "model_loader_extra_config", "default_chat_template_kwargs",
    "limit_mm_per_prompt", "mm_processor_cache_gb", "kv_cache_memory_bytes",
    "max_cudagraph_capture_size", "long_prefill_token_threshold", "mamba_cache_mode",
    "mamba_cache_dtype", "mamba_ssm_cache_dtype", "reasoning_parser_plugin", "media_io_kwargs",
    "video_pruning_rate", "allowed_local_media_path", "prefix_match_unit",
    "enable_mamba_shared_prefix_checkpoint", "safetensors_load_strategy", "moe_backend",
    "enable_prompt_tokens_details", "enable_force_include_usage", "enable_request_id_headers",
    "enable_flashinfer_autotune", "linear_backend", "gdn_prefill_backend", "gdn_decode_kernel",
    "kda_prefill_backend", "mamba_backend", "recurrent_checkpoint_policy",
    "prefix_cache_retention_interval", "engram_config", "dcp_comm_backend", "prefill_policy",
    "prefill_compute_share", "prefill_compute_half_life", "prefill_schedule_interval",
    "max_parallel_prefills", "decode_refill_target", "scheduler_reserve_full_isl",
    "jit_monitor_mode", "disable_custom_all_reduce",
)  # fmt: skip
_FLAG_SPELLINGS = {
    "tensor_parallel": "-tp",
    "pipeline_parallel": "-pp",
    "data_parallel": "--data-parallel-size",
}
# Switches: the flag alone when the value is true; the ones vLLM turns on by itself are
# written --no-<flag> when it is false (the others are then left out).
SWITCH_KEYS = frozenset(
    (
        "enforce_eager", "enable_prefix_caching", "trust_remote_code", "enable_auto_tool_choice",
        "enable_chunked_prefill", "async_scheduling", "enable_prompt_tokens_details",
        "enable_force_include_usage", "enable_request_id_headers", "enable_flashinfer_autotune",
        "scheduler_reserve_full_isl", "disable_custom_all_reduce",
        "enable_mamba_shared_prefix_checkpoint",
    )
)  # fmt: skip
NEGATED_SWITCH_KEYS = frozenset(
    (
        "enable_prefix_caching", "enable_chunked_prefill", "async_scheduling",
        "enable_flashinfer_autotune", "scheduler_reserve_full_isl",
    )
)  # fmt: skip
# Generated flags the vllm role sets itself, and what sets them there.
_ROLE_SET_KEYS = {"api_key": "the vllm role passes the API key itself (vllm_api_key)"}


def generated_flag(key):
    """The vLLM flag sparkrun writes for the default ``key``."""
    return _FLAG_SPELLINGS.get(key, "--" + key.replace("_", "-"))


def _switch_on(value):
    """Whether sparkrun reads a switch's value as on: a boolean as it is, an empty value as
    off, any other value as on when its text holds 't', 'y' or '1'."""
    if isinstance(value, bool):
        return value
    if not value:
        return False
    text = str(value).lower()
    return any(mark in text for mark in ("t", "y", "1"))


def _generate_command(defaults, set_aside, changes):
    """The command sparkrun generates from ``defaults`` when a recipe has none, as a template.

    Values stay in ``defaults`` behind ``{key}`` placeholders (so overrides still work), in
    the form sparkrun writes them: a mapping or list as compact JSON in single quotes, a JSON
    string in single quotes. A switch becomes its flag and leaves defaults. A default with no
    flag, and one the role sets itself, is set aside. Returns (command, new defaults).
    """
    defaults = dict(defaults)
    words = ["vllm", "serve", "{model}"]
    if defaults.get("tensor_parallel"):
        words += ["-tp", "{tensor_parallel}"]
    switches = []
    for key in GENERATED_FLAG_KEYS:
        value = defaults.get(key)
        if key in ("tensor_parallel", BACKEND_KEY) or value is None:
            continue
        flag = generated_flag(key)
        if key in _ROLE_SET_KEYS:
            set_aside(f"defaults{_PATH_SEPARATOR}{key}", value, _ROLE_SET_KEYS[key])
            del defaults[key]
        elif key in SWITCH_KEYS:
            if _switch_on(value):
                words.append(flag)
            elif key in NEGATED_SWITCH_KEYS:
                words.append("--no-" + flag[2:])
            switches.append(key)
            del defaults[key]
        elif isinstance(value, (Mapping, list, tuple)) or (
            isinstance(value, str) and value.strip()[:1] in ("{", "[")
        ):
            text = (
                value.strip()
                if isinstance(value, str)
                else json.dumps(value, separators=(",", ":"), default=str)
            )
            if "'" in text:
                raise SparkrunError(
                    f"the sparkrun recipe has no command and its defaults.{key} holds a single "
                    "quote, which the command made from it cannot carry: write the command "
                    "yourself (command: vllm serve {model} ...) and import it again."
                )
            defaults[key] = text
            words += [flag, "'{%s}'" % key]
        else:
            if isinstance(value, bool):
                # sparkrun writes the value as Python prints it.
                defaults[key] = str(value)
            words += [flag, "{%s}" % key]
    for key in list(defaults):
        if key not in GENERATED_FLAG_KEYS and key not in ROLE_PLACEHOLDERS:
            set_aside(
                f"defaults{_PATH_SEPARATOR}{key}",
                defaults.pop(key),
                "the recipe has no command and sparkrun's vLLM runtime has no flag for it, so "
                "the command sparkrun makes leaves it out too",
            )
    sentence = (
        "command: the recipe has none; it is the one sparkrun makes from the defaults, flag "
        "for flag"
    )
    if switches:
        sentence += f" ({', '.join(switches)} became flags and left the defaults)"
    changes.append(sentence + ".")
    return " ".join(words) + "\n", defaults


# --- braces and the executor backend in a command ----------------------------------------


def _merged_parts(parts):
    merged = []
    for kind, text in parts:
        if merged and kind == "text" and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + text)
        else:
            merged.append((kind, text))
    return merged


def _without_brace_escapes(command):
    """The command in single braces, meaning the same: a ``vllm_recipe`` never holds ``{{``
    (Ansible would read it as Jinja)."""
    parts = _merged_parts(template_parts(command))
    plain_form = "".join(text if kind == "text" else "{%s}" % text for kind, text in parts)
    if uses_brace_escapes(plain_form) or _merged_parts(template_parts(plain_form)) != parts:
        raise SparkrunError(
            "the sparkrun recipe's command writes a literal brace pair around a name ({{name}} "
            "for the text {name}, or {{{{ for two braces), which a vllm_recipe cannot hold "
            "(there {name} is a placeholder, and Ansible reads {{ as Jinja): write that value "
            "into the defaults and use a placeholder for it, then import the recipe again."
        )
    return plain_form


def _backend_in_command(command, defaults):
    """The backends the command's --distributed-executor-backend flags ask for (a
    ``{name}`` value read from ``defaults``)."""
    try:
        words = command_argv(command)
    except RecipeError:
        return []
    found = []
    for index, word in enumerate(words):
        name, equals, value = word.partition("=")
        if name.replace("_", "-") != BACKEND_FLAG:
            continue
        if not equals:
            value = words[index + 1] if index + 1 < len(words) else ""
        match = re.fullmatch(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", value)
        found.append(str(defaults.get(match.group(1), value)) if match else value)
    return found


def _without_backend_flag(command):
    """The command without its --distributed-executor-backend flags, its layout kept."""
    trailing = "\n" if command.endswith("\n") else ""
    text = _EMPTY_CONTINUATION.sub("", _BACKEND_FLAG_TEXT.sub("", command)).rstrip()
    while text.endswith("\\"):
        text = text[:-1].rstrip()
    return text + trailing


# The environment variables sparkrun 0.4's vLLM runtime points at its runtime-cache mount
# (XDG_CACHE_HOME as the catch-all): an export with runtime_cache leaves them to sparkrun.
RUNTIME_CACHE_ENV = (
    "CUTE_DSL_CACHE_DIR",
    "FLASHINFER_CACHE_DIR",
    "FLASHINFER_WORKSPACE_BASE",
    "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "TORCH_EXTENSIONS_DIR",
    "TORCH_HOME",
    "TRITON_CACHE_DIR",
    "VLLM_CACHE_ROOT",
    "XDG_CACHE_HOME",
)
# The settings sparkrun's runtime_cache field takes.
RUNTIME_CACHE_KEYS = ("enabled", "dir", "key_by_image", "key_by_model", "prune")

# One of sparkrun's launch-time templates in an env value: {launch.NAME} or {config.NAME}.
_ENV_TEMPLATE = re.compile(r"(?<![$\{])\{(?:launch|config)\.")
_PATH_SEPARATOR = "."


class SparkrunError(RecipeError):
    """A sparkrun recipe cannot be imported, or a vllm_recipe exported; the message says why."""


@dataclass
class SparkrunImport:
    """A sparkrun recipe read as a vllm_recipe.

    ``recipe`` is the vllm_recipe; ``unsupported`` maps the path of every field set aside
    (``model_revision``, ``defaults.port``, ``env.NAME``) to its value, for the export to
    give back; ``notes`` has one sentence per set-aside field, naming it. ``backend`` is the
    vllm_distributed_backend the recipe needs (``mp`` or ``ray``); ``changes`` has one
    sentence per part of the recipe written differently with the same meaning (a generated
    command, escapes written as single braces, the backend flag left to the role).
    """

    recipe: Dict[str, object]
    unsupported: Dict[str, object] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    backend: str = "mp"
    changes: List[str] = field(default_factory=list)

    def as_dict(self):
        return {
            "recipe": self.recipe,
            "unsupported": self.unsupported,
            "notes": list(self.notes),
            "backend": self.backend,
            "changes": list(self.changes),
        }


def _require_yaml():
    if yaml is None:
        raise SparkrunError("PyYAML is needed to read or write a recipe as text; install it")


def load_recipe_text(text):
    """The data of a recipe given as YAML text."""
    _require_yaml()
    if not isinstance(text, str):
        raise SparkrunError(f"the sparkrun recipe text is {_kind(text)}, not a string")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SparkrunError(
            f"the sparkrun recipe is not valid YAML{at} ({problem}): fix the file's syntax."
        ) from None
    return data


def _version_problem(data):
    """Why ``data`` is not a sparkrun v2 recipe, or None when it is one.

    As in sparkrun, a recipe that gives no version is a v2 recipe.
    """
    # sparkrun reads sparkrun_version first (the v1 spelling), then recipe_version.
    for key in ("sparkrun_version", "recipe_version"):
        if key in data:
            value = data[key]
            if str(value).strip() == RECIPE_VERSION and not isinstance(value, bool):
                continue
            return (
                f"its {key} is {_kind(value)}: only sparkrun recipe_version '2' recipes can be "
                "imported; convert it (a v1 recipe's fields changed in v2) and set "
                "recipe_version: '2'."
            )
    return None


def _decide_backend(recipe, runtime, set_aside, changes):
    """vllm_distributed_backend for the recipe sparkrun runs with ``runtime``.

    The backend is what vLLM is told: ``defaults.distributed_executor_backend`` (sparkrun
    writes it over the command's), else the command's flag, else the runtime's own (Ray for
    vllm-ray and eugr-vllm, vLLM's native launch for vllm-distributed). It must be the
    runtime's: sparkrun starts a Ray cluster or it does not. The role sets the flag per node,
    so it leaves the command; the default is set aside.
    """
    expected = RUNTIME_BACKENDS[runtime]
    defaults = recipe.get("defaults")
    defaults = defaults if isinstance(defaults, Mapping) else {}
    command = recipe.get("command") if isinstance(recipe.get("command"), str) else ""
    in_command = _backend_in_command(command, defaults)
    asked = []
    if BACKEND_KEY in defaults:
        asked.append((f"defaults.{BACKEND_KEY}", str(defaults[BACKEND_KEY])))
    asked.extend((f"the command's {BACKEND_FLAG}", value) for value in in_command)
    backend = asked[0][1].lower() if asked else expected
    disagree = [value for _where, value in asked if value.lower() != expected]
    if backend not in RUNTIME_BACKENDS.values() or disagree:
        listing = ", ".join(f"{where} {value}" for where, value in asked)
        raise SparkrunError(
            f"the sparkrun recipe cannot be imported: sparkrun runs it with its {runtime} "
            f"runtime ({'a Ray cluster' if expected == 'ray' else 'no Ray cluster'}), but "
            f"{listing} asks vLLM for another executor backend: make them agree (mp without "
            "Ray, ray with it; this collection runs no other backend) and import it again."
        )
    if in_command:
        recipe["command"] = _without_backend_flag(command)
        sentence = (
            f"command: its {BACKEND_FLAG} is taken out, the vllm role sets it per node from "
            f"vllm_distributed_backend: {backend}"
        )
        if backend == "ray" and recipe.get("runtime", RUNTIME) in ("", RUNTIME):
            if BACKEND_KEY not in defaults:
                recipe["runtime"] = "vllm-ray"
                sentence += " (and runtime: vllm-ray tells sparkrun the same)"
        changes.append(sentence + ".")
    if BACKEND_KEY in defaults:
        set_aside(
            f"defaults{_PATH_SEPARATOR}{BACKEND_KEY}",
            defaults[BACKEND_KEY],
            f"the vllm role sets {BACKEND_FLAG} per node from vllm_distributed_backend, "
            f"which the import sets to {backend}",
        )
        recipe["defaults"] = {k: v for k, v in defaults.items() if k != BACKEND_KEY}
    return backend


def import_recipe(source):
    """Read a sparkrun v2 recipe (YAML text or parsed data) as a vllm_recipe.

    The recipe is read as sparkrun 0.4.2 reads it: no ``recipe_version`` is version 2; the
    runtime is resolved as sparkrun resolves it (``sparkrun_runtime``) and must be one of
    its vLLM runtimes; ``{{``/``}}`` escapes (command and defaults) become single braces; a
    recipe without a command gets the one sparkrun generates from its defaults.

    Returns a ``SparkrunImport``; raises ``SparkrunError`` naming the field and the fix when
    the recipe is not a v2 vLLM recipe, or its shared fields would not deploy.
    """
    data = load_recipe_text(source) if isinstance(source, str) else source
    if not isinstance(data, Mapping):
        raise SparkrunError(
            f"the sparkrun recipe is {_kind(data)}, not a mapping: give a recipe with "
            "recipe_version: '2', model, container, defaults, env and command."
        )
    problem = _version_problem(data)
    if problem:
        raise SparkrunError(f"the sparkrun recipe is not a v2 recipe: {problem}")
    for key, why in _REFUSED_FIELDS.items():
        if key in data:
            raise SparkrunError(f"the sparkrun recipe cannot be imported: {key}: {why}.")
    runtime = sparkrun_runtime(data)
    problem = _runtime_problem(data, runtime)
    if problem:
        raise SparkrunError(problem)

    recipe = {}
    unsupported = {}
    notes = []
    changes = []

    def set_aside(path, value, why):
        unsupported[path] = copy.deepcopy(value)
        notes.append(f"{path}: not deployed, {why}; kept for the export.")

    for key, value in data.items():
        if not isinstance(key, str):
            raise SparkrunError(
                f"the sparkrun recipe has a key {key!r} that is not a name: quote it or remove it."
            )
        if key in HONOURED_FIELDS:
            recipe[key] = copy.deepcopy(value)
        else:
            why = UNSUPPORTED_FIELDS.get(key) or SWEPT_FIELDS.get(
                key,
                f"it is no field sparkrun {SPARKRUN_VERSION} knows (sparkrun files it under "
                "runtime_config) and nothing here reads it",
            )
            set_aside(key, value, why.replace("{value}", repr(value)))

    if "runtime" in recipe and not recipe["runtime"]:
        del recipe["runtime"]
        changes.append("runtime: it is empty, which sparkrun reads as no runtime; left out.")
    defaults = recipe.get("defaults")
    if isinstance(defaults, Mapping):
        # sparkrun reads {{ and }} in a default's text as one brace each.
        escaped = [k for k, v in defaults.items() if isinstance(v, str) and uses_brace_escapes(v)]
        if escaped:
            recipe["defaults"] = {
                k: v.replace("{{", "{").replace("}}", "}") if k in escaped else v
                for k, v in defaults.items()
            }
            changes.append(
                f"defaults: the {{{{ and }}}} of {', '.join(escaped)} are written as the single "
                "braces sparkrun reads them as."
            )
    if not recipe.get("command") and isinstance(recipe.get("defaults", {}), Mapping):
        recipe["command"], recipe["defaults"] = _generate_command(
            recipe.get("defaults") or {}, set_aside, changes
        )
    command = recipe.get("command")
    if isinstance(command, str) and uses_brace_escapes(command):
        recipe["command"] = _without_brace_escapes(command)
        changes.append(
            "command: its {{ and }} escapes are written as the single braces they stand for "
            "(the same command, and no Jinja in a vars file)."
        )
    backend = _decide_backend(recipe, runtime, set_aside, changes)

    defaults = recipe.get("defaults")
    if isinstance(defaults, Mapping):
        for name, variable in ROLE_PLACEHOLDERS.items():
            if name in defaults:
                set_aside(
                    f"defaults{_PATH_SEPARATOR}{name}",
                    defaults[name],
                    f"the vllm role fills {{{name}}} from {variable}: set {variable} to "
                    f"{defaults[name]!r} instead",
                )
        recipe["defaults"] = {k: v for k, v in defaults.items() if k not in ROLE_PLACEHOLDERS}
    env = recipe.get("env")
    if isinstance(env, Mapping):
        templated = [
            name
            for name, value in env.items()
            if isinstance(value, str) and _ENV_TEMPLATE.search(value)
        ]
        for name in templated:
            set_aside(
                f"env{_PATH_SEPARATOR}{name}",
                env[name],
                "its value is a sparkrun launch template ({launch.NAME} or {config.NAME}) that "
                "only sparkrun fills in: give the value itself in vllm_recipe.env",
            )
        recipe["env"] = {k: v for k, v in env.items() if k not in templated}

    problems = recipe_problems(recipe, provided=list(ROLE_PLACEHOLDERS))
    if problems:
        raise SparkrunError(
            "the sparkrun recipe cannot become a vllm_recipe: "
            + " ".join(problems)
            + " (Fix the sparkrun recipe and import it again.)"
        )
    return SparkrunImport(
        recipe=recipe, unsupported=unsupported, notes=notes, backend=backend, changes=changes
    )


def _runtime_cache_setting(runtime_cache):
    """sparkrun's runtime_cache field for the export option, or None to keep the env."""
    if runtime_cache is None or runtime_cache is False:
        return None
    if runtime_cache is True:
        return {"enabled": True}
    if not isinstance(runtime_cache, Mapping):
        raise SparkrunError(
            f"runtime_cache is {_kind(runtime_cache)}: give true (sparkrun keeps the JIT caches "
            "in its runtime-cache mount), false (the recipe's env places them), or a mapping "
            f"of sparkrun's runtime_cache settings ({', '.join(RUNTIME_CACHE_KEYS)})."
        )
    unknown = sorted(str(key) for key in runtime_cache if key not in RUNTIME_CACHE_KEYS)
    if unknown:
        raise SparkrunError(
            f"runtime_cache has {', '.join(unknown)}, which sparkrun {SPARKRUN_VERSION}'s "
            f"runtime_cache does not take: use only {', '.join(RUNTIME_CACHE_KEYS)}."
        )
    return copy.deepcopy(dict(runtime_cache))


def export_recipe(recipe, extra=None, runtime_cache=None, distributed_backend=None):
    """A sparkrun v2 recipe (data) from a vllm_recipe; neither input is changed.

    ``extra`` is what an import set aside (``SparkrunImport.unsupported``), given back at
    its path. ``runtime_cache`` (true, or a mapping of sparkrun's settings) leaves the
    ``RUNTIME_CACHE_ENV`` variables to sparkrun and writes its ``runtime_cache`` field;
    unset or false, the env is exported as it is. ``distributed_backend`` (the role's
    vllm_distributed_backend, ``mp`` or ``ray``) makes sparkrun run the backend the role
    runs: when sparkrun would resolve the other one, the runtime is written as
    ``vllm-ray`` or ``vllm-distributed``.
    """
    if not isinstance(recipe, Mapping):
        raise SparkrunError(
            f"the vllm_recipe is {_kind(recipe)}, not a mapping: give the recipe as a mapping "
            "(sparkrun's recipe_version 2 shape)."
        )
    problems = recipe_problems(recipe, provided=list(ROLE_PLACEHOLDERS))
    if problems:
        raise SparkrunError(
            "the vllm_recipe cannot be exported: "
            + " ".join(problems)
            + " (Fix vllm_recipe or vllm_recipe_overrides and export again.)"
        )
    if extra is None:
        extra = {}
    if not isinstance(extra, Mapping):
        raise SparkrunError(
            f"the extra fields are {_kind(extra)}, not a mapping: give the mapping an import set "
            "aside (sparkrun_extra_fields), or leave it out."
        )
    cache_setting = _runtime_cache_setting(runtime_cache)
    if distributed_backend not in (None, *RUNTIME_BACKENDS.values()):
        raise SparkrunError(
            f"distributed_backend is {_kind(distributed_backend)}: give mp or ray (the role's "
            "vllm_distributed_backend), or leave it out."
        )

    out = {}
    if "recipe_version" not in recipe:
        out["recipe_version"] = RECIPE_VERSION
    for key in HONOURED_FIELDS:
        if key in recipe:
            out[key] = copy.deepcopy(recipe[key])
    for key, value in recipe.items():
        if key not in out:
            out[key] = copy.deepcopy(value)

    for path, value in extra.items():
        if not isinstance(path, str) or not path:
            raise SparkrunError(
                f"the extra fields have a key {path!r} that is not a field name: use a top-level "
                "field (model_revision) or a dotted path (env.NAME, defaults.port)."
            )
        section, dot, name = path.partition(_PATH_SEPARATOR)
        if dot and section in ("env", "defaults"):
            target = out.get(section)
            target = dict(target) if isinstance(target, Mapping) else {}
            if name in target:
                raise SparkrunError(
                    f"the extra field {path} is also set in the recipe's {section}: keep one of "
                    "them (remove it from sparkrun_extra_fields, or from the recipe)."
                )
            target[name] = copy.deepcopy(value)
            out[section] = target
        elif path in out:
            raise SparkrunError(
                f"the extra field {path} is also a field of the recipe: keep one of them (remove "
                "it from sparkrun_extra_fields, or from the recipe)."
            )
        else:
            out[path] = copy.deepcopy(value)

    if distributed_backend is not None:
        resolved = sparkrun_runtime(out)
        if RUNTIME_BACKENDS.get(resolved, distributed_backend) != distributed_backend:
            if resolved != "vllm-ray" and distributed_backend == "ray":
                out["runtime"] = "vllm-ray"
            elif out.get("runtime") in ("vllm-ray", "eugr-vllm"):
                out["runtime"] = "vllm-distributed"
            else:
                raise SparkrunError(
                    "the recipe asks sparkrun for a Ray cluster (its defaults or command set "
                    f"{BACKEND_FLAG} ray) but distributed_backend is mp: take that out of the "
                    "recipe (or sparkrun_extra_fields), or set vllm_distributed_backend: ray."
                )

    if cache_setting is not None:
        if "runtime_cache" in out:
            raise SparkrunError(
                "runtime_cache is asked for, but the recipe or its extra fields already carry a "
                "runtime_cache field: keep one of them."
            )
        env = out.get("env")
        if isinstance(env, Mapping):
            out["env"] = {k: v for k, v in env.items() if k not in RUNTIME_CACHE_ENV}
        out["runtime_cache"] = cache_setting
    return out


def left_to_runtime_cache(recipe):
    """The env variables of ``recipe`` an export with runtime_cache leaves to sparkrun."""
    env = recipe.get("env") if isinstance(recipe, Mapping) else None
    if not isinstance(env, Mapping):
        return []
    return [name for name in env if name in RUNTIME_CACHE_ENV]


if yaml is not None:

    class _BlockDumper(yaml.SafeDumper):
        """Safe YAML with multi-line strings as literal blocks, keys in their given order."""

    def _represent_str(dumper, value, tag="tag:yaml.org,2002:str"):
        style = "|" if "\n" in value else None
        return dumper.represent_scalar(tag, value, style=style)

    _BlockDumper.add_representer(str, _represent_str)

    class _VarsFileDumper(_BlockDumper):
        """_BlockDumper for an Ansible vars file: text Jinja would read is tagged !unsafe.

        Ansible templates every string of a vars file; a recipe's ``{{``, ``{%`` or ``{#``
        (in an env value, or a command's literal braces) is the engine's text, not a template.
        """

    def _represent_vars_str(dumper, value):
        if JINJA_MARKER.search(value):
            return _represent_str(dumper, value, tag="!unsafe")
        return _represent_str(dumper, value)

    _VarsFileDumper.add_representer(str, _represent_vars_str)


def dump_yaml(data, comments=(), for_ansible=False):
    """YAML text for ``data``: a document start, keys in order, commands as literal blocks.

    ``comments`` are lines written first, each as a YAML comment. ``for_ansible``: text that
    Jinja would template is tagged ``!unsafe`` (Ansible's own tag: the value is used as it is).
    """
    _require_yaml()
    head = "".join(f"# {line}\n" if line else "#\n" for line in comments)
    body = yaml.dump(
        plain(data),
        Dumper=_VarsFileDumper if for_ansible else _BlockDumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=4096,
        indent=2,
    )
    return f"{head}---\n{body}"


def dump_recipe(recipe):
    """A sparkrun recipe (data, as ``export_recipe`` makes it) as YAML text."""
    return dump_yaml(
        recipe,
        comments=(
            f"sparkrun recipe_version '2' recipe, written by gb10.serving "
            f"(fields of sparkrun {SPARKRUN_VERSION}).",
        ),
    )


def dump_vars_file(imported):
    """A vars file holding ``vllm_recipe``, ``vllm_distributed_backend`` and
    ``sparkrun_extra_fields`` of an import."""
    comments = [
        f"vllm_recipe read from a sparkrun recipe by gb10.serving (fields of sparkrun "
        f"{SPARKRUN_VERSION}).",
    ]
    if imported.changes:
        comments.append("Written differently, with the same meaning:")
        comments.extend(f"  {change}" for change in imported.changes)
    comments.append(
        "sparkrun_extra_fields holds what it cannot honour, for playbooks/export_sparkrun.yml:"
    )
    comments.extend(f"  {note}" for note in imported.notes)
    if not imported.notes:
        comments.append("  nothing.")
    return dump_yaml(
        {
            "vllm_recipe": imported.recipe,
            "vllm_distributed_backend": imported.backend,
            "sparkrun_extra_fields": imported.unsupported,
        },
        comments=comments,
        for_ansible=True,
    )
