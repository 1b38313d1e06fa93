# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Score a tool-call check: did each response call the expected function with its arguments?

Private to gb10.serving, like every ``_bench_*`` module (see ``_bench_common``).
"""

from __future__ import annotations

import json
from typing import Optional

from ansible_collections.gb10.serving.plugins.module_utils._bench_common import BenchReportError


def _cut(text, limit=80) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expected_call(item, index):
    """(function name, required argument names) from an ``expected`` entry."""
    if isinstance(item, str) and item:
        return item, ()
    if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]:
        required = item.get("required") or ()
        if not isinstance(required, (list, tuple)) or not all(
            isinstance(name, str) for name in required
        ):
            raise BenchReportError(
                f"expected[{index}].required must be a list of argument names, got {required!r}"
            )
        return item["name"], tuple(required)
    raise BenchReportError(
        f"expected[{index}] is {item!r}: give a function name, or a mapping with 'name' and "
        "optionally 'required' (argument names)"
    )


def _tool_call_failure(response, name, required) -> Optional[str]:
    """Why ``response`` does not call ``name`` well, or None when it does."""
    if not isinstance(response, dict):
        return f"the response is {type(response).__name__}, not a JSON object"
    if response.get("error") is not None:
        error = response["error"]
        if isinstance(error, dict):
            error = error.get("message") or error
        return f"the request failed: {_cut(error, 160)}"
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        return "the response has no choices"
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        return "choices[0] has no message"
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        reason = "no tool_calls"
        if isinstance(choice, dict) and choice.get("finish_reason"):
            reason += f" (finish_reason {choice['finish_reason']})"
        if message.get("content"):
            reason += f"; the model answered with text: {_cut(message['content'])!r}"
        return reason
    call = calls[0]
    if not isinstance(call, dict):
        return "tool_calls[0] is not an object"
    if call.get("type") != "function":
        return f"tool_calls[0] has type {call.get('type')!r}, not 'function'"
    function = call.get("function")
    if not isinstance(function, dict):
        return "tool_calls[0] has no function"
    if function.get("name") != name:
        return f"called {function.get('name')!r}, expected {name!r}"
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return f"the arguments are {type(arguments).__name__}, not a JSON string"
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return f"the arguments are not JSON: {_cut(arguments)!r}"
    if not isinstance(parsed, dict):
        return f"the arguments are JSON but not an object: {_cut(arguments)!r}"
    missing = [key for key in required if key not in parsed]
    if missing:
        return f"the arguments lack {', '.join(missing)}: {_cut(arguments)!r}"
    return None


def score_tool_calls(responses, expected) -> dict:
    """Score chat-completion responses against the functions they should call.

    ``responses``: OpenAI chat-completion response bodies (a dict with ``error`` stands for a
    failed request). ``expected``: for each response, the function name it must call, or a
    mapping ``{'name': ..., 'required': [argument names]}``. A response passes when
    ``choices[0].message.tool_calls[0]`` has type ``function``, names the function, and its
    ``arguments`` string is a JSON object (holding the required names).

    Returns ``{'passed', 'total', 'score': 'n/m', 'cases': [{'expected', 'called', 'passed',
    'reason'}]}``; ``reason`` is None for a pass and says what was wrong otherwise.
    """
    if not isinstance(responses, list) or not isinstance(expected, list):
        raise BenchReportError("responses and expected must both be lists")
    if len(responses) != len(expected):
        raise BenchReportError(
            f"{len(responses)} responses for {len(expected)} expected calls: give one "
            "expected function per response"
        )
    cases = []
    for index, response in enumerate(responses):
        name, required = _expected_call(expected[index], index)
        reason = _tool_call_failure(response, name, required)
        cases.append(
            {
                "expected": name,
                "called": _called_name(response),
                "passed": reason is None,
                "reason": reason,
            }
        )
    passed = sum(1 for case in cases if case["passed"])
    return {
        "passed": passed,
        "total": len(cases),
        "score": f"{passed}/{len(cases)}",
        "cases": cases,
    }


def _called_name(response) -> Optional[str]:
    try:
        name = response["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
    except (KeyError, IndexError, TypeError):
        return None
    return name if isinstance(name, str) else None
