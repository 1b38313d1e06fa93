# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.preflight_problems: one check of _preflight, by name, over its values."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.preflight import FilterModule
from ansible_collections.gb10.serving.plugins.module_utils._preflight import CHECKS

FILTERS = FilterModule().filters()
DOC = Path(__file__).resolve().parents[4] / "plugins" / "filter" / "preflight_problems.yml"


class TemplatedStr(str):
    """What a templated value can look like: a str subclass."""


def preflight_problems(arguments, check):
    return FILTERS["preflight_problems"](arguments, check)


def test_filters_are_registered():
    assert sorted(FILTERS) == ["preflight_problems"]


def test_runs_the_named_check_over_plain_values():
    arguments = {TemplatedStr("node_model"): TemplatedStr("DeepSeek-V4-Flash-DSpark")}
    problems = preflight_problems(arguments, "node_model")
    assert problems == CHECKS["node_model"](node_model="DeepSeek-V4-Flash-DSpark")
    assert preflight_problems({"node_model": "org/name"}, "node_model") == []


def test_an_unknown_check_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="unknown check 'node_modle'.*node_model"):
        preflight_problems({"node_model": "org/name"}, "node_modle")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"node_container_uid": 1000}, "must hold exactly node_container_uid, node_container_gid"),
        (
            {"node_container_uid": 1, "node_container_gid": 1, "extra": 1},
            "it holds extra, node_container_gid, node_container_uid",
        ),
        ({}, "it holds nothing"),
        ([1000, 1000], "the input must be a mapping of node_container_uid, node_container_gid"),
    ],
)
def test_an_input_without_exactly_the_checks_values_is_a_filter_error(arguments, message):
    with pytest.raises(AnsibleFilterError, match=message):
        preflight_problems(arguments, "node_ids")


def test_the_documented_checks_are_the_checks():
    with open(DOC, encoding="utf-8") as stream:
        doc = yaml.safe_load(stream)["DOCUMENTATION"]
    assert doc["options"]["check"]["choices"] == list(CHECKS)
    text = " ".join(doc["description"])
    for check in CHECKS:
        assert f"V({check})" in text
