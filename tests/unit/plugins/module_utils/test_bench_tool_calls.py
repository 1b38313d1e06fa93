# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._bench_tool_calls: the tool-call score.

The captures and the lab report the cases use are in bench_cases.py.
"""

from __future__ import annotations

import json

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._bench_common import (
    BenchReportError,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_tool_calls import score_tool_calls
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.bench_cases import (
    tool_case,
)

# --- tool calls ----------------------------------------------------------------------------


def _with_arguments(response, arguments):
    """derived: a captured tool-call response with other arguments."""
    response = json.loads(json.dumps(response))
    response["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = arguments
    return response


def _with_type(response, kind):
    response = json.loads(json.dumps(response))
    response["choices"][0]["message"]["tool_calls"][0]["type"] = kind
    return response


TOOL_CASES = [
    pytest.param(
        tool_case("named-get_weather"),
        "get_weather",
        "get_weather",
        "the arguments are JSON but not an object: 'false'",
        id="vllm-0.32-cpu-tiny-named-arguments-false",
    ),
    pytest.param(
        tool_case("named-read_file"),
        "read_file",
        "read_file",
        "the arguments are JSON but not an object: 'Infinity'",
        id="vllm-0.32-cpu-tiny-named-arguments-infinity",
    ),
    pytest.param(
        tool_case("auto"),
        "get_weather",
        None,
        "no tool_calls (finish_reason length); the model answered with text: ' as",
        id="vllm-0.32-cpu-tiny-auto-text",
    ),
    pytest.param(
        tool_case("no-tools"),
        "get_weather",
        None,
        "no tool_calls (finish_reason length)",
        id="vllm-0.32-cpu-tiny-no-tools",
    ),
    pytest.param(
        tool_case("too-long"),
        "get_weather",
        None,
        "the request failed: This model's maximum context length is 512 tokens.",
        id="vllm-0.32-cpu-tiny-http-400",
    ),
    pytest.param(
        tool_case("named-get_weather"),
        "read_file",
        "get_weather",
        "called 'get_weather', expected 'read_file'",
        id="vllm-0.32-cpu-tiny-wrong-function",
    ),
    pytest.param(
        _with_arguments(tool_case("named-get_weather"), '{"city": "Paris"}'),
        "get_weather",
        "get_weather",
        None,
        id="derived-good-arguments-pass",
    ),
    pytest.param(
        _with_arguments(tool_case("named-get_weather"), '{"town": "Paris"}'),
        {"name": "get_weather", "required": ["city"]},
        "get_weather",
        "the arguments lack city",
        id="derived-required-argument-missing",
    ),
    pytest.param(
        _with_arguments(tool_case("named-get_weather"), '{"city": "Par'),
        "get_weather",
        "get_weather",
        'the arguments are not JSON: \'{"city": "Par\'',
        id="derived-arguments-cut-short",
    ),
    pytest.param(
        _with_arguments(tool_case("named-get_weather"), {"city": "Paris"}),
        "get_weather",
        "get_weather",
        "the arguments are dict, not a JSON string",
        id="derived-arguments-not-a-string",
    ),
    pytest.param(
        _with_type(tool_case("named-get_weather"), "code_interpreter"),
        "get_weather",
        "get_weather",
        "tool_calls[0] has type 'code_interpreter', not 'function'",
        id="derived-not-a-function",
    ),
    pytest.param(
        {"error": "timed out"},
        "get_weather",
        None,
        "the request failed: timed out",
        id="error-text",
    ),
    pytest.param(
        {"choices": []}, "get_weather", None, "the response has no choices", id="no-choices"
    ),
    pytest.param("nope", "get_weather", None, "the response is str, not a JSON object", id="str"),
]


@pytest.mark.parametrize(("response", "expected", "called", "reason"), TOOL_CASES)
def test_tool_call_cases(response, expected, called, reason):
    result = score_tool_calls([response], [expected])
    case = result["cases"][0]
    assert case["called"] == called
    assert case["expected"] == (expected if isinstance(expected, str) else expected["name"])
    if reason is None:
        assert case == {**case, "passed": True, "reason": None}
        assert result["score"] == "1/1"
    else:
        assert case["passed"] is False
        assert case["reason"].startswith(reason), case["reason"]
        assert result["score"] == "0/1"


def test_tool_call_score_over_the_lab_captures():
    # The lab's check asks by name; the random-weight model names the function but its
    # arguments are not a JSON object, so the lab scores 0/3, honestly.
    responses = [tool_case("named-get_weather"), tool_case("named-read_file"), tool_case("auto")]
    result = score_tool_calls(responses, ["get_weather", "read_file", "get_weather"])
    assert (result["passed"], result["total"], result["score"]) == (0, 3, "0/3")
    assert [case["passed"] for case in result["cases"]] == [False, False, False]
    good = _with_arguments(tool_case("named-read_file"), '{"path": "README.md"}')
    result = score_tool_calls(
        responses[:1] + [good] + responses[2:], ["get_weather", "read_file", "get_weather"]
    )
    assert result["score"] == "1/3"


@pytest.mark.parametrize(
    ("responses", "expected", "message"),
    [
        pytest.param([{}], [], "1 responses for 0 expected calls", id="lengths"),
        pytest.param({}, [], "must both be lists", id="not-lists"),
        pytest.param([{}], [""], r"expected\[0\] is ''", id="empty-name"),
        pytest.param(
            [{}], [{"name": "f", "required": "city"}], r"expected\[0\].required", id="required-str"
        ),
    ],
)
def test_tool_call_bad_input(responses, expected, message):
    with pytest.raises(BenchReportError, match=message):
        score_tool_calls(responses, expected)
