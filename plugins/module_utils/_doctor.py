# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The doctor's verdicts: what was read on a running cluster, judged ok, warn or fail.

Pure Python, no Ansible imports. Each ``check_*`` function takes evidence already read from
the nodes (the running engine's environment, the GID table re-read now, /proc/meminfo, ...)
and returns :class:`Verdict` objects, each naming what it looked at, what it saw and, unless
it is ok, the fix. :func:`report` folds them into one report for the cluster, which
:func:`render_markdown` prints.

:func:`judge` is what ``playbooks/doctor.yml`` calls (through the ``doctor_report`` filter):
it takes everything the doctor read on every node (``fabric_observed``, ``node_observed``,
``vllm_observed``) and runs every check on it. This module holds only the judgement, so every
verdict is unit-tested on real captured input.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Iterable, List, Mapping, Optional

from ansible_collections.gb10.serving.plugins.module_utils._engine_plan import spec_differences
from ansible_collections.gb10.serving.plugins.module_utils._fabric_env import (
    FabricEnvError,
    fabric_facts,
)

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
                "MemAvailable %.1f GiB of %.1f, below the %.1f that must stay available"
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
                "MemAvailable %.1f GiB of %.1f (at least %.1f must stay available)"
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


# --- fabric -------------------------------------------------------------------------------


def parse_link(stdout: str) -> dict:
    """``ip -j link show dev X``'s first entry (``operstate``, ``mtu``), ``{}`` when unreadable."""
    try:
        entries = json.loads(stdout or "[]")
    except ValueError:
        return {}
    return entries[0] if entries and isinstance(entries[0], dict) else {}


def check_links(host: str, mtu: int, links: Iterable[Mapping]) -> List[Verdict]:
    """Each half of the fabric port up with the planned MTU.

    ``links`` are ``{"interface", "rc", "stdout", "stderr"}``: ``ip -j link show`` per rail.
    """
    verdicts = []
    for link in links:
        name = link["interface"]
        shown = parse_link(link.get("stdout", "")) if link.get("rc") == 0 else {}
        state, found_mtu = shown.get("operstate", ""), shown.get("mtu")
        if not shown:
            status, evidence = (
                FAIL,
                "%s does not exist: %s"
                % (
                    name,
                    str(link.get("stderr", "")).strip() or "ip link show printed nothing",
                ),
            )
            fix = "check fabric_interface / fabric_twin_interface against `ip -br link`"
        elif state not in ("UP", "UNKNOWN"):
            status, evidence = FAIL, "%s is %s" % (name, state or "in no state")
            fix = "check the cable in this port on both nodes and that the peer is on"
        elif int(found_mtu or 0) != int(mtu):
            status, evidence = FAIL, "%s has MTU %s, the fabric plans %s" % (name, found_mtu, mtu)
            fix = (
                "something else manages this interface (another netplan file or NetworkManager "
                "profile): remove it and run site.yml"
            )
        else:
            status, evidence, fix = OK, "%s %s, MTU %s" % (name, state, found_mtu), ""
        verdicts.append(_verdict("fabric", "link %s" % name, host, status, evidence, fix))
    return verdicts


def check_pings(host: str, mtu: int, pings: Iterable[Mapping]) -> List[Verdict]:
    """A full-size ping that must not fragment, to every peer on every half.

    ``pings`` are ``{"interface", "peer", "full_rc", "small_rc"}``; ``small_rc`` is that of
    the small ping sent when the full-size one was lost (``None`` when none was sent).
    """
    size = int(mtu) - 28
    verdicts = []
    for ping in pings:
        path = "%s -> %s" % (ping["interface"], ping["peer"])
        if ping.get("full_rc") == 0:
            status, evidence, fix = OK, "%d-byte pings cross without fragmenting" % size, ""
        elif ping.get("small_rc") == 0:
            status = FAIL
            evidence = (
                "MTU mismatch: small pings reach %s, %d-byte pings that must not fragment do "
                "not" % (ping["peer"], size)
            )
            fix = (
                "give the peer's fabric port MTU %s too (`ip link show` on both nodes) and "
                "check nothing between them has a smaller one" % mtu
            )
        else:
            status = FAIL
            evidence = "no path to %s over %s, not even for small pings" % (
                ping["peer"],
                ping["interface"],
            )
            fix = "check the cable, both nodes' fabric addresses and that both links are up"
        verdicts.append(_verdict("fabric", "ping %s" % path, host, status, evidence, fix))
    return verdicts


def fabric_now(host: str, plan: Mapping, gids: List[Mapping]):
    """The node's fabric facts resolved from the GID table read now: ``(verdicts, facts)``.

    ``gids`` are the ``roce_gid_info`` results per rail (``require_selection: false``);
    ``facts`` is ``{"node", "env"}`` as the fabric role sets them, ``None`` when the table no
    longer holds one RoCE v2 IPv4 GID per rail.
    """
    rails = list(plan.get("rails") or [])
    missing = [
        "%s (%s)%s"
        % (
            rail["interface"],
            rail["ipv4"],
            ": " + gids[number]["error"]
            if number < len(gids) and gids[number].get("error")
            else "",
        )
        for number, rail in enumerate(rails)
        if number >= len(gids) or not gids[number].get("selected")
    ]
    if missing:
        evidence = "no single RoCE v2 IPv4 GID for %s in the GID table now (`show_gids`)" % (
            ", ".join(missing)
        )
        fix = (
            "the address moved off the port or the driver lost it: run site.yml, whose "
            "fabric stage configures the address and reads the table again"
        )
    else:
        try:
            return [], fabric_facts(plan, list(gids))
        except FabricEnvError as exc:
            evidence = "the GID table now: %s" % exc
            fix = "fix the GID table as the evidence says, then run site.yml"
    return [_verdict("fabric", "gid index", host, FAIL, evidence, fix)], None


# --- engine -------------------------------------------------------------------------------

_SHAPE_FLAGS = {
    "--tensor-parallel-size": "tp",
    "-tp": "tp",
    "--pipeline-parallel-size": "pp",
    "-pp": "pp",
    "--nnodes": "nnodes",
}
# Worker processes as they name themselves (setproctitle): the mp executor's, Ray's.
_WORKER = re.compile(r"^(VLLM::Worker|ray::RayWorkerWrapper)")


def engine_shape(argv: Iterable) -> dict:
    """Tensor and pipeline parallel and the node count from an engine's argv (1 when absent)."""
    shape = {"tp": 1, "pp": 1, "nnodes": 1}
    words = [str(word) for word in argv or []]
    for number, word in enumerate(words):
        name, sep, value = word.partition("=")
        if name not in _SHAPE_FLAGS:
            continue
        if not sep:
            value = words[number + 1] if number + 1 < len(words) else ""
        if value.isdigit():
            shape[_SHAPE_FLAGS[name]] = int(value)
    return shape


def worker_processes(cmdlines: str) -> List[str]:
    """The engine's worker processes among a container's command lines (one per line)."""
    return [line.strip() for line in cmdlines.splitlines() if _WORKER.match(line.strip())]


def check_engine(host: str, engine: Mapping, expected_workers: int) -> List[Verdict]:
    """The node's engine container running, and every one of its ranks alive.

    ``engine``: ``exists``, ``status``, ``restart_count``, ``workers`` (the processes
    :func:`worker_processes` found), ``container``.
    """
    name = engine.get("container", "the engine container")
    if not engine.get("exists"):
        evidence = "%s does not exist" % name
        fix = "run site.yml: it starts the whole cluster in order"
    elif engine.get("status") != "running":
        evidence = "%s is %s (exit code %s)" % (
            name,
            engine.get("status"),
            engine.get("exit_code", "unknown"),
        )
        fix = (
            "read the errors below, then run site.yml: it restarts the whole cluster in "
            "order (one node's engine alone cannot rejoin)"
        )
    else:
        evidence = ""
    if evidence:
        return [_verdict("engine", "container", host, FAIL, evidence, fix)]
    verdicts = [
        _verdict(
            "engine",
            "container",
            host,
            WARN if engine.get("restart_count") else OK,
            "%s running since %s, restarted %s times"
            % (name, engine.get("started_at", "?"), engine.get("restart_count", 0)),
            "Docker restarted it: a rank that restarts alone does not rejoin the cluster; run "
            "site.yml to restart every node in order",
        )
    ]
    workers = list(engine.get("workers") or [])
    verdicts.append(
        _verdict(
            "engine",
            "ranks",
            host,
            OK if len(workers) >= expected_workers else FAIL,
            "%d of %d worker processes alive (%s)"
            % (len(workers), expected_workers, ", ".join(workers) or "none"),
            "a rank died while the container still runs: the head may still answer /health, "
            "but no request completes. Run site.yml to restart the cluster in order",
        )
    )
    return verdicts


def check_plan(host: str, engine: Mapping) -> Optional[Verdict]:
    """The running engine against the deployment the inventory plans now (``engine["plan"]``:
    the planned ``deployment`` and the ``differences`` :func:`spec_differences` found, or the
    ``error`` that kept the plan from being made). None when no engine runs (the container
    check says so) or nothing was planned."""
    plan = engine.get("plan")
    if not plan or engine.get("status") != "running":
        return None
    if plan.get("error"):
        return _verdict(
            "engine",
            "plan",
            host,
            WARN,
            "the deployment the inventory plans now could not be worked out: %s" % plan["error"],
            "site.yml would stop on the same: fix what it names, then run the doctor again",
        )
    running, planned = engine.get("deployment") or "", plan.get("deployment") or ""
    if running == planned:
        return _verdict(
            "engine",
            "plan",
            host,
            OK,
            "runs the deployment the inventory plans now (%s)" % planned[:12],
        )
    differences = list(plan.get("differences") or [])
    return _verdict(
        "engine",
        "plan",
        host,
        FAIL,
        "runs deployment %s, the inventory now plans %s: %s"
        % (
            running[:12] or "(none)",
            planned[:12],
            "; ".join(differences)
            or "this node's container shows no difference: the change is on another node "
            "(the fingerprint covers them all) or in what a container does not show (the keys, "
            "the API users, devices or limits)",
        ),
        "run site.yml: it restarts the whole cluster in order as planned (or put back the "
        "inventory change, a re-tagged image or a moved GID that was not meant)",
    )


def docker_time(value: str) -> Optional[datetime]:
    """Docker's RFC 3339 time with nanoseconds (``2026-12-07T09:26:38.934851487Z``)."""
    match = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$", str(value or ""))
    if not match:
        return None
    fraction = (match.group(2) or ".0")[1:7].ljust(6, "0")
    return datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S").replace(
        microsecond=int(fraction), tzinfo=timezone.utc
    )


def check_started_together(head: str, engines: Mapping[str, Mapping]) -> List[Verdict]:
    """Every worker's engine started before the head's, as the engine role starts them.

    A worker whose engine started after the head's restarted alone (Docker's restart policy
    after its rank died): it waits for a head that no longer waits for it.
    """
    head_started = docker_time((engines.get(head) or {}).get("started_at"))
    verdicts = []
    for host, engine in engines.items():
        if host == head or engine.get("status") != "running" or head_started is None:
            continue
        started = docker_time(engine.get("started_at"))
        if started is not None and started > head_started:
            verdicts.append(
                _verdict(
                    "engine",
                    "started together",
                    host,
                    FAIL,
                    "its engine started at %s, %.0f s after the head's (%s): it restarted "
                    "alone and is no rank of the head's cluster"
                    % (
                        engine.get("started_at"),
                        (started - head_started).total_seconds(),
                        (engines.get(head) or {}).get("started_at"),
                    ),
                    "run site.yml: it restarts every node in order, the workers first",
                )
            )
    if not verdicts and head_started is not None:
        verdicts.append(
            _verdict(
                "engine",
                "started together",
                None,
                OK,
                "every worker's engine started before the head's (%s)"
                % (engines.get(head) or {}).get("started_at"),
            )
        )
    return verdicts


def check_errors(host: str, errors: Iterable[Mapping]) -> Verdict:
    """Errors the engine logged since it started, with their kind and hint."""
    found = list(errors or [])
    if not found:
        return _verdict("engine", "log errors", host, OK, "no errors since the engine started")
    first = found[0]
    kinds = sorted({str(e.get("kind", "other")) for e in found})
    status = FAIL if set(kinds) - {"other"} else WARN
    return _verdict(
        "engine",
        "log errors",
        host,
        status,
        "%d distinct error lines since the engine started (%s); first: %s"
        % (len(found), ", ".join(kinds), first.get("line", "")),
        str(first.get("hint") or "read the engine's log (docker logs) around the first error"),
    )


def check_api(api: Mapping) -> List[Verdict]:
    """The head's API: ``/health``, ``/v1/models`` and a canary completion with the service key.

    ``api``: ``health`` (status code or None), ``models`` (status, ``ids``), ``served``
    (the model name the cluster serves), ``canary`` (status, ``seconds``, ``text``).
    """
    verdicts = []
    health = api.get("health")
    verdicts.append(
        _verdict(
            "engine",
            "/health",
            None,
            OK if health == 200 else FAIL,
            "/health answered %s" % (health if health is not None else "nothing"),
            "the API is down: read the head's engine errors, then run site.yml",
        )
    )
    models = api.get("models") or {}
    served = api.get("served")
    ids = list(models.get("ids") or [])
    ok = models.get("status") == 200 and (not served or served in ids)
    verdicts.append(
        _verdict(
            "engine",
            "/v1/models",
            None,
            OK if ok else FAIL,
            "/v1/models answered %s, serving %s" % (models.get("status"), ", ".join(ids) or "none"),
            "the API does not list %s: check the key (vllm_api_key) and the recipe's "
            "served model name, then run site.yml" % (served or "the model"),
        )
    )
    canary = api.get("canary") or {}
    if canary.get("status") == 200:
        verdicts.append(
            _verdict(
                "engine",
                "canary completion",
                None,
                OK,
                "a %s-token completion came back in %s s"
                % (canary.get("tokens", "?"), canary.get("seconds", "?")),
            )
        )
    else:
        verdicts.append(
            _verdict(
                "engine",
                "canary completion",
                None,
                FAIL,
                "a completion through the API failed: %s %s"
                % (canary.get("status") or "no answer", str(canary.get("msg") or "")[:200]),
                "the engine answers /health but serves nothing: a rank or the fabric is broken. "
                "See the ranks and errors checks, then run site.yml",
            )
        )
    return verdicts


# --- node ---------------------------------------------------------------------------------


def check_owner(host: str, path: str, owner: Mapping, uid: int, gid: int) -> Verdict:
    """Entries of the cache the container cannot own (counted; the doctor repairs nothing).

    ``owner`` is ``tree_owner``'s result in check mode (``fixed``, ``fixed_sample``,
    ``scanned``).
    """
    wrong = int(owner.get("fixed") or 0)
    if owner.get("missing"):
        return _verdict(
            "node", "cache owner", host, FAIL, "%s does not exist" % path, "run site.yml"
        )
    if not wrong:
        return _verdict(
            "node",
            "cache owner",
            host,
            OK,
            "all %s entries of %s owned by %s:%s" % (owner.get("scanned", 0), path, uid, gid),
        )
    return _verdict(
        "node",
        "cache owner",
        host,
        FAIL,
        "%d of %s entries of %s are not owned by %s:%s (the container's user), for example %s"
        % (
            wrong,
            owner.get("scanned", "?"),
            path,
            uid,
            gid,
            ", ".join((owner.get("fixed_sample") or [])[:3]),
        ),
        "run site.yml (its node stage gives them back to %s:%s); find what wrote them as "
        "another user (a download run by hand as root?)" % (uid, gid),
    )


def check_disk(host: str, path: str, available_bytes: int, min_gib: float) -> Verdict:
    """Free space on the file system of the cache."""
    free = int(available_bytes) / 1024.0**3
    return _verdict(
        "node",
        "free disk",
        host,
        OK if free >= min_gib else FAIL,
        "%.1f GiB free under %s (at least %s wanted)" % (free, path, min_gib),
        "free space under the cache (old snapshots: `hf cache scan`, `hf cache delete`) or "
        "move node_hf_cache_dir to a larger disk",
    )


GPU_FIELDS = (
    "temperature.gpu",
    "clocks.sm",
    "clocks.max.sm",
    "power.draw",
    "clocks_throttle_reasons.active",
)


def check_gpu(host: str, csv: str, max_celsius: float) -> List[Verdict]:
    """A Spark's GPU temperature, clocks and power (``nvidia-smi --query-gpu`` CSV, no units)."""
    verdicts = []
    for line in (csv or "").splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) < len(GPU_FIELDS):
            continue
        values = {field: cells[number] for number, field in enumerate(GPU_FIELDS)}
        try:
            temp = float(values["temperature.gpu"])
        except ValueError:
            temp = None
        hot = temp is not None and temp >= max_celsius
        throttled = values["clocks_throttle_reasons.active"] not in (
            "0x0000000000000000",
            "[N/A]",
            "0x0",
        )
        verdicts.append(
            _verdict(
                "node",
                "gpu",
                host,
                WARN if hot or throttled else OK,
                "%s C, SM clock %s of %s MHz, %s W, throttle reasons %s"
                % (
                    values["temperature.gpu"],
                    values["clocks.sm"],
                    values["clocks.max.sm"],
                    values["power.draw"],
                    values["clocks_throttle_reasons.active"],
                ),
                "the GPU is hot or held back: check the airflow around the Spark (nothing stacked "
                "on it, vents free) and what else draws power",
            )
        )
    return verdicts


# --- evidence: registered task results reshaped into what the checks read ------------------


def _results(registered) -> list:
    if isinstance(registered, Mapping):
        return list(registered.get("results") or [])
    return list(registered or [])


def fabric_evidence(plan: Mapping, links, full, small, gids) -> dict:
    """``fabric_observed`` from the fabric role's observe tasks' registered results.

    ``links``: ``ip -j link show`` per rail (loop var ``__fabric_rail``); ``full`` and
    ``small``: the full-size pings per rail and peer (``__fabric_path``) and the small ones
    sent after a miss (``__fabric_missed``); ``gids``: ``roce_gid_info`` per rail.
    """
    small_rc = {}
    for result in _results(small):
        path = (result.get("__fabric_missed") or {}).get("__fabric_path") or [{}, None]
        small_rc[(path[0].get("interface"), path[1])] = result.get("rc")
    pings = []
    for result in _results(full):
        path = result.get("__fabric_path") or [{}, None]
        key = (path[0].get("interface"), path[1])
        pings.append(
            {
                "interface": key[0],
                "peer": key[1],
                "full_rc": result.get("rc"),
                "small_rc": small_rc.get(key),
            }
        )
    return {
        "plan": dict(plan),
        "links": [
            {
                "interface": (result.get("__fabric_rail") or {}).get("interface"),
                "rc": result.get("rc"),
                "stdout": result.get("stdout", ""),
                "stderr": result.get("stderr", ""),
            }
            for result in _results(links)
        ],
        "pings": pings,
        "gids": [
            {
                "selected": result.get("selected"),
                "rows": list(result.get("rows") or []),
                "source": result.get("source"),
                "error": result.get("msg", "") if result.get("failed") else "",
            }
            for result in _results(gids)
        ],
    }


# The engine variables the doctor keeps from a running container: never a key (VLLM_API_KEY,
# HF_TOKEN), only what says where its traffic goes.
ENGINE_ENV_PREFIXES = ("NCCL_", "GLOO_", "TP_", "UCX_")
ENGINE_ENV_NAMES = ("VLLM_HOST_IP",)
NCCL_MARK = "nccl: "


def safe_env(container_env: Iterable[str]) -> List[str]:
    """The fabric's variables of a container's ``Config.Env``, nothing else."""
    kept = []
    for item in container_env or []:
        name = str(item).partition("=")[0]
        if name in ENGINE_ENV_NAMES or name.startswith(ENGINE_ENV_PREFIXES):
            kept.append(str(item))
    return kept


def _status_of(result) -> Optional[int]:
    if not isinstance(result, Mapping) or result.get("skipped"):
        return None
    status = result.get("status")
    return int(status) if isinstance(status, int) and status > 0 else None


def engine_evidence(
    boot: Mapping, info: Mapping, probe: Mapping, api: Mapping, planned: Optional[Mapping] = None
) -> dict:
    """``vllm_observed`` from the engine role's observe tasks' registered results.

    ``boot``: ``vllm_boot_info`` (state, labels, errors); ``info``:
    ``docker_container_info`` (only the fabric's variables, the image and the argv are
    kept); ``probe``: the command run inside the container (its processes' command lines,
    then a line starting ``nccl: ``); ``api``: on the head, ``health``, ``models`` and
    ``canary`` (``uri`` results), else empty; ``planned``: the engine role's
    ``vllm_planned`` (this node's planned ``deployment`` and ``spec``, or an ``error``),
    kept as the planned fingerprint and how the container differs from the spec.
    """
    container = (boot or {}).get("container") or {}
    details = (info or {}).get("container") or {}
    config = details.get("Config") or {}
    labels = container.get("labels") or config.get("Labels") or {}
    deployment = ""
    for name, value in labels.items():
        if name.endswith(".deployment"):
            deployment = value
    lines = str((probe or {}).get("stdout") or "").splitlines()
    nccl = ""
    for line in lines:
        if line.startswith(NCCL_MARK):
            nccl = line[len(NCCL_MARK) :].strip()
    found = {
        "container": container.get("name") or details.get("Name", "").lstrip("/"),
        "exists": bool((boot or {}).get("exists")),
        "status": container.get("status", "absent"),
        "exit_code": container.get("exit_code"),
        "restart_count": container.get("restart_count", 0),
        "started_at": container.get("started_at", ""),
        "image_id": details.get("Image", ""),
        "deployment": deployment,
        "env": safe_env(config.get("Env")),
        "argv": [str(word) for word in (config.get("Cmd") or [])],
        "nccl": nccl,
        "workers": worker_processes("\n".join(lines)),
        "errors": [
            {key: error.get(key) for key in ("kind", "line", "hint", "count")}
            for error in (((boot or {}).get("boot") or {}).get("errors") or [])
        ],
    }
    if planned:
        found["plan"] = (
            {"error": str(planned["error"])}
            if planned.get("error")
            else {
                "deployment": str(planned.get("deployment") or ""),
                "differences": spec_differences(planned.get("spec") or {}, details)
                if details and planned.get("deployment") != deployment
                else [],
            }
        )
    if api:
        models = api.get("models") or {}
        ids = [
            str(entry.get("id"))
            for entry in ((models.get("json") or {}).get("data") or [])
            if isinstance(entry, Mapping)
        ]
        canary = api.get("canary") or {}
        usage = (canary.get("json") or {}).get("usage") or {}
        found["api"] = {
            "health": _status_of(api.get("health")),
            "models": {"status": _status_of(models), "ids": ids},
            "served": api.get("served") or "",
            "canary": {
                "status": _status_of(canary),
                "seconds": canary.get("elapsed"),
                "tokens": usage.get("completion_tokens"),
                "msg": "" if _status_of(canary) == 200 else str(canary.get("msg") or ""),
            },
        }
    return found


# --- the whole cluster --------------------------------------------------------------------


def expected_workers(head_argv: Iterable, nodes: int) -> int:
    """Worker processes each node's engine runs: the world size over the node count."""
    shape = engine_shape(head_argv)
    return max(1, (shape["tp"] * shape["pp"]) // max(1, nodes))


def judge(observed: Mapping[str, Mapping], settings: Mapping) -> dict:
    """Every check on what the doctor read: ``{host: {"fabric", "node", "engine"}}``.

    ``settings``: ``head`` (its host name), ``min_available_gib``, ``min_free_gib``,
    ``max_gpu_celsius``, ``max_regression_pct`` and ``bench`` (``first`` and ``last``
    figures of this deployment's reports, or nothing). Returns :func:`report`'s document
    with ``hosts`` and ``deployment`` added.
    """
    hosts = list(observed)
    head = settings.get("head") or (hosts[0] if hosts else None)
    verdicts: List[Verdict] = []
    head_engine = (observed.get(head) or {}).get("engine") or {}
    workers_each = expected_workers(head_engine.get("argv") or [], len(hosts))
    for host in hosts:
        seen = observed[host] or {}
        unread = [area for area in ("fabric", "node", "engine") if not seen.get(area)]
        if unread:
            verdicts.append(
                _verdict(
                    "node",
                    "read",
                    host,
                    FAIL,
                    "nothing was read of its %s: the node was unreachable or a read failed "
                    "(see the play output above)" % ", ".join(unread),
                    "reach the node (`ansible -m ping`), fix what the play output names, and "
                    "run the doctor again",
                )
            )
            if len(unread) == 3:
                continue
        fabric = seen.get("fabric") or {}
        node = seen.get("node") or {}
        engine = seen.get("engine") or {}
        plan = fabric.get("plan") or {}
        mtu = int(plan.get("mtu") or 0)
        verdicts += check_links(host, mtu, fabric.get("links") or [])
        verdicts += check_pings(host, mtu, fabric.get("pings") or [])
        found, facts = fabric_now(host, plan, list(fabric.get("gids") or []))
        verdicts += found
        env = env_of(engine.get("env") or [])
        if facts is not None and engine.get("status") == "running":
            verdicts += check_gid_drift(host, facts["node"]["rails"], env)
            verdicts.append(check_socket_env(host, facts["env"], env))
        verdicts += check_engine(host, engine, workers_each)
        planned = check_plan(host, engine)
        if planned is not None:
            verdicts.append(planned)
        if engine.get("exists"):
            verdicts.append(check_errors(host, engine.get("errors") or []))
        verdicts.append(
            check_owner(
                host,
                node.get("cache_dir", "the cache"),
                node.get("owner") or {},
                node.get("uid"),
                node.get("gid"),
            )
        )
        if node.get("disk_available_bytes") is not None:
            verdicts.append(
                check_disk(
                    host,
                    node.get("cache_dir", "the cache"),
                    node["disk_available_bytes"],
                    float(settings.get("min_free_gib", 0)),
                )
            )
        if node.get("meminfo"):
            verdicts += check_memory(
                host,
                parse_meminfo(node["meminfo"]),
                float(settings.get("min_available_gib", 0)),
            )
        if node.get("gpu"):
            verdicts += check_gpu(host, node["gpu"], float(settings.get("max_gpu_celsius", 90)))
    running = {h: (observed[h] or {}).get("engine") or {} for h in hosts}
    verdicts += check_started_together(head, running)
    verdicts.append(
        check_same_everywhere(
            "engine",
            "deployment",
            {h: e.get("deployment") or "(none)" for h, e in running.items()},
            "the deployment fingerprint",
        )
    )
    verdicts.append(
        check_same_everywhere(
            "engine",
            "image",
            {h: e.get("image_id") or "(none)" for h, e in running.items()},
            "the engine image",
        )
    )
    verdicts.append(
        check_same_everywhere(
            "engine",
            "nccl",
            {h: e.get("nccl") or "(none found)" for h, e in running.items()},
            "the NCCL library in the engine",
        )
    )
    if head_engine.get("api"):
        verdicts += check_api(head_engine["api"])
    bench = settings.get("bench") or {}
    if bench.get("first") and bench.get("last"):
        verdicts += check_regression(
            bench["first"], bench["last"], float(settings.get("max_regression_pct", 10))
        )
    doc = report(verdicts)
    doc["hosts"] = hosts
    doc["deployment"] = head_engine.get("deployment") or ""
    return doc


def evidence_of(hostvars: Mapping) -> dict:
    """What a node's observe entry points published, by area (None where nothing was)."""
    return {
        "fabric": hostvars.get("fabric_observed"),
        "node": hostvars.get("node_observed"),
        "engine": hostvars.get("vllm_observed"),
    }


def bench_figures(reports: Iterable) -> dict:
    """``{"first", "last"}``: the numeric summary figures of two bench reports (``bench.json``).

    Each report is the parsed document, its JSON text, or an ``ansible.builtin.slurp`` result
    (base64 ``content``); one that cannot be read gives nothing to compare.
    """
    figures = []
    for item in reports or []:
        doc = item
        if isinstance(item, Mapping) and "content" in item:
            try:
                doc = base64.b64decode(item["content"]).decode("utf-8")
            except (ValueError, TypeError):
                doc = None
        if isinstance(doc, str):
            try:
                doc = json.loads(doc)
            except ValueError:
                doc = None
        summary = (doc or {}).get("summary") if isinstance(doc, Mapping) else None
        figures.append(
            {
                name: float(value)
                for name, value in (summary or {}).items()
                if isinstance(value, (int, float)) and not isinstance(value, bool)
            }
        )
    if len(figures) < 2 or not figures[0] or not figures[-1]:
        return {}
    return {"first": figures[0], "last": figures[-1]}


def summary_lines(doc: Mapping) -> List[str]:
    """The play output's summary: the verdict, then one line per check that is not ok."""
    counts = doc["counts"]
    lines = [
        "doctor: %s (%d ok, %d warn, %d fail)"
        % (doc["status"], counts[OK], counts[WARN], counts[FAIL])
    ]
    for check in sorted(doc["checks"], key=lambda c: -SEVERITY[c["status"]]):
        if check["status"] == OK:
            continue
        lines.append(
            "%s %s: %s on %s: %s. Fix: %s"
            % (
                check["status"].upper(),
                check["area"],
                check["check"],
                check["host"] or "the cluster",
                check["evidence"],
                check["fix"],
            )
        )
    return lines


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
