# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._bench_serve: what `vllm bench serve` prints and saves, normalized.

The captures and the lab report the cases use are in bench_cases.py.
"""

from __future__ import annotations

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._bench_common import (
    BenchReportError,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_serve import (
    RESULT_KEYS,
    normalize_bench_json,
    parse_bench_serve,
    parse_bench_serve_text,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.bench_cases import (
    C1,
    C4,
    DEEP,
    FAILED,
    REFERENCE,
    UNLIMITED,
    figures,
    saved,
    synthetic_render,
    text,
    tool_case,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    edit,
    load_raw,
)

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
