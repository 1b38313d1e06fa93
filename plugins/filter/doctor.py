# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters gb10.serving.doctor_report and doctor_markdown: judge what the doctor read."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._doctor import (
    bench_figures,
    engine_evidence,
    evidence_of,
    fabric_evidence,
    fabric_now,
    judge,
    render_markdown,
    summary_lines,
)
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain


def doctor_report(observed, settings=None):
    """``{host: {fabric, node, engine}}`` and the doctor's settings -> the cluster's report."""
    if not isinstance(observed, Mapping):
        raise AnsibleFilterError(
            "doctor_report: the input must map each host to what was read on it, got "
            f"{type(observed).__name__}"
        )
    if settings is not None and not isinstance(settings, Mapping):
        raise AnsibleFilterError("doctor_report: the settings must be a dictionary")
    try:
        return judge(plain(dict(observed)), plain(dict(settings or {})))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"doctor_report: unreadable evidence: {exc!r}") from exc


def doctor_markdown(doc):
    """The report of doctor_report as Markdown."""
    if not isinstance(doc, Mapping) or "checks" not in doc:
        raise AnsibleFilterError("doctor_markdown: the input must be doctor_report's result")
    return render_markdown(plain(dict(doc)))


def doctor_fabric_evidence(plan, links, full, small, gids):
    """fabric_observed from the fabric role's observe tasks' registered results."""
    if not isinstance(plan, Mapping):
        raise AnsibleFilterError("doctor_fabric_evidence: the input must be the node's fabric plan")
    return fabric_evidence(plain(dict(plan)), plain(links), plain(full), plain(small), plain(gids))


def doctor_engine_evidence(boot, info, probe=None, api=None, planned=None):
    """vllm_observed from the engine role's observe tasks' registered results (and the
    engine's plan now, vllm_planned)."""
    if not isinstance(boot, Mapping):
        raise AnsibleFilterError(
            "doctor_engine_evidence: the input must be vllm_boot_info's result"
        )
    return engine_evidence(
        plain(dict(boot)),
        plain(dict(info or {})),
        plain(dict(probe or {})),
        plain(dict(api or {})),
        plain(dict(planned)) if isinstance(planned, Mapping) else None,
    )


def doctor_fabric_facts(observed):
    """The fabric facts (``node``, ``env``) the fabric stage would set from the GID table
    read now (fabric_observed), or None when the table does not resolve."""
    if not isinstance(observed, Mapping):
        raise AnsibleFilterError("doctor_fabric_facts: the input must be fabric_observed")
    found = plain(dict(observed))
    return fabric_now("", found.get("plan") or {}, list(found.get("gids") or []))[1]


def doctor_evidence_of(hostvars):
    """A host's fabric_observed, node_observed and vllm_observed, by area."""
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("doctor_evidence_of: the input must be a host's variables")
    return plain(evidence_of(hostvars))


def doctor_bench_figures(reports):
    """``{first, last}`` figures of two bench reports (slurp results or documents)."""
    return bench_figures(plain(list(reports or [])))


def doctor_summary(doc):
    """The doctor's summary lines for the play output."""
    if not isinstance(doc, Mapping) or "checks" not in doc:
        raise AnsibleFilterError("doctor_summary: the input must be doctor_report's result")
    return summary_lines(plain(dict(doc)))


class FilterModule:
    """gb10.serving doctor filters."""

    def filters(self):
        return {
            "doctor_report": doctor_report,
            "doctor_markdown": doctor_markdown,
            "doctor_fabric_evidence": doctor_fabric_evidence,
            "doctor_engine_evidence": doctor_engine_evidence,
            "doctor_fabric_facts": doctor_fabric_facts,
            "doctor_evidence_of": doctor_evidence_of,
            "doctor_bench_figures": doctor_bench_figures,
            "doctor_summary": doctor_summary,
        }
