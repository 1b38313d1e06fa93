# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Redactor: the secret fields of engine log lines, and given keys anywhere."""

from __future__ import annotations

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._redact import MASK, Redactor

PREFIX = "(APIServer pid=1868) INFO 04-27 14:16:41 [utils.py:238] "


@pytest.mark.parametrize(
    ("line", "masked"),
    [
        pytest.param(
            PREFIX + "non-default args: {'host': '0.0.0.0', 'api_key': ['k-one', 'k-two'], "
            "'port': 8000}",
            PREFIX + "non-default args: {'host': '0.0.0.0', 'api_key': '<redacted>', 'port': 8000}",
            id="vllm-0.10+-args-list",
        ),
        pytest.param(
            PREFIX + "non-default args: {'api_key': 'token-abc123', 'max_model_len': 8192}",
            PREFIX + "non-default args: {'api_key': '<redacted>', 'max_model_len': 8192}",
            id="older-args-string",
        ),
        pytest.param(
            "INFO 05-01 args: Namespace(host=None, port=8000, api_key='token-abc', ssl=None)",
            "INFO 05-01 args: Namespace(host=None, port=8000, api_key='<redacted>', ssl=None)",
            id="namespace",
        ),
        pytest.param(
            "+ vllm serve org/m --api-key token-abc --port 8000",
            "+ vllm serve org/m --api-key <redacted> --port 8000",
            id="flag",
        ),
        pytest.param(
            "+ vllm serve org/m --api_key=token-abc",
            "+ vllm serve org/m --api_key=<redacted>",
            id="underscore-flag",
        ),
        pytest.param(
            "env: VLLM_API_KEY=abc123 HF_TOKEN=hf_abc PATH=/usr/bin",
            "env: VLLM_API_KEY='<redacted>' HF_TOKEN='<redacted>' PATH=/usr/bin",
            id="environment",
        ),
        pytest.param(
            PREFIX + "non-default args: {'model': 'org/m', 'max_model_len': 8192}",
            PREFIX + "non-default args: {'model': 'org/m', 'max_model_len': 8192}",
            id="no-secret-unchanged",
        ),
    ],
)
def test_secret_fields_are_masked_whatever_the_key(line, masked):
    assert Redactor().text(line) == masked
    # Masking is stable: a masked line masks to itself.
    assert Redactor().text(masked) == masked


def test_given_keys_are_masked_anywhere_longest_first():
    keys = ["sk-abc", "sk-abcdef-long"]
    text = "Bearer sk-abcdef-long failed; retry with sk-abc."
    assert Redactor(keys).text(text) == f"Bearer {MASK} failed; retry with {MASK}."


def test_empty_and_missing_keys_are_ignored():
    assert Redactor(["", None]).text("nothing to hide") == "nothing to hide"


def test_bytes_that_are_not_utf8_survive():
    block = b"\xff\xfe api_key='k' \xe2\x80\xa6\n"
    assert Redactor().data(block) == b"\xff\xfe api_key='<redacted>' \xe2\x80\xa6\n"
