# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm role's gates on the head's boot log, as a pure function.

Pure Python, no Ansible imports. ``check_gates`` takes what the boot log parser
(``_vllm_log``) reported and the role's gate variables, and says which gates the boot misses
and what the role does about it: stop the play (``vllm_gates_fatal``) or warn. The role's
tasks (roles/vllm/tasks/gates.yml) only wire it: ``gb10.serving.vllm_gates`` computes, the
role's assert task stops on ``stop``, ``gb10.serving.warn`` shows ``warnings``.

The gates were Jinja first and keep its meaning: an empty expected backend or method is not
checked, ``vllm_min_kv_cache_tokens`` is read as the ``int`` filter reads it (0 means
``max_model_len``), ``vllm_min_max_concurrency`` as the ``float`` filter does, and a value
prints as ``{{ value }}`` prints it.

A gate whose line is absent from the log is *unverified*, never missed: vLLM releases differ
in what they print (a real two-node GB10 boot of vLLM 0.25 names no attention backend at all),
and failing a healthy cluster after a ten-minute boot for a line it did not print helps no
one. Unverified gates are warnings that say what was looked for; a value the log does show
and that differs is still a miss. The CUDA graph gate carries the field report's lesson: the
largest capture size the engine logs must be the recipe's ``--max-cudagraph-capture-size``,
and a size below ``--max-num-seqs`` gets a warning (larger decode batches run without graphs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import List

from ansible_collections.gb10.serving.plugins.module_utils._plain import jinja_float, jinja_int
from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import flag_int

# The gate variables, in the order the messages come (the recipe's max_model_len stands in
# for a minimum KV pool of 0).
GATE_VARIABLES = (
    "vllm_expected_attention_backend",
    "vllm_expected_moe_backend",
    "vllm_expected_speculative_method",
    "vllm_min_kv_cache_tokens",
    "vllm_min_max_concurrency",
    "vllm_gates_fatal",
    "max_model_len",
    "recipe_argv",
)
# Put in front of each missed gate when it is only a warning.
WARNING_PREFIX = "Boot log gate: "
# Put in front of each gate the log could not show either way (always a warning).
UNVERIFIED_PREFIX = "Boot log gate not verified: "
# Put in front of advice that stops nothing (always a warning).
ADVICE_PREFIX = "Boot log advice: "
# The lines each backend gate reads, for the unverified message.
_LOOKED_FOR = {
    "attention backend": (
        "'Using <NAME> attention backend ...' or 'Using AttentionBackendEnum.<NAME> backend'"
    ),
    "MoE backend": "'Using <NAME> ... MoE backend out of potential backends: [...]'",
    "speculative method": ("speculative_config=SpeculativeConfig(method=...) in the engine config"),
}


class GateError(ValueError):
    """The boot facts or the gate values are not what the gates can read."""


def _text(value) -> str:
    """How ``{{ value }}`` prints inside a message."""
    return "" if value is None else str(value)


def _backend_gate(seen, expected, what, variable, logged=None):
    """(missed, unverified) messages of one backend or method gate. ``logged`` says whether
    the log could show the value at all (default: whether it shows one)."""
    if not expected or seen == expected:
        return [], []
    if not seen and not logged:
        return [], [
            f"the log shows no {what}, so {variable}={expected} is not verified (looked for "
            f"{_LOOKED_FOR[what]})"
        ]
    return [f"{what} is {_text(seen or 'not in the log')}, expected {expected} ({variable})"], []


def _largest_capture(boot):
    """The largest CUDA graph capture size the engine logged, or None."""
    sizes = boot.get("cudagraph_capture_sizes")
    if isinstance(sizes, list) and sizes:
        return max(jinja_int(size) for size in sizes)
    largest = boot.get("max_cudagraph_capture_size")
    return None if largest is None else jinja_int(largest)


def _capture_gate(boot, recipe_argv):
    """(missed, unverified, advice) of the CUDA graph gate."""
    argv = [str(word) for word in recipe_argv or []]
    wanted = flag_int(argv, "--max-cudagraph-capture-size")
    seqs = flag_int(argv, "--max-num-seqs")
    largest = _largest_capture(boot)
    missed, unverified, advice = [], [], []
    if wanted is not None:
        if largest is None:
            unverified.append(
                f"the log shows no CUDA graph capture sizes, so the recipe's "
                f"--max-cudagraph-capture-size {wanted} is not verified (looked for "
                "'cudagraph_capture_sizes' or 'max_cudagraph_capture_size' in the engine config)"
            )
        elif largest != wanted:
            missed.append(
                f"the largest CUDA graph capture size is {largest}, but the recipe sets "
                f"--max-cudagraph-capture-size {wanted} (vllm_recipe)"
            )
    ceiling = largest if largest is not None else wanted
    if ceiling is not None and seqs is not None and ceiling < seqs:
        advice.append(
            f"CUDA graphs are captured up to {ceiling} sequences, below --max-num-seqs {seqs}: "
            "decode batches above it run without graphs, which the field report measured as "
            "much slower; raise --max-cudagraph-capture-size to max_num_seqs"
        )
    return missed, unverified, advice


def gate_results(
    boot,
    vllm_expected_attention_backend,
    vllm_expected_moe_backend,
    vllm_expected_speculative_method,
    vllm_min_kv_cache_tokens,
    vllm_min_max_concurrency,
    max_model_len=0,
    recipe_argv=None,
) -> dict:
    """The gates over ``boot``: ``missed`` (a value the log shows that misses its gate),
    ``unverified`` (a gate whose line is not in the log) and ``advice``, each a list of
    messages naming their variable.

    ``boot``: the head's ``vllm_boot`` (``_vllm_log``'s summary; a key it lacks counts as not
    logged). ``max_model_len``: the recipe's, the minimum KV pool when
    ``vllm_min_kv_cache_tokens`` is 0. ``recipe_argv``: the recipe's rendered command.
    """
    if not isinstance(boot, Mapping):
        raise GateError(f"the boot facts must be a mapping (vllm_boot), got {type(boot).__name__}")
    speculative = boot.get("speculative") or {}
    if not isinstance(speculative, Mapping):
        raise GateError(
            f"the boot facts' speculative must be a mapping or null, got "
            f"{type(speculative).__name__}"
        )
    missed, unverified = [], []
    gates = (
        (
            boot.get("attention_backend"),
            vllm_expected_attention_backend,
            "attention backend",
            "vllm_expected_attention_backend",
            None,
        ),
        (
            boot.get("moe_backend"),
            vllm_expected_moe_backend,
            "MoE backend",
            "vllm_expected_moe_backend",
            None,
        ),
        # The engine config line shows speculative_config=None too: with it in the log, no
        # method means no speculation (a miss), not an unverified gate.
        (
            speculative.get("method"),
            vllm_expected_speculative_method,
            "speculative method",
            "vllm_expected_speculative_method",
            boot.get("cudagraph_capture_sizes") is not None
            or boot.get("max_cudagraph_capture_size") is not None,
        ),
    )
    for seen, expected, what, variable, logged in gates:
        gate_missed, gate_unverified = _backend_gate(seen, expected, what, variable, logged)
        missed += gate_missed
        unverified += gate_unverified
    min_kv = jinja_int(vllm_min_kv_cache_tokens) or jinja_int(max_model_len)
    kv_tokens = boot.get("kv_cache_tokens")
    if kv_tokens is None:
        if min_kv > 0:
            unverified.append(
                f"the log shows no KV cache size, so a pool of at least {min_kv} tokens is not "
                "verified (vllm_min_kv_cache_tokens; looked for 'GPU KV cache size: N tokens')"
            )
    elif not kv_tokens >= min_kv:
        missed.append(
            f"KV cache holds {_text(kv_tokens)} tokens, below {min_kv}"
            " (vllm_min_kv_cache_tokens; 0 means max_model_len)"
        )
    concurrency = boot.get("max_concurrency")
    minimum = jinja_float(vllm_min_max_concurrency)
    if concurrency is None:
        if minimum > 0:
            unverified.append(
                f"the log shows no maximum concurrency, so at least "
                f"{_text(vllm_min_max_concurrency)}x is not verified (vllm_min_max_concurrency;"
                " looked for 'Maximum concurrency for N tokens per request: Mx')"
            )
    elif not concurrency >= minimum:
        missed.append(
            f"maximum concurrency is {_text(concurrency)}x, below "
            f"{_text(vllm_min_max_concurrency)}x (vllm_min_max_concurrency)"
        )
    capture_missed, capture_unverified, advice = _capture_gate(boot, recipe_argv)
    return {
        "missed": missed + capture_missed,
        "unverified": unverified + capture_unverified,
        "advice": advice,
    }


def gate_failures(boot, *args, **kwargs) -> List[str]:
    """Each gate the boot misses (gate_results' ``missed``); empty when none."""
    return gate_results(boot, *args, **kwargs)["missed"]


def check_gates(boot, gates) -> dict:
    """The gates over the head's boot facts, and what the role does about the misses.

    ``gates``: a mapping of exactly GATE_VARIABLES to their values. Returns ``failures``
    (gate_failures' messages), ``stop`` (the same when ``vllm_gates_fatal`` is true, else
    empty: the play fails naming them) and ``warnings`` (each failure with WARNING_PREFIX
    when it is false; then, either way, every unverified gate with UNVERIFIED_PREFIX and
    every piece of advice with ADVICE_PREFIX), and ``unverified`` and ``advice`` as
    gate_results gives them. The engine is left serving either way.
    """
    if not isinstance(gates, Mapping):
        raise GateError(
            f"the gates must be a mapping of {', '.join(GATE_VARIABLES)}, "
            f"got {type(gates).__name__}"
        )
    if sorted(gates) != sorted(GATE_VARIABLES):
        raise GateError(
            f"the gates must hold exactly {', '.join(GATE_VARIABLES)}; they hold "
            f"{', '.join(sorted(str(name) for name in gates)) or 'nothing'}"
        )
    fatal = gates["vllm_gates_fatal"]
    if not isinstance(fatal, bool):
        raise GateError(f"vllm_gates_fatal must be true or false, got {fatal!r}")
    results = gate_results(
        boot,
        gates["vllm_expected_attention_backend"],
        gates["vllm_expected_moe_backend"],
        gates["vllm_expected_speculative_method"],
        gates["vllm_min_kv_cache_tokens"],
        gates["vllm_min_max_concurrency"],
        gates["max_model_len"],
        gates["recipe_argv"],
    )
    failures = results["missed"]
    always = [UNVERIFIED_PREFIX + message for message in results["unverified"]]
    always += [ADVICE_PREFIX + message for message in results["advice"]]
    return {
        "failures": failures,
        "stop": list(failures) if fatal else [],
        "warnings": ([] if fatal else [WARNING_PREFIX + failure for failure in failures]) + always,
        "unverified": results["unverified"],
        "advice": results["advice"],
    }
