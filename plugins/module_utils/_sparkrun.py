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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Dict, List

from ansible_collections.gb10.serving.plugins.module_utils._plain import plain
from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import (
    RECIPE_VERSION,
    RecipeError,
    _kind,
    recipe_problems,
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
    give back; ``notes`` has one sentence per set-aside field, naming it.
    """

    recipe: Dict[str, object]
    unsupported: Dict[str, object] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def as_dict(self):
        return {
            "recipe": self.recipe,
            "unsupported": self.unsupported,
            "notes": list(self.notes),
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
    """Why ``data`` is not a sparkrun v2 recipe, or None when it is one."""
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
    if "recipe_version" not in data:
        return (
            "it has no recipe_version: a v2 recipe declares itself with recipe_version: '2'; "
            "add that line if the recipe is already in the v2 shape."
        )
    return None


def import_recipe(source):
    """Read a sparkrun v2 recipe (YAML text or parsed data) as a vllm_recipe.

    Returns a ``SparkrunImport``; raises ``SparkrunError`` naming the field and the fix when
    the recipe is not a v2 recipe, or its shared fields would not deploy.
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

    recipe = {}
    unsupported = {}
    notes = []

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
            why = UNSUPPORTED_FIELDS.get(
                key,
                f"it is no field sparkrun {SPARKRUN_VERSION} knows (sparkrun files it under "
                "runtime_config) and nothing here reads it",
            )
            set_aside(key, value, why.replace("{value}", repr(value)))

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
    return SparkrunImport(recipe=recipe, unsupported=unsupported, notes=notes)


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


def export_recipe(recipe, extra=None, runtime_cache=None):
    """A sparkrun v2 recipe (data) from a vllm_recipe; neither input is changed.

    ``extra`` is what an import set aside (``SparkrunImport.unsupported``), given back at
    its path. ``runtime_cache`` (true, or a mapping of sparkrun's settings) leaves the
    ``RUNTIME_CACHE_ENV`` variables to sparkrun and writes its ``runtime_cache`` field;
    unset or false, the env is exported as it is.
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

    def _represent_str(dumper, value):
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _BlockDumper.add_representer(str, _represent_str)


def dump_yaml(data, comments=()):
    """YAML text for ``data``: a document start, keys in order, commands as literal blocks.

    ``comments`` are lines written first, each as a YAML comment.
    """
    _require_yaml()
    head = "".join(f"# {line}\n" if line else "#\n" for line in comments)
    body = yaml.dump(
        plain(data),
        Dumper=_BlockDumper,
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
    """A vars file holding ``vllm_recipe`` and ``sparkrun_extra_fields`` of an import."""
    comments = [
        f"vllm_recipe read from a sparkrun recipe by gb10.serving (fields of sparkrun "
        f"{SPARKRUN_VERSION}).",
        "sparkrun_extra_fields holds what it cannot honour, for playbooks/export_sparkrun.yml:",
    ]
    comments.extend(f"  {note}" for note in imported.notes)
    if not imported.notes:
        comments.append("  nothing.")
    return dump_yaml(
        {"vllm_recipe": imported.recipe, "sparkrun_extra_fields": imported.unsupported},
        comments=comments,
    )
