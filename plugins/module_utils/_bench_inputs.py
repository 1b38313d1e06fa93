# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Check the bench inputs (concurrencies, sweep variants) against the recipe, naming the
variable and the fix; find the recipe fields a sweep may change.

Private to gb10.serving, like every ``_bench_*`` module (see ``_bench_common``).
"""

from __future__ import annotations

import difflib
import json
from typing import List, Optional

# Keys a sweep variant may change besides the recipe's defaults (see check_bench_inputs).
RECIPE_TOP_LEVEL_KEYS = ("model", "container", "command", "env")


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _variant_overrides(sweep) -> List[tuple]:
    """(label for messages, overrides) per sweep variant; a mapping is one grid."""
    if isinstance(sweep, dict):
        return [("bench_sweep_variants", sweep)]
    return [
        (
            f"bench_sweep_variants[{index}]",
            item.get("overrides") if isinstance(item, dict) and "overrides" in item else item,
        )
        for index, item in enumerate(sweep)
    ]


def check_bench_inputs(concurrencies, max_num_seqs, sweep=None, recipe_defaults=None) -> List[str]:
    """What is wrong with the bench inputs, as messages naming the variable and the fix.

    ``concurrencies``: ``bench_concurrency``, a non-empty list of distinct positive
    integers, none above ``max_num_seqs`` (the recipe's; None when the recipe leaves vLLM's
    default, which is then not checked). ``sweep``: ``bench_sweep_variants``, either a mapping of
    recipe key to the list of values to try (``{max_model_len: [393216, 500000]}``) or a
    list of variants, each an overrides mapping or ``{'name': ..., 'overrides': {...}}``.
    Its keys must be keys of the recipe: one of ``recipe_defaults`` (the recipe's
    ``defaults`` mapping; keys are not checked when it is None) or ``model``, ``container``,
    ``command``, ``env``. An empty list means nothing is wrong.
    """
    problems = []
    if not isinstance(concurrencies, list):
        problems.append(
            f"bench_concurrency is {type(concurrencies).__name__} ({concurrencies!r}), not a "
            "list: give the concurrencies to measure as a list, for example [1, 4, 8, 16]."
        )
        concurrencies = []
    elif not concurrencies:
        problems.append(
            "bench_concurrency is empty: give at least one concurrency to measure, for "
            "example [1, 4, 8, 16]."
        )
    good = []
    for index, value in enumerate(concurrencies):
        if not _positive_int(value):
            problems.append(
                f"bench_concurrency[{index}] is {value!r}: every concurrency must be a "
                "positive integer (number of requests in flight), for example 4."
            )
        elif value in good:
            problems.append(
                f"bench_concurrency lists {value} more than once: list each concurrency once."
            )
        else:
            good.append(value)
    if max_num_seqs is not None and not _positive_int(max_num_seqs):
        problems.append(
            f"the recipe's max_num_seqs is {max_num_seqs!r}, not a positive integer: fix "
            "max_num_seqs in vllm_recipe (or vllm_recipe_overrides)."
        )
    elif max_num_seqs is not None:
        for value in good:
            if value > max_num_seqs:
                problems.append(
                    f"bench_concurrency {value} is above the recipe's max_num_seqs "
                    f"({max_num_seqs}): the engine would queue the extra requests and measure "
                    f"{max_num_seqs} in flight; lower it to {max_num_seqs} or less, or raise "
                    "max_num_seqs in the recipe."
                )
    if sweep is None:
        return problems
    if not isinstance(sweep, (dict, list)) or not sweep:
        problems.append(
            f"bench_sweep_variants is {sweep!r}: give a mapping of recipe key to the values to try "
            "(for example {max_model_len: [393216, 500000]}) or a non-empty list of override "
            "mappings."
        )
        return problems
    known = fields = None
    if recipe_defaults is not None:
        known = set(recipe_defaults) | set(RECIPE_TOP_LEVEL_KEYS)
        fields = json_fields(recipe_defaults)
    for label, overrides in _variant_overrides(sweep):
        if not isinstance(overrides, dict) or not overrides:
            problems.append(
                f"{label} is {overrides!r}: give a non-empty mapping of recipe key to value "
                "(or {name: ..., overrides: {...}})."
            )
            continue
        for key, value in overrides.items():
            if isinstance(sweep, dict) and (not isinstance(value, list) or not value):
                problems.append(
                    f"bench_sweep_variants.{key} is {value!r}: give the values to try as a "
                    f"non-empty list, for example {key}: [{value!r}]."
                )
            if known is not None and key not in known:
                inside = fields.get(key, [])
                if len(inside) > 1:
                    problems.append(
                        f"{label} changes {key!r}, a field inside more than one of the "
                        f"recipe's JSON values ({', '.join(inside)}): sweep the one you mean "
                        "with whole values instead."
                    )
                elif not inside:
                    problems.append(_unknown_key_message(label, key, recipe_defaults))
            if key == "max_num_seqs" and good:
                values = value if isinstance(sweep, dict) and isinstance(value, list) else [value]
                for seqs in values:
                    if _positive_int(seqs) and max(good) > seqs:
                        problems.append(
                            f"{label} sets max_num_seqs {seqs}, below bench_concurrency "
                            f"{max(good)}: raise it or drop that concurrency."
                        )
    return problems


def _unknown_key_message(label, key, recipe_defaults) -> str:
    message = f"{label} changes {key!r}, which the recipe does not have"
    names = [str(name) for name in recipe_defaults] + sorted(json_fields(recipe_defaults))
    close = difflib.get_close_matches(str(key), names, n=1)
    if close:
        message += f" (did you mean {close[0]!r}?)"
    return (
        message + ": use one of the recipe's defaults keys, a field inside one of its JSON "
        "values (num_speculative_tokens inside speculative_config), or model, container, "
        "command, env (a new key would only add an unused default)."
    )


def json_fields(recipe_defaults) -> dict:
    """Field name -> the recipe defaults keys whose value is a JSON object holding it.

    The recipe keeps nested engine settings as JSON text (``speculative_config:
    '{"method":"dspark","num_speculative_tokens":3}'``); a sweep may name such a field
    directly (``num_speculative_tokens: [3, 5]``).
    """
    fields = {}
    for name, value in (recipe_defaults or {}).items():
        data = json_object(value)
        for field in data or {}:
            fields.setdefault(field, []).append(str(name))
    return fields


def json_object(value) -> Optional[dict]:
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
