# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check, merge and render a vLLM recipe in sparkrun's recipe_version 2 shape.

Pure Python, stdlib only, no Ansible imports. A recipe is a mapping with ``model``,
``container`` (the image), ``command`` (a shell-like line with ``{name}`` placeholders and
backslash-newline continuations), ``defaults`` (name -> scalar, filling the placeholders)
and ``env`` (variable -> scalar), plus ``recipe_version``, ``runtime``, ``min_nodes`` and
whatever else a recipe carries (kept as it is).

The role keeps one reference recipe and lets the user change it through a flat mapping of
overrides (``merge_recipe``); the result is checked (``recipe_problems``: what would break
the deployment; ``recipe_warnings``: what would run, but badly) and rendered into the
engine's command line (``render_command``, ``command_argv``).

Braces in the command follow sparkrun 0.4.2's rules. ``{name}`` is a placeholder. A command
that holds ``{{`` anywhere is written in the escape form: there ``{{`` and ``}}`` each stand
for one literal brace. Without ``{{``, every brace that is not part of a ``{name}`` stays as it
is (``'{"a":{"b":1}}'`` is JSON, not a placeholder).
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from collections.abc import Mapping

from ansible_collections.gb10.serving.plugins.module_utils._plain import plain

RECIPE_VERSION = "2"
RUNTIME = "vllm"
# The names sparkrun 0.4.2 gives its vLLM runtimes: ``vllm`` (which it resolves to one of the
# others), vLLM's native multi-node launch, a Ray cluster, and the eugr build on Ray.
VLLM_RUNTIMES = (RUNTIME, "vllm-distributed", "vllm-ray", "eugr-vllm")
# Fields that always sit at the top of a recipe; any other override name that the recipe
# does not already have at the top goes into defaults.
TOP_LEVEL_FIELDS = ("recipe_version", "model", "runtime", "min_nodes", "container", "command")
_REQUIRED_STRINGS = (
    ("model", "the Hugging Face repo id, for example deepseek-ai/DeepSeek-V4-Flash-DSpark"),
    ("container", "the engine image, for example aidendle94/sparkrun-vllm-ds4-gb10:production-3.7"),
    ("command", "the engine's command line, for example 'vllm serve {model} --port {port}'"),
)
# A placeholder is a brace, an identifier, a brace: '{"a":1}' (JSON) is not one.
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# What sparkrun looks at as a possible placeholder: a brace, no brace, a brace.
_BRACE_SPAN = re.compile(r"\{[^{}]*\}")
# What a placeholder or an environment variable may be called.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# A backslash ending a line, with the blanks around it; then any other line break.
_CONTINUATION = re.compile(r"[ \t]*\\\r?\n[ \t]*")
_LINE_BREAK = re.compile(r"[ \t]*\r?\n[ \t]*")

# The two engine flags whose relation decides whether large batches run on CUDA graphs.
_CAPTURE_FLAG = "--max-cudagraph-capture-size"
_SEQS_FLAG = "--max-num-seqs"


class RecipeError(ValueError):
    """A recipe, its overrides or its command cannot be used; the message says what to change."""


def _kind(value, reveal=True):
    """How a value reads in a message: 'a list', 'null', 'the string 'x''.

    With ``reveal`` false a scalar is named by its type alone ('a string'): for values
    that may be secrets.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}" if reveal else "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}" if reveal else "a number"
    if isinstance(value, str):
        return f"the string {value!r}" if reveal else "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def _is_scalar(value):
    # bool is an int
    return isinstance(value, (str, int, float))


def _is_positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _is_version_2(value):
    if isinstance(value, str):
        return value.strip() == RECIPE_VERSION
    return isinstance(value, int) and not isinstance(value, bool) and value == 2


def join_command_lines(command):
    """The command on one line: continuations and line breaks become single spaces."""
    return _LINE_BREAK.sub(" ", _CONTINUATION.sub(" ", command)).strip()


def placeholders(command):
    """The ``{name}`` placeholders of ``command``, each once, in order of first appearance."""
    if not isinstance(command, str):
        raise RecipeError(f"the recipe's command is {_kind(command)}, not a string")
    seen = []
    for kind, text in template_parts(command):
        if kind == "placeholder" and text not in seen:
            seen.append(text)
    return seen


def uses_brace_escapes(command):
    """Whether ``command`` is written in the escape form (it holds ``{{``)."""
    return "{{" in command


def template_parts(command):
    """The command as ``(kind, text)`` parts in order: ``("text", literal)`` and
    ``("placeholder", name)``.

    In the escape form (``uses_brace_escapes``) ``{{`` and ``}}`` are one literal brace
    each; otherwise they are two. A ``{...}`` span without a brace inside is a placeholder
    when it holds a name, literal text when it does not; any other brace is literal.
    """
    if not isinstance(command, str):
        raise RecipeError(f"the recipe's command is {_kind(command)}, not a string")
    escapes = uses_brace_escapes(command)
    parts = []
    text = []
    index = 0
    while index < len(command):
        pair = command[index : index + 2]
        if pair in ("{{", "}}"):
            text.append(pair[0] if escapes else pair)
            index += 2
            continue
        span = _BRACE_SPAN.match(command, index) if command[index] == "{" else None
        if span and _NAME.match(span.group()[1:-1]):
            if text:
                parts.append(("text", "".join(text)))
                text = []
            parts.append(("placeholder", span.group()[1:-1]))
            index = span.end()
            continue
        if span:
            text.append(span.group())
            index = span.end()
            continue
        text.append(command[index])
        index += 1
    if text:
        parts.append(("text", "".join(text)))
    return parts


def recipe_problems(recipe, provided=None):
    """Every reason the recipe cannot be deployed, each naming the field and the fix.

    ``provided`` optionally names the placeholders the caller fills in itself (the role's
    host and port, say); when given, a placeholder that neither the recipe's model and
    defaults nor ``provided`` can fill is a problem too.
    """
    if not isinstance(recipe, Mapping):
        return [
            f"the recipe is {_kind(recipe)}, not a mapping: give vllm_recipe as a mapping with "
            "model, container, command, defaults and env (sparkrun's recipe_version 2 shape)."
        ]
    problems = []

    if "recipe_version" in recipe and not _is_version_2(recipe["recipe_version"]):
        problems.append(
            f"recipe_version is {_kind(recipe['recipe_version'])}: only sparkrun's "
            "recipe_version '2' is understood; convert the recipe to that shape and set "
            "recipe_version: '2'."
        )
    for name, example in _REQUIRED_STRINGS:
        value = recipe.get(name)
        if not isinstance(value, str) or not value.strip():
            if name not in recipe:
                state = "missing"
            elif isinstance(value, str):
                state = "empty"
            else:
                state = f"{_kind(value)}, not a string"
            problems.append(f"the recipe's {name} is {state}: set it to {example}.")
    if "runtime" in recipe and recipe["runtime"] not in VLLM_RUNTIMES:
        problems.append(
            f"the recipe's runtime is {_kind(recipe['runtime'])}: this collection deploys "
            f"only vLLM; set runtime to one of {', '.join(VLLM_RUNTIMES)} (or remove it)."
        )
    if "min_nodes" in recipe and not _is_positive_int(recipe["min_nodes"]):
        problems.append(
            f"the recipe's min_nodes is {_kind(recipe['min_nodes'])}: set it to a whole "
            "number of nodes of at least 1 (2 for tensor parallel across two GB10 nodes)."
        )

    defaults = _mapping_problems(
        recipe,
        "defaults",
        problems,
        what="placeholder name",
        name_fix="name it with letters, digits and '_' (not starting with a digit).",
        value_fix="write a JSON value as a quoted string (for example '{\"temperature\":0.4}').",
    )
    _mapping_problems(
        recipe,
        "env",
        problems,
        what="environment variable name",
        name_fix="use letters, digits and '_', not starting with a digit (for example "
        "VLLM_CACHE_DIR).",
        value_fix="quote the value (for example '0').",
    )

    command = recipe.get("command")
    if isinstance(command, str) and command.strip():
        try:
            command_argv(command)
        except RecipeError as exc:
            problems.append(str(exc))
        if provided is not None:
            known = set(defaults) | set(provided) | {"model"}
            unknown = [name for name in placeholders(command) if name not in known]
            if unknown:
                listing = ", ".join("{%s}" % name for name in unknown)
                them = "it" if len(unknown) == 1 else "them"
                problems.append(
                    f"the command uses {listing} but nothing fills {them} in: add "
                    f"{' and '.join(unknown)} to the recipe's defaults (or to "
                    f"vllm_recipe_overrides), or take {them} out of the command."
                )
    return problems


def _mapping_problems(recipe, field, problems, what, name_fix, value_fix):
    """Append the problems of the recipe's ``defaults`` or ``env``; return it (or {})."""
    mapping = recipe.get(field, {})
    if not isinstance(mapping, Mapping):
        problems.append(
            f"the recipe's {field} is {_kind(mapping)}, not a mapping: give it as a mapping "
            f"of {what} to value (or leave it out)."
        )
        return {}
    for key, value in mapping.items():
        if not isinstance(key, str) or not _NAME.match(key):
            problems.append(f"{field} key {key!r} is not a valid {what}: {name_fix}")
        elif not _is_scalar(value):
            problems.append(
                f"{field}.{key} is {_kind(value)}, not a string, number or boolean: {value_fix}"
            )
    return mapping


def merge_recipe(recipe, overrides):
    """A new recipe: ``recipe`` with ``overrides`` applied; neither input is changed.

    ``overrides`` is a flat mapping. The top-level fields (model, container, runtime,
    command, min_nodes, recipe_version, and any other key the recipe already has at the
    top) are replaced. ``env`` and ``defaults`` are mappings merged into the recipe's own.
    Every other key sets that default. A null value removes the key (a top-level field,
    an environment variable or a default). ``None`` as ``overrides`` changes nothing.
    """
    if not isinstance(recipe, Mapping):
        raise RecipeError(
            f"vllm_recipe is {_kind(recipe)}, not a mapping: give the recipe as a mapping "
            "(sparkrun's recipe_version 2 shape)."
        )
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, Mapping):
        raise RecipeError(
            f"vllm_recipe_overrides is {_kind(overrides)}, not a mapping: give it as a mapping "
            "of recipe field or default name to value, for example {max_model_len: 262144}."
        )
    merged = {key: copy.deepcopy(value) for key, value in recipe.items()}

    flat = {}
    for key, value in overrides.items():
        if not isinstance(key, str):
            raise RecipeError(
                f"vllm_recipe_overrides key {key!r} is not a name: use a recipe field "
                "(model, container, command, ...) or the name of a default."
            )
        if key in ("env", "defaults"):
            _merge_section(merged, key, value)
        elif key in TOP_LEVEL_FIELDS or key in recipe:
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = copy.deepcopy(value)
        else:
            flat[key] = value

    nested = overrides.get("defaults") or {}
    clashes = sorted(key for key in flat if key in nested and nested[key] != flat[key])
    if clashes:
        raise RecipeError(
            f"vllm_recipe_overrides sets {', '.join(clashes)} twice, once at the top and once "
            "under defaults, to different values: keep one of them."
        )
    if flat:
        _merge_section(merged, "defaults", flat)
    return merged


def _merge_section(merged, section, changes):
    """Merge ``changes`` into ``merged[section]`` (a new dict); null removes a key."""
    if not isinstance(changes, Mapping):
        raise RecipeError(
            f"vllm_recipe_overrides.{section} is {_kind(changes)}, not a mapping: give it as "
            f"a mapping of name to value (a null value removes that name from {section})."
        )
    current = merged.get(section, {})
    if current is None:
        current = {}
    if not isinstance(current, Mapping):
        raise RecipeError(
            f"vllm_recipe.{section} is {_kind(current)}, not a mapping, so "
            f"vllm_recipe_overrides cannot change it: fix vllm_recipe.{section} first."
        )
    result = dict(current)
    for name, value in changes.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = copy.deepcopy(value)
    merged[section] = result


def format_value(value):
    """How a value is written into the command line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(plain(value), separators=(",", ":"))
    raise RecipeError(f"{_kind(value)} cannot be written into the command")


def _context(recipe, values=None):
    """Placeholder values, later ones winning: the model, the defaults, ``values``."""
    context = {}
    if "model" in recipe:
        context["model"] = recipe["model"]
    defaults = recipe.get("defaults", {})
    if not isinstance(defaults, Mapping):
        raise RecipeError(
            f"the recipe's defaults is {_kind(defaults)}, not a mapping: give it as a mapping "
            "of placeholder name to value."
        )
    context.update(defaults)
    if values is not None:
        if not isinstance(values, Mapping):
            raise RecipeError(
                f"the values for the command are {_kind(values)}, not a mapping of "
                "placeholder name to value (for example {host: 0.0.0.0, port: 8000})."
            )
        context.update(values)
    return context


def recipe_value(recipe, key, default=None):
    """The value placeholder ``{key}`` gets from the recipe alone (its model and defaults)."""
    if not isinstance(recipe, Mapping):
        raise RecipeError(f"the recipe is {_kind(recipe)}, not a mapping")
    return _context(recipe).get(key, default)


def render_command(recipe, values=None):
    """The recipe's command on one line, with every placeholder filled in.

    Placeholders are filled from, lowest priority first, the recipe's model, its defaults
    and ``values`` (what the caller knows, such as host and port). Booleans are written
    true/false, floats in their shortest form, mappings and lists as compact JSON.
    """
    if not isinstance(recipe, Mapping):
        raise RecipeError(f"the recipe is {_kind(recipe)}, not a mapping")
    command = recipe.get("command")
    if not isinstance(command, str) or not command.strip():
        raise RecipeError(
            f"the recipe's command is {_kind(command)}: set it to the engine's command line, "
            "for example 'vllm serve {model} --port {port}'."
        )
    context = _context(recipe, values)
    template = join_command_lines(command)
    names = placeholders(template)
    unknown = [name for name in names if name not in context]
    if unknown:
        raise RecipeError(
            "the command uses "
            + ", ".join("{%s}" % name for name in unknown)
            + " but nothing gives a value for "
            + ("it" if len(unknown) == 1 else "them")
            + ": add "
            + " and ".join(unknown)
            + " to the recipe's defaults (or to vllm_recipe_overrides), or take "
            + ("it" if len(unknown) == 1 else "them")
            + " out of the command. Known keys: "
            + ", ".join(sorted(str(key) for key in context))
            + "."
        )
    empty = [name for name in names if context[name] is None]
    if empty:
        raise RecipeError(
            f"the command uses {', '.join('{%s}' % name for name in empty)} but the value is "
            "null: give it a value, or take the placeholder out of the command."
        )
    rendered = {}
    for name in names:
        try:
            rendered[name] = format_value(context[name])
        except RecipeError as exc:
            raise RecipeError(f"placeholder {{{name}}}: {exc}") from None
    return "".join(
        rendered[text] if kind == "placeholder" else text for kind, text in template_parts(template)
    ).strip()


def command_argv(command):
    """A command line split into arguments the way a POSIX shell would (no expansion)."""
    if not isinstance(command, str):
        raise RecipeError(f"the command is {_kind(command)}, not a string")
    try:
        return shlex.split(join_command_lines(command))
    except ValueError as exc:
        raise RecipeError(
            f"the command cannot be split into arguments ({exc}): close every quote; a JSON "
            "value in single quotes must not itself contain a single quote."
        ) from None


def _as_int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _flag_setting(words, flag, defaults):
    """(value, where it comes from) of the last ``flag`` in ``words``; (None, None) if unset.

    Accepts ``--flag V`` and ``--flag=V``, with '-' or '_' in the name (vLLM takes both).
    A ``{name}`` value is looked up in ``defaults``.
    """
    found = (None, None)
    for index, word in enumerate(words):
        if not word.startswith("--"):
            continue
        name, equals, raw = word.partition("=")
        if name.replace("_", "-") != flag:
            continue
        if not equals:
            if index + 1 >= len(words):
                continue
            raw = words[index + 1]
        match = _PLACEHOLDER.fullmatch(raw)
        if match:
            key = match.group(1)
            found = (_as_int(defaults.get(key)), f"defaults.{key}")
        else:
            found = (_as_int(raw), f"the command's literal {flag} {raw}")
    return found


def flag_int(argv, flag):
    """The whole number the last ``flag`` of a rendered command gives (``--flag V`` or
    ``--flag=V``, '-' or '_' in the name), or None when it is unset or no number."""
    return _flag_setting([str(word) for word in argv or []], flag, {})[0]


def recipe_warnings(recipe):
    """What would deploy but run badly or not as meant; each sentence says why and the fix.

    The recipe is assumed to have passed ``recipe_problems``; parts that did not are skipped.
    """
    if not isinstance(recipe, Mapping):
        return []
    defaults = recipe.get("defaults")
    if not isinstance(defaults, Mapping):
        defaults = {}
    command = recipe.get("command")
    template = join_command_lines(command) if isinstance(command, str) else ""
    try:
        words = shlex.split(template)
    except ValueError:
        words = template.split()
    warnings = []

    capture, capture_from = _flag_setting(words, _CAPTURE_FLAG, defaults)
    seqs, seqs_from = _flag_setting(words, _SEQS_FLAG, defaults)
    if capture is not None and seqs is not None and capture < seqs:
        warnings.append(
            f"max_cudagraph_capture_size {capture} ({capture_from}) is below max_num_seqs "
            f"{seqs} ({seqs_from}): CUDA graphs then cover only batches of up to {capture} "
            "sequences, every larger batch runs eager and concurrency collapses. This was the "
            "costliest mistake in the GB10 field report (capture size 8 with 128 sequences); "
            "restoring 128 was worth +40-170% aggregate throughput. Set "
            f"max_cudagraph_capture_size to at least {seqs} (max_num_seqs)."
        )
    elif capture is not None and seqs_from is None:
        warnings.append(
            f"max_cudagraph_capture_size is {capture} ({capture_from}) but the command does "
            f"not set {_SEQS_FLAG}, so vLLM picks the batch limit itself and it may exceed the "
            "capture size (larger batches then run eager): add "
            f"{_SEQS_FLAG} {{max_num_seqs}} to the command with max_num_seqs at most {capture}."
        )

    used = set(placeholders(template))
    for key in defaults:
        if isinstance(key, str) and key not in used:
            warnings.append(
                f"defaults.{key} is set but the command has no {{{key}}} placeholder, so it "
                f"has no effect: add it to the command (for example --{key.replace('_', '-')} "
                f"{{{key}}}) or remove it; a misspelt override name lands here too."
            )
    for key, value in defaults.items():
        if isinstance(value, str) and value.strip()[:1] in ("{", "["):
            try:
                json.loads(value)
            except ValueError as exc:
                warnings.append(
                    f"defaults.{key} looks like JSON but does not parse ({exc}): vLLM will "
                    "reject it when the engine starts; fix the JSON."
                )
    return warnings
