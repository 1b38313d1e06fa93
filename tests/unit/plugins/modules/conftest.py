# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every module test runs with exit_json/fail_json raising (see utils.py)."""

from __future__ import annotations

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gb10.serving.tests.unit.plugins.modules.utils import (
    exit_json,
    fail_json,
)


@pytest.fixture(autouse=True)
def fake_exits(monkeypatch):
    monkeypatch.setattr(AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(AnsibleModule, "fail_json", fail_json)
