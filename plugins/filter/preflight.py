# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.preflight_problems: one preflight check, by name, over its values."""

from __future__ import annotations

import inspect
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain
from ansible_collections.gb10.serving.plugins.module_utils._preflight import CHECKS


def _parameters(check):
    return list(inspect.signature(CHECKS[check]).parameters)


def preflight_problems(arguments, check):
    """Run ``check`` over ``arguments`` (its parameters by name); its problems, empty if none."""
    if check not in CHECKS:
        raise AnsibleFilterError(
            f"preflight_problems: unknown check {check!r}; the checks are {', '.join(CHECKS)}"
        )
    if not isinstance(arguments, Mapping):
        raise AnsibleFilterError(
            f"preflight_problems({check}): the input must be a mapping of "
            f"{', '.join(_parameters(check))} to their values, got {type(arguments).__name__}"
        )
    wanted = _parameters(check)
    if sorted(arguments) != sorted(wanted):
        raise AnsibleFilterError(
            f"preflight_problems({check}): the input must hold exactly {', '.join(wanted)}; "
            f"it holds {', '.join(sorted(str(name) for name in arguments)) or 'nothing'}"
        )
    return CHECKS[check](**{str(name): plain(value) for name, value in arguments.items()})


class FilterModule:
    """gb10.serving preflight filters."""

    def filters(self):
        return {"preflight_problems": preflight_problems}
