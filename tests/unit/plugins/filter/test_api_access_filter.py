# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters gb10.serving.api_user_problems, cidr_problems and served_model_name."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.api_access import FilterModule

FILTERS = FilterModule().filters()
KEY = "k" * 40


class TemplatedStr(str):
    """What a templated value can look like: a str subclass."""


def test_filters_are_registered():
    assert sorted(FILTERS) == ["api_user_problems", "cidr_problems", "served_model_name"]


def test_api_user_problems_takes_templated_values():
    users = [{TemplatedStr("name"): TemplatedStr("bob"), "key": TemplatedStr(KEY)}]
    assert FILTERS["api_user_problems"](users, None) == []
    problems = FILTERS["api_user_problems"](users, TemplatedStr(KEY))
    assert len(problems) == 1
    assert "is the service key (vllm_api_key)" in problems[0]
    assert KEY not in problems[0]


def test_api_user_problems_reports_instead_of_failing():
    assert FILTERS["api_user_problems"]("alice")[0].startswith("vllm_api_users is a string")


def test_cidr_problems_default_and_named_variable():
    assert FILTERS["cidr_problems"](["0.0.0.0/0", "::/0"]) == []
    assert FILTERS["cidr_problems"](("10.0.0.0/24",)) == []
    assert FILTERS["cidr_problems"](["x"], "firewall_allowed")[0].startswith(
        "firewall_allowed[0] is 'x'"
    )


def test_served_model_name_from_the_rendered_argv():
    argv = ["vllm", "serve", "org/model", "--served-model-name", TemplatedStr("ds4")]
    assert FILTERS["served_model_name"](argv, "org/model") == "ds4"
    assert FILTERS["served_model_name"](argv[:3], TemplatedStr("org/model")) == "org/model"


def test_served_model_name_wants_the_model_as_a_string():
    with pytest.raises(AnsibleFilterError, match="served_model_name: model must be"):
        FILTERS["served_model_name"](["vllm"], None)
