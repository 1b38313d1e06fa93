# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action gb10.serving.warn, run as the task executor runs it, on a real ActionBase.

The task is a real Task and the connection the real local one (the plugin needs none, but
ActionBase.run looks at the connection's shell); what Ansible then prints is the result's
``warnings`` list, one ``[WARNING]:`` line each.
"""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleActionFail
from ansible_collections.gb10.serving.plugins.action.warn import ActionModule
from ansible_collections.gb10.serving.tests.unit.plugins.action.utils import run_action


def run_warn(args, check_mode=False):
    return run_action(ActionModule, "gb10.serving.warn", args, check_mode)


@pytest.mark.parametrize(
    ("msg", "warnings"),
    [
        pytest.param(
            "capture size below max_num_seqs", ["capture size below max_num_seqs"], id="one"
        ),
        pytest.param(["first", "second"], ["first", "second"], id="list"),
        pytest.param(["first", "", "  ", "second"], ["first", "second"], id="blank-left-out"),
    ],
)
def test_each_message_becomes_a_warning(msg, warnings):
    result = run_warn({"msg": msg})
    assert result["warnings"] == warnings
    assert result["warnings_emitted"] == len(warnings)
    assert result["changed"] is False
    assert "failed" not in result


@pytest.mark.parametrize("msg", [[], "", [" "]])
def test_nothing_to_say_is_ok_and_shows_nothing(msg):
    result = run_warn({"msg": msg})
    assert "warnings" not in result
    assert result == {"changed": False, "warnings_emitted": 0}


def test_check_mode_warns_too():
    assert run_warn({"msg": "x"}, check_mode=True)["warnings"] == ["x"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param({}, "missing required arguments: msg", id="missing"),
        pytest.param({"msg": None}, "msg", id="null"),
        pytest.param({"msg": 5}, "msg must be a string or a list of strings", id="number"),
        pytest.param({"msg": ["a", 1]}, "msg must be a string or a list of strings", id="mixed"),
        pytest.param({"msg": {"a": "b"}}, "msg must be a string or a list", id="mapping"),
        pytest.param({"msg": "x", "fail": True}, "Unsupported parameters.*fail", id="unknown"),
    ],
)
def test_bad_arguments_fail_the_task(args, message):
    with pytest.raises(AnsibleActionFail, match=message):
        run_warn(args)
