# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM log filters: parse_vllm_log (an engine log -> a summary of what it reported) and
vllm_gates (that summary against the vllm role's gates)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain
from ansible_collections.gb10.serving.plugins.module_utils._vllm_gates import (
    GateError,
    check_gates,
)
from ansible_collections.gb10.serving.plugins.module_utils._vllm_log import (
    parse_lines,
    parse_text,
)


def parse_vllm_log_filter(log):
    """A vLLM log (one string, or a list of lines) -> the summary dict of _vllm_log."""
    if isinstance(log, str):
        return parse_text(log)
    if isinstance(log, (list, tuple)):
        if not all(isinstance(line, str) for line in log):
            raise AnsibleFilterError(
                "parse_vllm_log expects a string or a list of strings (lines), got a list"
                " holding %s"
                % ", ".join(
                    sorted({type(line).__name__ for line in log if not isinstance(line, str)})
                )
            )
        return parse_lines(log)
    raise AnsibleFilterError(
        "parse_vllm_log expects the engine log as a string or a list of lines, got %s"
        % type(log).__name__
    )


def vllm_gates_filter(boot, gates):
    """The head's boot facts against the gates -> {failures, stop, warnings}."""
    try:
        return check_gates(plain(boot), plain(gates))
    except GateError as exc:
        raise AnsibleFilterError(f"vllm_gates: {exc}") from exc


class FilterModule:
    """gb10.serving vLLM log filters."""

    def filters(self):
        return {"parse_vllm_log": parse_vllm_log_filter, "vllm_gates": vllm_gates_filter}
