# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Data handed over by Ansible, as plain Python data for the pure code.

Templated values arrive as Ansible's own mapping and sequence types and as subclasses of
str, int, float and bool (tagged values); JSON and YAML dumpers, equality with literals in
tests and ``type() is`` checks want the exact types. One helper for every entry point.
"""

from __future__ import annotations

from collections.abc import Mapping


def plain(value):
    """``value`` as dicts, lists, str, int, float, bool and None, recursively."""
    if isinstance(value, Mapping):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    # bool before int: a bool is an int too.
    for exact in (bool, str, int, float):
        if isinstance(value, exact):
            return exact(value)
    return value


def jinja_int(value) -> int:
    """Jinja's ``int`` filter: the whole number in ``value``, 0 when there is none."""
    try:
        if isinstance(value, str):
            return int(value, 10)
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def jinja_float(value) -> float:
    """Jinja's ``float`` filter: the number in ``value``, 0.0 when there is none."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
