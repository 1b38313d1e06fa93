# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The doctor's verdicts: what was read on a running cluster, judged ok, warn or fail.

Pure Python, no Ansible imports. Each ``check_*`` function takes evidence already read from
the nodes (the running engine's environment, the GID table re-read now, /proc/meminfo, ...)
and returns :class:`Verdict` objects, each naming what it looked at, what it saw and, unless
it is ok, the fix. :func:`report` folds them into one report for the cluster, which
:func:`render_markdown` prints.

Issue 17 builds ``playbooks/doctor.yml`` on these; this module holds only the judgement, so
every verdict is unit-tested on real captured input.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, List, Mapping, Optional

OK, WARN, FAIL = "ok", "warn", "fail"
SEVERITY = {OK: 0, WARN: 1, FAIL: 2}
SOCKET_VARIABLES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "VLLM_HOST_IP")


@dataclass(frozen=True)
class Verdict:
    """One check on one node (or the whole cluster when ``host`` is None)."""

    area: str  # fabric, engine, node, performance
    check: str
    host: Optional[str]
    status: str  # ok, warn, fail
    evidence: str
    fix: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _verdict(area, check, host, status, evidence, fix=""):
    if status not in SEVERITY:
        raise ValueError("status must be ok, warn or fail, not %r" % (status,))
    return Verdict(area, check, host, status, evidence, "" if status == OK else fix)


def env_of(container_env: Iterable[str]) -> dict:
    """``docker inspect``'s ``Config.Env`` (``NAME=value`` strings) as a mapping."""
    found = {}
    for item in container_env or []:
        name, sep, value = str(item).partition("=")
        if sep:
            found[name] = value
    return found


def _hca_devices(value):
    """``NCCL_IB_HCA``'s device:port names, without the leading ``=`` or ``^``."""
    text = str(value or "").lstrip("=^")
    return [part for part in text.split(",") if part]


def check_gid_drift(host: str, rails: List[Mapping], engine_env: Mapping) -> List[Verdict]:
    """The GID index re-read now against the one the running engine was started with.

    ``rails`` are the node's fabric rails resolved now (``rdma_device``, ``rdma_port``,
    ``gid_index``); ``engine_env`` the running engine container's environment.
    """
    now_devices = ["%s:%s" % (r["rdma_device"], r["rdma_port"]) for r in rails]
    started_devices = _hca_devices(engine_env.get("NCCL_IB_HCA"))
    verdicts = []
    if started_devices != now_devices:
        verdicts.append(
            _verdict(
                "fabric",
                "rdma devices",
                host,
                FAIL,
                "the engine was started with NCCL_IB_HCA=%s; the devices carrying the fabric "
                "addresses now are %s"
                % (engine_env.get("NCCL_IB_HCA", "(unset)"), ",".join(now_devices)),
                "run site.yml: the fabric stage resolves the devices again and the engine restarts "
                "with them",
            )
        )
    pinned = engine_env.get("NCCL_IB_GID_INDEX")
    indexes = sorted({int(r["gid_index"]) for r in rails})
    listing = ", ".join(
        "%s:%s %s" % (r["rdma_device"], r["rdma_port"], r["gid_index"]) for r in rails
    )
    if pinned is None or pinned == "":
        verdicts.append(
            _verdict(
                "fabric",
                "gid index",
                host,
                OK,
                "the engine lets NCCL pick each device's RoCE v2 IPv4 GID; now: %s" % listing,
            )
        )
    elif indexes != [int(pinned)]:
        verdicts.append(
            _verdict(
                "fabric",
                "gid index",
                host,
                FAIL,
                "the engine was started with NCCL_IB_GID_INDEX=%s, the GID table now holds the "
                "RoCE v2 IPv4 GID at %s (an address or netplan change, or a reboot, moved it): "
                "NCCL would use a wrong or missing GID" % (pinned, listing),
                "run site.yml: the fabric stage reads the index again and the engine restarts "
                "with it",
            )
        )
    else:
        verdicts.append(
            _verdict(
                "fabric",
                "gid index",
                host,
                OK,
                "NCCL_IB_GID_INDEX=%s, as now (%s)" % (pinned, listing),
            )
        )
    return verdicts


def check_socket_env(host: str, expected: Mapping, engine_env: Mapping) -> Verdict:
    """The running engine's socket interfaces and advertised address against the fabric's."""
    wrong = [
        "%s=%s (the fabric says %s)" % (name, engine_env.get(name, "(unset)"), expected.get(name))
        for name in SOCKET_VARIABLES
        if engine_env.get(name) != expected.get(name)
    ]
    if not wrong:
        return _verdict(
            "fabric",
            "control traffic",
            host,
            OK,
            ", ".join("%s=%s" % (name, expected.get(name)) for name in SOCKET_VARIABLES),
        )
    return _verdict(
        "fabric",
        "control traffic",
        host,
        FAIL,
        "the running engine has " + "; ".join(wrong) + ": its bootstrap and control traffic "
        "take another interface than the cable",
        "run site.yml: the engine restarts with the fabric's environment (an image's baked-in "
        "variables never win over it)",
    )


def check_same_everywhere(
    area: str, check: str, values: Mapping[str, object], what: str
) -> Verdict:
    """One value (an image digest, an NCCL version) that must be the same on every node."""
    seen = {}
    for host, value in values.items():
        seen.setdefault(str(value), []).append(host)
    listing = "; ".join("%s on %s" % (value, ", ".join(hosts)) for value, hosts in seen.items())
    if len(seen) <= 1:
        return _verdict(area, check, None, OK, "%s: %s" % (what, listing or "none"))
    return _verdict(
        area,
        check,
        None,
        FAIL,
        "%s differs between nodes: %s" % (what, listing),
        "run site.yml: every node pulls and runs the image the head's plan pins",
    )


def parse_meminfo(lines) -> dict:
    """``/proc/meminfo`` as ``{field: kibibytes}`` (streaming; unknown units are skipped)."""
    found = {}
    for line in lines.splitlines() if isinstance(lines, str) else lines:
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if not sep or not parts or not parts[0].isdigit():
            continue
        if len(parts) == 1 or parts[1] == "kB":
            found[name.strip()] = int(parts[0])
    return found


def check_memory(host: str, meminfo: Mapping[str, int], need_gib: float) -> List[Verdict]:
    """MemAvailable against what the engine needs; swap in use; page cache.

    On a GB10 the GPU allocates from the same unified memory: page cache that the kernel
    cannot drop fast enough starves the engine, and swapping stalls it.
    """
    gib = 1024 * 1024
    available = meminfo.get("MemAvailable", 0) / gib
    total = meminfo.get("MemTotal", 0) / gib
    cached = meminfo.get("Cached", 0) / gib
    swap_used = (meminfo.get("SwapTotal", 0) - meminfo.get("SwapFree", 0)) / gib
    verdicts = []
    if available < need_gib:
        verdicts.append(
            _verdict(
                "node",
                "memory available",
                host,
                FAIL,
                "MemAvailable %.1f GiB of %.1f, the engine needs %.1f"
                % (available, total, need_gib),
                "stop what else runs on the node, or lower the recipe's gpu_memory_utilization",
            )
        )
    else:
        verdicts.append(
            _verdict(
                "node",
                "memory available",
                host,
                OK,
                "MemAvailable %.1f GiB of %.1f (the engine needs %.1f)"
                % (available, total, need_gib),
            )
        )
    verdicts.append(
        _verdict(
            "node",
            "swap",
            host,
            WARN if swap_used > 0.5 else OK,
            "%.1f GiB of swap in use" % swap_used,
            "something was pushed to swap: find what (`smem`, `ps aux --sort=-rss`) and "
            "consider disabling swap on a serving node",
        )
    )
    share = cached / total if total else 0.0
    verdicts.append(
        _verdict(
            "node",
            "page cache",
            host,
            WARN if share > 0.25 else OK,
            "page cache %.1f GiB (%.0f%% of memory)" % (cached, 100 * share),
            "drop it before a restart (`sync; echo 3 > /proc/sys/vm/drop_caches`): on unified "
            "memory the engine competes with it",
        )
    )
    return verdicts


def check_regression(
    first: Mapping[str, float], last: Mapping[str, float], max_drop_pct: float
) -> List[Verdict]:
    """The last bench report of this deployment against its first, per figure (higher is better)."""
    verdicts = []
    for name in sorted(set(first) & set(last)):
        before, now = float(first[name]), float(last[name])
        if before <= 0:
            continue
        change = 100.0 * (now - before) / before
        status = FAIL if change < -max_drop_pct else OK
        verdicts.append(
            _verdict(
                "performance",
                name,
                None,
                status,
                "%s: %.2f first, %.2f now (%+.1f%%)" % (name, before, now, change),
                "something slowed the cluster (thermal throttling, page cache, another tenant): "
                "see the node checks, then measure again (playbooks/bench.yml)",
            )
        )
    return verdicts


def report(verdicts: Iterable[Verdict]) -> dict:
    """One report for the cluster: the worst status, the counts and every verdict."""
    items = list(verdicts)
    worst = max((v.status for v in items), key=SEVERITY.get, default=OK)
    counts = {status: sum(1 for v in items if v.status == status) for status in SEVERITY}
    return {"status": worst, "counts": counts, "checks": [v.to_dict() for v in items]}


def render_markdown(doc: Mapping) -> str:
    """The report as Markdown: the verdict first, then failures, warnings and the rest."""
    counts = doc["counts"]
    lines = [
        "# gb10.serving doctor: %s" % doc["status"],
        "",
        "%d ok, %d warn, %d fail." % (counts[OK], counts[WARN], counts[FAIL]),
        "",
        "| status | area | check | node | evidence | fix |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    ordered = sorted(doc["checks"], key=lambda c: -SEVERITY[c["status"]])
    for check in ordered:
        cells = [
            check["status"],
            check["area"],
            check["check"],
            check["host"] or "cluster",
            check["evidence"],
            check["fix"],
        ]
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
