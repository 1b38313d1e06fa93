# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action gb10.serving.warn: show each message as an Ansible warning; never fail, never change."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


def _messages(value):
    """A string or a list of strings, as a list (the argument spec's type for msg)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return list(value)
    raise TypeError("msg must be a string or a list of strings")


class ActionModule(ActionBase):
    """Add the messages to the result's warnings, which Ansible prints as [WARNING]."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # unused, as in every action plugin since ansible-core 2.x

        _validation, args = self.validate_argument_spec(
            argument_spec={"msg": {"type": _messages, "required": True}},
        )
        if args["msg"] is None:
            raise AnsibleActionFail(
                "msg is null: give a warning as a string or a list of strings (an empty list "
                "shows nothing)"
            )
        # A blank message would print an empty [WARNING]: line; leave it out.
        messages = [message for message in args["msg"] if message.strip()]
        if messages:
            result["warnings"] = list(result.get("warnings") or []) + messages
        result["changed"] = False
        result["warnings_emitted"] = len(messages)
        return result
