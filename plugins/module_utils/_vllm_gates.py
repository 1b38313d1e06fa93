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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import List

from ansible_collections.gb10.serving.plugins.module_utils._plain import jinja_float, jinja_int

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
)
# Put in front of each missed gate when it is only a warning.
WARNING_PREFIX = "Boot log gate: "


class GateError(ValueError):
    """The boot facts or the gate values are not what the gates can read."""


def _text(value) -> str:
    """How ``{{ value }}`` prints inside a message."""
    return "" if value is None else str(value)


def _backend_gate(seen, expected, what, variable) -> List[str]:
    if not expected or seen == expected:
        return []
    return [f"{what} is {_text(seen or 'not in the log')}, expected {expected} ({variable})"]


def gate_failures(
    boot,
    vllm_expected_attention_backend,
    vllm_expected_moe_backend,
    vllm_expected_speculative_method,
    vllm_min_kv_cache_tokens,
    vllm_min_max_concurrency,
    max_model_len=0,
) -> List[str]:
    """Each gate the boot misses, as one message naming its variable; empty when none.

    ``boot``: the head's ``vllm_boot`` (``_vllm_log``'s summary; a key it lacks counts as not
    logged). ``max_model_len``: the recipe's, the minimum KV pool when
    ``vllm_min_kv_cache_tokens`` is 0.
    """
    if not isinstance(boot, Mapping):
        raise GateError(f"the boot facts must be a mapping (vllm_boot), got {type(boot).__name__}")
    speculative = boot.get("speculative") or {}
    if not isinstance(speculative, Mapping):
        raise GateError(
            f"the boot facts' speculative must be a mapping or null, got "
            f"{type(speculative).__name__}"
        )
    failures = _backend_gate(
        boot.get("attention_backend"),
        vllm_expected_attention_backend,
        "attention backend",
        "vllm_expected_attention_backend",
    )
    failures += _backend_gate(
        boot.get("moe_backend"),
        vllm_expected_moe_backend,
        "MoE backend",
        "vllm_expected_moe_backend",
    )
    failures += _backend_gate(
        speculative.get("method"),
        vllm_expected_speculative_method,
        "speculative method",
        "vllm_expected_speculative_method",
    )
    min_kv = jinja_int(vllm_min_kv_cache_tokens) or jinja_int(max_model_len)
    kv_tokens = boot.get("kv_cache_tokens")
    if not (kv_tokens or 0) >= min_kv:
        failures.append(
            f"KV cache holds {_text(kv_tokens or 'no logged number of')} tokens, below {min_kv}"
            " (vllm_min_kv_cache_tokens; 0 means max_model_len)"
        )
    concurrency = boot.get("max_concurrency")
    if not (concurrency or 0) >= jinja_float(vllm_min_max_concurrency):
        seen = f"{_text(concurrency)}x" if concurrency else "not in the log"
        failures.append(
            f"maximum concurrency is {seen}, below {_text(vllm_min_max_concurrency)}x"
            " (vllm_min_max_concurrency)"
        )
    return failures


def check_gates(boot, gates) -> dict:
    """The gates over the head's boot facts, and what the role does about the misses.

    ``gates``: a mapping of exactly GATE_VARIABLES to their values. Returns ``failures``
    (gate_failures' messages), ``stop`` (the same when ``vllm_gates_fatal`` is true, else
    empty: the play fails naming them) and ``warnings`` (each message with WARNING_PREFIX
    when it is false, else empty). The engine is left serving either way.
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
    failures = gate_failures(
        boot,
        gates["vllm_expected_attention_backend"],
        gates["vllm_expected_moe_backend"],
        gates["vllm_expected_speculative_method"],
        gates["vllm_min_kv_cache_tokens"],
        gates["vllm_min_max_concurrency"],
        gates["max_model_len"],
    )
    return {
        "failures": failures,
        "stop": list(failures) if fatal else [],
        "warnings": [] if fatal else [WARNING_PREFIX + failure for failure in failures],
    }
