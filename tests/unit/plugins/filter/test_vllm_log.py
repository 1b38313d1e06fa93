# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter gb10.serving.parse_vllm_log: the module_utils parser's summary of a vLLM log."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.filter.vllm_log import FilterModule
from ansible_collections.gb10.serving.plugins.module_utils._vllm_log import (
    RESULT_KEYS,
    parse_text,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    load_capture,
    load_raw,
)

DOC = Path(__file__).resolve().parents[4] / "plugins" / "filter" / "parse_vllm_log.yml"
TINY = "vllm_cpu_tiny_llama_boot_v0.32.log"  # the lab's engine, one node
GLMV_0_11 = "vllm_boot_v011_single_glmv_issue204.log"  # vLLM 0.11, separate KV lines


def parse_vllm_log(value):
    return FilterModule().filters()["parse_vllm_log"](value)


def test_text_gives_the_parser_result():
    text = load_raw("vllm", TINY)
    result = parse_vllm_log(text)
    assert set(result) == set(RESULT_KEYS)
    assert result == parse_text(text)
    assert (result["kv_cache_tokens"], result["kv_cache_device"]) == (2097152, "CPU")


@pytest.mark.parametrize("container", [list, tuple], ids=["list", "tuple"])
def test_lines_give_the_same_result_as_text(container):
    # What command's stdout_lines holds: lines without their newline.
    text = load_capture("vllm", GLMV_0_11)
    result = parse_vllm_log(container(text.split("\n")[:-1]))
    assert result == parse_text(text)
    assert result["max_concurrency"] == 6.49


def test_empty_log():
    assert parse_vllm_log("")["lines"] == 0
    assert parse_vllm_log([])["ready"] is False


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(None, "got NoneType", id="none"),
        pytest.param(42, "got int", id="int"),
        pytest.param({"stdout": "x"}, "got dict", id="registered-result-not-its-stdout"),
        pytest.param(b"INFO x", "got bytes", id="bytes"),
        pytest.param(["ok", 3], "holding int", id="list-with-a-number"),
    ],
)
def test_bad_input_is_a_filter_error(value, message):
    with pytest.raises(AnsibleFilterError, match="parse_vllm_log expects") as excinfo:
        parse_vllm_log(value)
    assert message in str(excinfo.value)


def test_documentation_lists_every_key():
    doc = yaml.safe_load(DOC.read_text(encoding="utf-8"))
    assert doc["DOCUMENTATION"]["name"] == "parse_vllm_log"
    assert set(doc["RETURN"]["_value"]["contains"]) == set(RESULT_KEYS)
    assert set(doc["RETURN"]["_value"]["contains"]["speculative"]["contains"]) == {
        "method",
        "num_tokens",
        "mean_acceptance_length",
        "per_position_acceptance",
        "avg_draft_acceptance_rate",
    }
    assert set(doc["RETURN"]["_value"]["contains"]["errors"]["contains"]) == {
        "kind",
        "line",
        "hint",
        "count",
        "frame",
    }
