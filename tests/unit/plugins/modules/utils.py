# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module glue tests: exit_json and fail_json raise, carrying the module's result."""

from __future__ import annotations

import pytest
from ansible.module_utils.testing import patch_module_args


class AnsibleExitJson(Exception):
    """exit_json was called; .result holds its keyword arguments."""

    def __init__(self, result):
        super().__init__(result)
        self.result = result


class AnsibleFailJson(Exception):
    """fail_json was called; .result holds its keyword arguments."""

    def __init__(self, result):
        super().__init__(result)
        self.result = result


def exit_json(_module, **kwargs):
    raise AnsibleExitJson(kwargs)


def fail_json(_module, **kwargs):
    raise AnsibleFailJson(kwargs)


def module_exit(main, args):
    """Run a module's main with args; it must call exit_json. Return the result."""
    with patch_module_args(args), pytest.raises(AnsibleExitJson) as excinfo:
        main()
    return excinfo.value.result


def module_fail(main, args):
    """Run a module's main with args; it must call fail_json. Return the result."""
    with patch_module_args(args), pytest.raises(AnsibleFailJson) as excinfo:
        main()
    return excinfo.value.result
