# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils._vllm_gates: the vllm role's gates over the head's boot facts.

The boot facts are what ``_vllm_log`` reads from real captured logs (fixtures/vllm, see
test_vllm_log.py): the lab's own two-node head (``vllm_cpu_tiny_tp2_2node_head_v0.32.log``,
no backend logged, no speculation, 4,194,304 KV tokens, 16384.00x at 256 tokens), a TP=4
MLA boot (``FLASHINFER_MLA``, no MoE backend, no KV line) and vLLM 0.11's separate KV lines
(425,424 tokens, 6.49x at 65,536). No capture here shows a GB10 boot with the DeepSeek V4
backends; the cases that need one edit a capture as test_vllm_log.py does (``derived-...``,
one change each, made with ``captures.edit``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.gb10.serving.plugins.module_utils._vllm_gates import (
    ADVICE_PREFIX,
    GATE_VARIABLES,
    UNVERIFIED_PREFIX,
    WARNING_PREFIX,
    GateError,
    check_gates,
    gate_failures,
    gate_results,
)
from ansible_collections.gb10.serving.plugins.module_utils._vllm_log import parse_text
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import (
    edit,
    load_capture,
    load_raw,
)

ROOT = Path(__file__).resolve().parents[4]
HEAD = "vllm_cpu_tiny_tp2_2node_head_v0.32.log"  # lab, TP=2 head (rank 0)
KIMI_TP4 = "vllm_boot_tp4_kimi_eagle3_mla_backends_repofile.log"  # MLA backends
GLMV_0_11 = "vllm_boot_v011_single_glmv_issue204.log"  # separate KV lines
SOURCED = {KIMI_TP4, GLMV_0_11}


def boot(name, *edits):
    """The boot facts of a capture, after the given (old, new) edits."""
    text = load_capture("vllm", name) if name in SOURCED else load_raw("vllm", name)
    for old, new in edits:
        text = edit(text, old, new)
    return parse_text(text)


# A capture's lines made into the DeepSeek V4 recipe's (the forms test_vllm_log.py reads).
B12X = (
    "Using MoEPrepareAndFinalizeNoDPEPMonolithic",
    "Using b12x Fp8 MoE backend out of potential backends: ['b12x', 'TRITON'].",
)
DSV4_ATTENTION = (
    "Using FLASHINFER_MLA attention backend out of potential backends: ['FLASHINFER_MLA',"
    " 'TOKENSPEED_MLA', 'TRITON_MLA'].",
    "Using AttentionBackendEnum.FLASHINFER_MLA_SPARSE_DSV4 backend.",
)
DSPARK = (
    "speculative_config=None",
    "speculative_config=SpeculativeConfig(method='dspark',"
    " model='deepseek-ai/DeepSeek-V4-Flash-DSpark', num_spec_tokens=3)",
)
# Nothing checked: no backend or method, a minimum pool of 0 with no max_model_len, 0x.
NONE = dict(
    vllm_expected_attention_backend="",
    vllm_expected_moe_backend="",
    vllm_expected_speculative_method="",
    vllm_min_kv_cache_tokens=0,
    vllm_min_max_concurrency=0.0,
    max_model_len=0,
)

CASES = [
    pytest.param(HEAD, (), {}, [], id="lab-head-nothing-checked"),
    pytest.param(
        HEAD,
        (),
        dict(
            vllm_min_kv_cache_tokens=100000,
            vllm_min_max_concurrency=10.0,
            max_model_len=512,
        ),
        [],
        id="lab-head-the-lab-gates",
    ),
    pytest.param(
        HEAD,
        (),
        dict(
            vllm_expected_attention_backend="FLASHINFER_MLA_SPARSE_DSV4",
            vllm_expected_moe_backend="b12x",
            vllm_expected_speculative_method="dspark",
            max_model_len=393216,
            vllm_min_max_concurrency=1.0,
        ),
        # The backends are not in this log: unverified, not missed (see test_unverified...).
        # Its engine config line says speculative_config=None: no speculation, a miss.
        [
            "speculative method is not in the log, expected dspark"
            " (vllm_expected_speculative_method)",
        ],
        id="lab-head-the-spark-defaults",
    ),
    pytest.param(
        KIMI_TP4,
        (),
        dict(vllm_expected_attention_backend="FLASHINFER_MLA"),
        [],
        id="mla-attention-as-expected",
    ),
    pytest.param(
        KIMI_TP4,
        (),
        dict(vllm_expected_attention_backend="FLASHINFER_MLA_SPARSE_DSV4"),
        [
            "attention backend is FLASHINFER_MLA, expected FLASHINFER_MLA_SPARSE_DSV4"
            " (vllm_expected_attention_backend)"
        ],
        id="mla-attention-not-the-expected-one",
    ),
    pytest.param(
        KIMI_TP4,
        (DSV4_ATTENTION,),
        dict(vllm_expected_attention_backend="FLASHINFER_MLA_SPARSE_DSV4"),
        [],
        id="derived-dsv4-attention-as-expected",
    ),
    pytest.param(
        KIMI_TP4,
        (B12X,),
        dict(vllm_expected_moe_backend="b12x"),
        [],
        id="derived-b12x-as-expected",
    ),
    pytest.param(
        KIMI_TP4,
        (B12X,),
        dict(vllm_expected_moe_backend="TRITON"),
        ["MoE backend is b12x, expected TRITON (vllm_expected_moe_backend)"],
        id="derived-b12x-not-the-expected-one",
    ),
    pytest.param(
        HEAD,
        (DSPARK,),
        dict(vllm_expected_speculative_method="dspark"),
        [],
        id="derived-dspark-as-expected",
    ),
    pytest.param(
        HEAD,
        (DSPARK,),
        dict(vllm_expected_speculative_method="mtp"),
        ["speculative method is dspark, expected mtp (vllm_expected_speculative_method)"],
        id="derived-dspark-not-the-expected-one",
    ),
    pytest.param(
        GLMV_0_11,
        (),
        dict(vllm_min_kv_cache_tokens=425424, vllm_min_max_concurrency=6.49),
        [],
        id="glmv-at-both-minimums",
    ),
    pytest.param(
        GLMV_0_11,
        (),
        dict(vllm_min_kv_cache_tokens=425425),
        [
            "KV cache holds 425424 tokens, below 425425 (vllm_min_kv_cache_tokens; 0 means"
            " max_model_len)"
        ],
        id="glmv-pool-one-token-short",
    ),
    pytest.param(
        GLMV_0_11,
        (),
        dict(max_model_len=500000),
        [
            "KV cache holds 425424 tokens, below 500000 (vllm_min_kv_cache_tokens; 0 means"
            " max_model_len)"
        ],
        id="glmv-pool-0-means-max-model-len",
    ),
    pytest.param(
        GLMV_0_11,
        (),
        dict(vllm_min_kv_cache_tokens=400000, max_model_len=500000),
        [],
        id="glmv-pool-given-wins-over-max-model-len",
    ),
    pytest.param(
        GLMV_0_11,
        (),
        dict(vllm_min_max_concurrency=10.0),
        ["maximum concurrency is 6.49x, below 10.0x (vllm_min_max_concurrency)"],
        id="glmv-concurrency-below",
    ),
    # No KV line at all: both numbers are unverified, not missed (test_unverified...).
    pytest.param(
        KIMI_TP4,
        (),
        dict(vllm_min_kv_cache_tokens=1, vllm_min_max_concurrency=1),
        [],
        id="mla-no-kv-lines",
    ),
]


@pytest.mark.parametrize(("capture", "edits", "gates", "failures"), CASES)
def test_gate_failures(capture, edits, gates, failures):
    assert gate_failures(boot(capture, *edits), **{**NONE, **gates}) == failures


# vLLM 0.25's MoE line on a real two-node GB10 DeepSeek-V4-Flash boot (quoted by issue 14),
# put in place of the TP=4 capture's own MoE preparation line.
NVFP4_CUTLASS = (
    "Using MoEPrepareAndFinalizeNoDPEPMonolithic",
    "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: "
    "['FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'].",
)


@pytest.mark.parametrize(
    ("capture", "edits", "gates", "unverified"),
    [
        pytest.param(
            HEAD,
            (),
            dict(
                vllm_expected_attention_backend="FLASHINFER_MLA_SPARSE_DSV4",
                vllm_expected_moe_backend="FLASHINFER_CUTLASS",
            ),
            [
                "the log shows no attention backend, so vllm_expected_attention_backend="
                "FLASHINFER_MLA_SPARSE_DSV4 is not verified (looked for 'Using <NAME> attention"
                " backend ...' or 'Using AttentionBackendEnum.<NAME> backend')",
                "the log shows no MoE backend, so vllm_expected_moe_backend=FLASHINFER_CUTLASS"
                " is not verified (looked for 'Using <NAME> ... MoE backend out of potential"
                " backends: [...]')",
            ],
            id="no-backend-lines-as-vllm-0.25-on-gb10",
        ),
        pytest.param(
            KIMI_TP4,
            (),
            dict(vllm_min_kv_cache_tokens=1, vllm_min_max_concurrency=1),
            [
                "the log shows no KV cache size, so a pool of at least 1 tokens is not verified"
                " (vllm_min_kv_cache_tokens; looked for 'GPU KV cache size: N tokens')",
                "the log shows no maximum concurrency, so at least 1x is not verified"
                " (vllm_min_max_concurrency; looked for 'Maximum concurrency for N tokens per"
                " request: Mx')",
            ],
            id="no-kv-lines",
        ),
        pytest.param(
            GLMV_0_11,
            (),
            dict(vllm_expected_speculative_method="dspark"),
            [
                "the log shows no speculative method, so vllm_expected_speculative_method=dspark"
                " is not verified (looked for speculative_config=SpeculativeConfig(method=...)"
                " in the engine config)"
            ],
            id="no-engine-config-line",
        ),
        pytest.param(HEAD, (), NONE, [], id="nothing-expected-nothing-unverified"),
    ],
)
def test_unverified_gates_warn_and_never_miss(capture, edits, gates, unverified):
    results = gate_results(boot(capture, *edits), **{**NONE, **gates})
    assert results["missed"] == []
    assert results["unverified"] == unverified
    checked = check_gates(
        boot(capture, *edits), {**NONE, **gates, "vllm_gates_fatal": True, "recipe_argv": []}
    )
    assert checked["stop"] == []
    assert checked["warnings"] == [UNVERIFIED_PREFIX + message for message in unverified]


def test_the_nvfp4_moe_line_of_vllm_025_names_its_backend():
    facts = boot(KIMI_TP4, NVFP4_CUTLASS)
    assert facts["moe_backend"] == "FLASHINFER_CUTLASS"
    assert gate_failures(facts, **{**NONE, "vllm_expected_moe_backend": "FLASHINFER_CUTLASS"}) == []
    assert gate_failures(facts, **{**NONE, "vllm_expected_moe_backend": "VLLM_CUTLASS"}) == [
        "MoE backend is FLASHINFER_CUTLASS, expected VLLM_CUTLASS (vllm_expected_moe_backend)"
    ]


def capture_boot(sizes):
    """The lab head's boot with its engine config line capturing CUDA graphs up to sizes."""
    listed = ", ".join(str(size) for size in sizes)
    return boot(HEAD, ("'cudagraph_capture_sizes': []", f"'cudagraph_capture_sizes': [{listed}]"))


def argv(capture=None, seqs=None):
    words = ["vllm", "serve", "org/m"]
    if capture is not None:
        words += ["--max-cudagraph-capture-size", str(capture)]
    if seqs is not None:
        words += [f"--max_num_seqs={seqs}"]
    return words


@pytest.mark.parametrize(
    ("facts", "recipe_argv", "missed", "unverified", "advice"),
    [
        pytest.param(capture_boot([128, 64, 8, 1]), argv(128, 128), [], [], [], id="as-set"),
        pytest.param(
            capture_boot([512, 256, 1]),
            argv(128, 128),
            [
                "the largest CUDA graph capture size is 512, but the recipe sets"
                " --max-cudagraph-capture-size 128 (vllm_recipe)"
            ],
            [],
            [],
            id="engine-captured-other-sizes",
        ),
        pytest.param(
            capture_boot([64, 32, 1]),
            argv(64, 128),
            [],
            [],
            [
                "CUDA graphs are captured up to 64 sequences, below --max-num-seqs 128: decode"
                " batches above it run without graphs, which the field report measured as much"
                " slower; raise --max-cudagraph-capture-size to max_num_seqs"
            ],
            id="below-max-num-seqs",
        ),
        pytest.param(
            boot(GLMV_0_11),
            argv(128, 128),
            [],
            [
                "the log shows no CUDA graph capture sizes, so the recipe's"
                " --max-cudagraph-capture-size 128 is not verified (looked for"
                " 'cudagraph_capture_sizes' or 'max_cudagraph_capture_size' in the engine config)"
            ],
            [],
            id="not-in-the-log",
        ),
        pytest.param(capture_boot([512, 1]), argv(), [], [], [], id="recipe-sets-none"),
    ],
)
def test_the_cuda_graph_gate(facts, recipe_argv, missed, unverified, advice):
    results = gate_results(facts, **{**NONE, "recipe_argv": recipe_argv})
    assert (results["missed"], results["unverified"], results["advice"]) == (
        missed,
        unverified,
        advice,
    )
    checked = check_gates(facts, {**NONE, "vllm_gates_fatal": True, "recipe_argv": recipe_argv})
    assert checked["stop"] == missed
    assert [w for w in checked["warnings"] if w.startswith(ADVICE_PREFIX)] == [
        ADVICE_PREFIX + message for message in advice
    ]


def test_numbers_are_read_as_the_int_and_float_filters_read_them():
    head = boot(HEAD)
    assert gate_failures(head, **{**NONE, "vllm_min_kv_cache_tokens": "5000000"}) == [
        "KV cache holds 4194304 tokens, below 5000000 (vllm_min_kv_cache_tokens; 0 means"
        " max_model_len)"
    ]
    # Text that is no number is 0, so max_model_len decides (as `| int or ...` did).
    assert gate_failures(
        head, **{**NONE, "vllm_min_kv_cache_tokens": "lots", "max_model_len": 5000000}
    ) == [
        "KV cache holds 4194304 tokens, below 5000000 (vllm_min_kv_cache_tokens; 0 means"
        " max_model_len)"
    ]
    assert gate_failures(head, **{**NONE, "vllm_min_max_concurrency": "20000"}) == [
        "maximum concurrency is 16384.0x, below 20000x (vllm_min_max_concurrency)"
    ]


@pytest.mark.parametrize("fatal", [True, False], ids=["fatal", "warn-only"])
def test_fatal_decides_between_stopping_and_warning(fatal):
    gates = {
        **NONE,
        "vllm_min_max_concurrency": 10.0,
        "vllm_gates_fatal": fatal,
        "recipe_argv": [],
    }
    result = check_gates(boot(GLMV_0_11), gates)
    missed = ["maximum concurrency is 6.49x, below 10.0x (vllm_min_max_concurrency)"]
    assert result["failures"] == missed
    assert result["stop"] == (missed if fatal else [])
    assert result["warnings"] == ([] if fatal else [WARNING_PREFIX + missed[0]])


@pytest.mark.parametrize("fatal", [True, False], ids=["fatal", "warn-only"])
def test_a_boot_that_passes_neither_stops_nor_warns(fatal):
    result = check_gates(boot(HEAD), {**NONE, "vllm_gates_fatal": fatal, "recipe_argv": []})
    assert result == {"failures": [], "stop": [], "warnings": [], "unverified": [], "advice": []}


@pytest.mark.parametrize(
    ("boot_facts", "gates", "message"),
    [
        pytest.param(
            [],
            {**NONE, "vllm_gates_fatal": True, "recipe_argv": []},
            "must be a mapping (vllm_boot), got list",
        ),
        pytest.param(
            {"speculative": "dspark"},
            {**NONE, "vllm_gates_fatal": True, "recipe_argv": []},
            "speculative must be a mapping or null, got str",
        ),
        pytest.param({}, "gates", "the gates must be a mapping of"),
        pytest.param({}, NONE, "they hold max_model_len, vllm_expected_attention_backend"),
        pytest.param(
            {},
            {**NONE, "vllm_gates_fatal": True, "recipe_argv": [], "vllm_gate": 1},
            "the gates must hold exactly",
        ),
        pytest.param(
            {},
            {**NONE, "vllm_gates_fatal": "no", "recipe_argv": []},
            "vllm_gates_fatal must be true or false, got 'no'",
        ),
    ],
)
def test_bad_input_is_named(boot_facts, gates, message):
    with pytest.raises(GateError) as caught:
        check_gates(boot_facts, gates)
    assert message in str(caught.value)


def test_the_role_hands_over_every_gate_variable():
    """roles/vllm/tasks/gates.yml builds the gates mapping by hand: it must name exactly
    GATE_VARIABLES (the filter refuses anything else), each a vllm option but max_model_len."""
    task = yaml.safe_load((ROOT / "roles/vllm/tasks/gates.yml").read_text(encoding="utf-8"))[0]
    template = task["ansible.builtin.set_fact"]["__vllm_gates"]
    assert "gb10.serving.vllm_gates(" in template
    assert sorted(re.findall(r"'(\w+)':", template)) == sorted(GATE_VARIABLES)
    specs = yaml.safe_load(
        (ROOT / "roles/vllm/meta/argument_specs.yml").read_text(encoding="utf-8")
    )["argument_specs"]["main"]["options"]
    assert set(GATE_VARIABLES) - set(specs) == {"max_model_len", "recipe_argv"}
