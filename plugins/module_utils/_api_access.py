# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks of the engine's team access: API users, their keys, who may reach the API.

Pure Python, no Ansible imports. ``api_user_problems`` checks
``vllm_api_users`` (a list of ``{name, key?}``) against the service key;
``cidr_problems`` checks ``vllm_allowed_cidrs``; ``served_model_name`` reads the name the
engine answers to from its command line. The problem messages name the variable and the
fix, and never hold a key: they end up in the play's output.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping
from typing import List, Optional

from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import (
    _kind as _recipe_kind,
)

# A user name: a lower-case letter, then up to 31 lower-case letters, digits, '_' or '-'.
USER_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}\Z")
# The shortest key a user may be given (a generated one has 48 characters).
KEY_MIN_LENGTH = 32
# The characters of an HTTP Bearer token (RFC 6750 b64token): no quoting is ever needed,
# in a header, an env file or vLLM's YAML config. A leading '-' would read as a flag.
_KEY = re.compile(r"[A-Za-z0-9._~+/][A-Za-z0-9._~+/-]*=*\Z")
USER_FIELDS = ("name", "key")
NAME_RULE = "a lower-case letter, then up to 31 lower-case letters, digits, '_' or '-'"


# Named by type alone, never by value: a value here may be a key.
_kind = functools.partial(_recipe_kind, reveal=False)


def api_user_problems(users, service_key: Optional[str] = None) -> List[str]:
    """What is wrong with ``vllm_api_users``, as messages naming the variable and the fix.

    ``users`` is a list of mappings with a ``name`` and an optional ``key`` (absent or null:
    one is generated on the controller). ``service_key`` is the service key (``vllm_api_key``
    or the generated one), when known: no user may share it. An empty list means nothing
    is wrong. No message ever holds a key.
    """
    if not isinstance(users, list):
        return [
            f"vllm_api_users is {_kind(users)}, not a list: give one entry per person, for "
            "example [{name: alice}, {name: bob, key: '{{ vault_bob_key }}'}], or [] for none."
        ]
    problems = []
    names = []
    owners = {}  # key -> first user (by position) holding it
    for index, user in enumerate(users):
        where = f"vllm_api_users[{index}]"
        if not isinstance(user, Mapping):
            problems.append(
                f"{where} is {_kind(user)}, not a mapping: give {{name: <user>}} and, "
                "optionally, key: <a vaulted key>."
            )
            continue
        unknown = sorted(str(field) for field in user if field not in USER_FIELDS)
        if unknown:
            problems.append(
                f"{where} has unknown field(s) {', '.join(unknown)}: a user has only name and "
                "key; remove the others."
            )
        name = user.get("name")
        if not isinstance(name, str) or not USER_NAME.match(name):
            shown = repr(name) if isinstance(name, str) else _kind(name)
            problems.append(
                f"{where}.name is {shown}: a user name is {NAME_RULE} (it names the "
                "user's client directory), for example alice or dev-2."
            )
            label = where
        elif name in names:
            problems.append(
                f"vllm_api_users names {name} more than once: list each user once (give "
                "two people two names)."
            )
            label = f"{where} ({name})"
        else:
            names.append(name)
            label = f"{where} ({name})"
        if "key" not in user or user["key"] is None:
            continue
        key = user["key"]
        problem = _key_problem(key)
        if problem:
            problems.append(
                f"{label}.key {problem}; or leave key out to have one generated on the controller."
            )
            continue
        if service_key and key == service_key:
            problems.append(
                f"{label}.key is the service key (vllm_api_key): the checks and the bench "
                "use that one; give the user a key of their own, or leave key out to have "
                "one generated."
            )
        elif key in owners:
            problems.append(
                f"{label}.key is the same as {owners[key]}.key: give every user a key of "
                "their own (the engine could not tell them apart, and removing one would "
                "lock out the other), or leave key out to have one generated."
            )
        else:
            owners[key] = label
    return problems


def _key_problem(key) -> Optional[str]:
    """Why a given key cannot be used, without showing it; None when it can."""
    if not isinstance(key, str):
        return f"is {_kind(key)}, not a string: give the key as a (vaulted) string"
    if len(key) < KEY_MIN_LENGTH:
        return (
            f"has {len(key)} characters: give a key of at least {KEY_MIN_LENGTH}, for "
            "example from `openssl rand -hex 24`"
        )
    if not _KEY.match(key):
        return (
            "holds a character a Bearer token cannot carry, or starts with '-': use only "
            "letters, digits and - . _ ~ + / (with = at the end only), for example "
            "`openssl rand -hex 24`"
        )
    return None


def cidr_problems(cidrs, variable: str = "vllm_allowed_cidrs") -> List[str]:
    """What is wrong with a list of IPv4/IPv6 networks in CIDR notation (a non-empty list)."""
    if not isinstance(cidrs, list):
        return [
            f"{variable} is {_kind(cidrs)}, not a list: give the networks that may reach the "
            "API in CIDR notation, for example ['10.0.0.0/24'], or ['0.0.0.0/0', '::/0'] for "
            "everyone."
        ]
    if not cidrs:
        return [
            f"{variable} is empty, which would let nobody reach the API: give at least one "
            "network in CIDR notation, for example ['10.0.0.0/24'] (['0.0.0.0/0', '::/0'] for "
            "everyone)."
        ]
    problems = []
    seen = []
    for index, value in enumerate(cidrs):
        where = f"{variable}[{index}]"
        if not isinstance(value, str):
            problems.append(
                f"{where} is {_kind(value)}, not a string: write a network in CIDR notation, "
                "for example '10.0.0.0/24'."
            )
            continue
        if "/" not in value:
            problems.append(
                f"{where} is {value!r}, without a prefix length: write {value}/32 for one "
                "IPv4 address (/128 for IPv6), or the network, for example 10.0.0.0/24."
            )
            continue
        try:
            network = ipaddress.ip_network(value, strict=False)
        except ValueError:
            problems.append(
                f"{where} is {value!r}, not an IPv4 or IPv6 network in CIDR notation: write "
                "it as address/prefix, for example 10.0.0.0/24 or fd00::/64."
            )
            continue
        address = ipaddress.ip_interface(value).ip
        if address != network.network_address:
            problems.append(
                f"{where} is {value!r}, which has host bits set: write the network, "
                f"{network}, or {address}/{network.max_prefixlen} for that one address."
            )
            continue
        if network in seen:
            problems.append(f"{variable} lists {network} more than once: list it once.")
            continue
        seen.append(network)
    return problems


def served_model_name(argv, model: str) -> str:
    """The model name the engine answers to: the first ``--served-model-name``, else ``model``."""
    if not isinstance(argv, (list, tuple)):
        return model
    for index, arg in enumerate(argv):
        flag, equals, value = str(arg).partition("=")
        if flag.replace("_", "-") != "--served-model-name":
            continue
        if not equals:
            value = str(argv[index + 1]) if index + 1 < len(argv) else ""
        return model if not value or value.startswith("-") else value
    return model
