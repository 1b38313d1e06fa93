# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read a vLLM engine log (boot and serving) into a summary of what the engine reported.

Private to gb10.serving: pure Python, no Ansible imports, so the module, the filter and the
unit tests share one parser. Target-side code: keep it Python 3.8 compatible.

How a vLLM log line is built (0.9 to 0.34, plus the V0 engine):

* A **record** is ``LEVEL MM-DD HH:MM:SS [file.py:NN] message``; V0 and some early V1
  builds leave out the brackets (``INFO 02-04 00:18:05 worker.py:572] message``), and a
  copy may start inside the date. ``file.py`` can be a shortened path under DEBUG.
* Zero or more **process prefixes** come first, one per process that relayed the line:
  ``(APIServer pid=1) ``, ``(EngineCore_DP0 pid=7) ``, ``(Worker_TP1 pid=9) ``, Ray's
  ``(RayWorkerWrapper pid=2, ip=10.0.0.2) ``, nested in any order. Before 0.34 the
  prefix was written by wrapping stdout, so it also starts lines that are not records:
  tracebacks, ``print`` output, progress bars, uvicorn's own ``INFO:     ...`` lines.
  Launchers add their own timestamps in front (``2025-11-11T02:42:39.9Z``,
  ``2026-04-19 17:30:52.611 | ``).
* Colour: ANSI SGR sequences (``ESC[...m``) may surround the prefix, the level, the date or
  anything else; they are removed before anything is read.
* Carriage returns: tqdm redraws a bar with ``\\r`` and no newline, so several bars and the
  next record can share one physical line; multi-line messages end their lines in
  ``\\r\\n``. Each ``\\r``-separated piece is read on its own; a bar left in front of a
  record without any separator does not hide the record, which is found by its header.
* Ray appends `` [repeated 7x across cluster]`` to de-duplicated lines.

What is read from the messages (the newest value wins, except where noted):

* the version, from the ASCII logo (``version 0.32.0``), ``vLLM API server version X``,
  ``... LLM engine (v0.32.0) with config: ...`` or ``Launching vLLM (v0.32.0) headless``;
* the KV cache pool: ``GPU KV cache size: 425,424 tokens`` and ``Maximum concurrency for
  65,536 tokens per request: 6.49x`` on two lines, or both on one line since 0.32 (device
  ``GPU``, ``CPU``, ``GPU + host``...), and ``Available KV cache memory: 16.23 GiB``;
* weights (``Model loading took X GiB [memory] and Y seconds``; V0 ``Loading model
  weights took X GB``), engine start-up time, CUDA graph capture time and memory;
* the attention and MoE backends the engine chose (the first of each after a boot starts:
  the target model's; a draft model's come later);
* the engine configuration dump: speculative method and token count, CUDA graph capture
  sizes;
* the newest throughput line (``Avg prompt throughput: ...``, per engine or ``<n> Engines
  Aggregated``) and a summary of all of them since the boot started: how many, how many
  busy, the peaks and the mean generation throughput while busy (each throughput line is
  read as it comes: they come every 10 seconds or so);
* the newest ``SpecDecoding metrics`` line (parsed only when the result is asked for);
* torch.distributed's ``world_size=2 rank=1 local_rank=0 distributed_init_method=...
  backend=gloo`` (the lowest rank's line);
* readiness (the HTTP server started) and shutdown;
* errors: exception lines of tracebacks, ERROR records, NCCL ``WARN`` lines, argparse
  errors; each classified (``oom``, ``nccl``, ``permission``, ``engine_dead``, ``timeout``,
  ``other``) with a hint, identical ones counted instead of repeated (Ray repeats, one
  traceback per rank); :data:`ERROR_KIND_HELP` says what each kind means and what to change.

Memory stays bounded whatever the log size: only the newest values, at most
:data:`MAX_ERRORS` errors, one traceback frame per process (for at most
:data:`MAX_FRAME_KEYS` processes) and one partial line (at most :data:`MAX_LINE` bytes)
are kept.

Speed: lines are split and tested as bytes (UTF-8; ``\\n`` never occurs inside a
character, so a piece of the log may end anywhere), and a record is recognised by the
position of its date around ``] `` rather than by a regular expression; only the lines
that matter are decoded, with undecodable bytes replaced.

A new boot (the API server's logo or version line, or a headless worker's launch line)
clears the values read so far, so the result describes the newest boot of the log;
errors, ``lines`` and ``last_message`` carry over.
"""

from __future__ import annotations

import json
import re
from typing import Iterable

# At most this many distinct errors are kept (the first ones: the root cause comes first).
MAX_ERRORS = 20
# Error lines, the last message and traceback frames are cut to this many characters.
MAX_TEXT = 400
# A partial line longer than this (no newline in sight) is read as a line of its own.
MAX_LINE = 1 << 20
# Traceback frames are remembered for at most this many processes at a time.
MAX_FRAME_KEYS = 64

ERROR_KINDS = ("oom", "nccl", "permission", "engine_dead", "timeout", "other")
# Errors that take a running server down: after one of these the log is not ``ready``.
FATAL_KINDS = frozenset(("oom", "nccl", "permission", "engine_dead", "timeout"))

RESULT_KEYS = (
    "version",
    "kv_cache_tokens",
    "kv_cache_device",
    "max_concurrency",
    "max_concurrency_request_tokens",
    "available_kv_cache_gib",
    "model_load_gib",
    "model_load_seconds",
    "attention_backend",
    "moe_backend",
    "cudagraph_capture_sizes",
    "max_cudagraph_capture_size",
    "speculative",
    "last_throughput",
    "throughput_summary",
    "ready",
    "shutdown",
    "world_size",
    "rank",
    "distributed_init_method",
    "distributed_backend",
    "init_engine_seconds",
    "graph_capture_seconds",
    "graph_capture_gib",
    "last_message",
    "lines",
    "kv_lines",
    "boots",
    "errors",
    "errors_omitted",
)

_ANSI_RE = re.compile(rb"\x1b\[[0-9;]*m")

# What may precede a line's own text: launcher timestamps and process prefixes.
_LEAD_RE = re.compile(
    r"(?:\s*\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?(?:\s*\|)?\s*"
    r"|\s*\((?:[A-Za-z_][\w:.\-]*(?: pid=\d+)?|autoscaler [^()]*?)(?:, ip=[\d.]+)?\) ?)+"
)
# What _LEAD_RE's match can start with (a cheap test before the regular expression).
_LEAD_STARTS = frozenset("(0123456789 \t")
_UVICORN_RE = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+(.*)")
_UVICORN_STARTS = frozenset(("INFO:", "WARNI", "ERROR", "DEBUG", "CRITI"))
_RAY_SUFFIX_RE = re.compile(
    r"\s*\[repeated (\d+)x across cluster\](?:\s*\(Ray deduplicates logs by default\..*)?\s*$"
)

# Python's last traceback line: ``[module.]NameError[: detail]``.
_EXCEPTION_RE = re.compile(r"(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception)(?::\s|:?$)")
_ARGPARSE_RE = re.compile(r"(?:[\w.\-]+(?: [\w.\-]+)?: )?error: (?P<detail>.*)")
_ARG_FLAG_RE = re.compile(r"argument (?P<flag>-[\w\-]+)")
_UNRECOGNIZED_RE = re.compile(r"unrecognized arguments: (?P<flags>.*)")
# Lines that only announce the traceback that follows (the exception line says what).
_INTRO_RE = re.compile(
    r"hit an exception|output_handler failed|Exception in ASGI application|^Dumping \w+"
)
# Traceback lines that are neither a frame nor the exception.
_TRACEBACK_NOISE = ("Traceback (most recent call last)", "The above exception", "During handling")
_FRAME_PREFIX = 'File "'

_KV_SIZE_RE = re.compile(
    rb"(?P<device>[A-Za-z]+(?: \+ [A-Za-z]+)?) KV cache size: (?P<tokens>[\d,]+) tokens"
    rb"(?:, Maximum concurrency for (?P<request>[\d,]+) tokens per request: (?P<conc>[\d.]+)x)?"
)
_CONCURRENCY_RE = re.compile(
    rb"Maximum concurrency for (?P<request>[\d,]+) tokens per request: (?P<conc>[\d.]+)x"
)
_AVAILABLE_KV_RE = re.compile(rb"Available KV cache memory: (?P<gib>[\d.]+) GiB")
_MODEL_LOADING_RE = re.compile(
    rb"Model loading took (?P<gib>[\d.]+) (?:GiB|GB)(?: memory)? and (?P<seconds>[\d.]+) s"
)
_V0_WEIGHTS_RE = re.compile(rb"Loading model weights took (?P<gib>[\d.]+) GB")
_INIT_ENGINE_RE = re.compile(rb"init engine \(.*?\) took (?P<seconds>[\d.]+) s")
_GRAPH_CAPTURE_RE = re.compile(
    rb"Graph capturing finished in (?P<seconds>[\d.]+) secs?, took (?P<gib>-?[\d.]+) GiB"
)
_LARGEST_RE = re.compile(rb"largest=(\d+)")
_WORLD_RE = re.compile(
    rb"world_size=(?P<world>\d+) rank=(?P<rank>\d+) local_rank=\d+"
    rb" distributed_init_method=(?P<method>\S+) backend=(?P<backend>\w+)"
)

_LOGO_VERSION_RE = re.compile(rb"\bversion\s+v?(\d[^\s]*)")
_ENGINE_VERSION_RE = re.compile(rb"LLM engine \(v(\d[^)\s]*)\)")
_SERVER_VERSION_RE = re.compile(rb"vLLM (?:API )?server version v?(\d[^\s,]*)")
_LAUNCH_VERSION_RE = re.compile(rb"Launching vLLM \(v(\d[^)\s]*)\)")

_SPEC_CONFIG_RE = re.compile(rb"speculative_config=(?:None|SpeculativeConfig\((?P<body>[^)]*)\))")
_SPEC_METHOD_RE = re.compile(rb"\bmethod='(?P<method>[^']*)'")
_SPEC_TOKENS_RE = re.compile(rb"\bnum_spec_tokens=(?P<tokens>\d+)")
_ARGS_SPEC_RE = re.compile(rb"'speculative_config': \{(?P<body>[^{}]*)\}")
_ARGS_SPEC_METHOD_RE = re.compile(rb"'method': '(?P<method>[^']*)'")
_ARGS_SPEC_TOKENS_RE = re.compile(rb"'num_speculative_tokens': (?P<tokens>\d+)")
_CAPTURE_SIZES_RE = re.compile(rb"'cudagraph_capture_sizes': \[(?P<sizes>[\d,\s]*)\]")
_MAX_CAPTURE_RE = re.compile(rb"'max_cudagraph_capture_size': (?P<size>\d+)")

_ATTENTION_RES = (
    # 0.34: "Using FLASHINFER_MLA attention backend out of potential backends: [...]"
    re.compile(rb"Using (?P<name>\S+) attention backend\b"),
    # --attention-backend given: "Using AttentionBackendEnum.TRITON_ATTN backend."
    re.compile(rb"Using AttentionBackendEnum\.(?P<name>\w+) backend\b"),
    # late 2025: "Using FLASH_ATTN backend." (enum names only: "Using Marlin backend" is MoE)
    re.compile(rb"Using (?P<name>[A-Z][A-Z0-9_]*) backend\.?\s*$"),
    # 0.10/0.11: "Using FlashInfer backend on V1 engine."
    re.compile(rb"Using (?P<name>.+?) backend on V1 engine\b"),
    # V0: "Using Flash Attention backend." / "Using XFormers backend."
    re.compile(
        rb"Using (?P<name>Flash ?Attention|FlashInfer|XFormers|Torch SDPA|ROCmFlashAttention"
        rb"|Pallas|IPEX) backend\.?\s*$"
    ),
)
_MOE_RES = (
    # "Using TRITON Fp8 MoE backend out of ...", "Using 'VLLM_CUTLASS' NvFp4 MoE backend ..."
    re.compile(rb"Using '?(?P<name>[^\s']+)'? (?:\w+ )?MoE (?:LoRA )?backend\b"),
    # 0.11: "Using DeepGemm kernels for Fp8MoEMethod."
    re.compile(rb"Using (?P<name>\S+) kernels for \w*MoE"),
)

# What the throughput summary reads of each throughput line, in one go (V0 and V1 alike);
# a line of another shape goes through _STAT_RES.
_SUMMARY_RE = re.compile(
    rb"Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s,"
    rb" Running: (\d+) reqs"
)
_STAT_RES = (
    ("prompt_tokens_per_s", float, re.compile(r"Avg prompt throughput: ([\d.]+)")),
    ("generation_tokens_per_s", float, re.compile(r"Avg generation throughput: ([\d.]+)")),
    ("running", int, re.compile(r"Running: (\d+)")),
    ("waiting", int, re.compile(r"(?:Waiting|Pending): (\d+)")),
)
_MEAN_ACCEPTANCE_RE = re.compile(r"Mean acceptance length: ([\d.]+)")
_PER_POSITION_RE = re.compile(r"Per-position acceptance rate: (\d[\d.]*(?:, \d[\d.]*)*)")
_AVG_DRAFT_RE = re.compile(r"Avg Draft acceptance rate: ([\d.]+)%")

# Where JIT compilers keep their caches (PermissionError on one of these: env not passed).
_JIT_MARKERS = (
    "/cache/jit",
    "jitcache",
    "triton",
    "torch_extensions",
    "flashinfer",
    "tvm-ffi",
    "tvm_ffi",
    "deep_gemm",
    "torch_compile_cache",
    "/.cache/",
    "/cache/vllm",
    "inductor",
)

_HINT_JIT = (
    "A JIT compiler cache is not writable by the engine: the JIT cache environment did not"
    " reach the engine. TRITON_CACHE_DIR, TORCH_EXTENSIONS_DIR, VLLM_CACHE_DIR,"
    " FLASHINFER_WORKSPACE_BASE, TVM_FFI_CACHE_DIR and XDG_CACHE_HOME must point into the"
    " HF cache owned by the container UID; re-run the node role, then restart the engine."
)
_HINT_PERMISSION = (
    "The engine's UID cannot access a path it needs: make the HF cache and everything the"
    " engine mounts owned by the container UID (re-run the node role) and check the"
    " container's bind mounts."
)
_HINT_OOM = (
    "Out of memory: lower gpu_memory_utilization, max_model_len or max_num_seqs in the"
    " recipe (a GB10 shares its 128 GB between the CPU and the GPU, so other processes count"
    " too)."
)
_HINT_NCCL = (
    "NCCL failed: check this node's fabric environment (NCCL_SOCKET_IFNAME, NCCL_IB_HCA,"
    " NCCL_IB_GID_INDEX from the fabric facts) and the link itself (link up, MTU, a ping"
    " across the fabric, ib_write_bw)."
)
_HINT_ENGINE_DEAD = (
    "The engine core died: the cause is the first error above this one in this log, or in"
    " the other node's engine log when a remote rank failed."
)
_HINT_TIMEOUT = (
    "The ranks did not meet in time: check the master address and port (the head's fabric"
    " IPv4), the firewall between the nodes, and that the engine on the other node started."
)
_HINT_GLOO = (
    "The ranks could not connect over gloo: GLOO_SOCKET_IFNAME and VLLM_HOST_IP must name this"
    " node's fabric interface and address on both nodes; then check the master address and"
    " port, the firewall, and that the engine on the other node started."
)
_HINT_RPC_TIMEOUT = (
    "A worker did not answer in time: it hung or ran out of memory; look at the worker"
    " processes' lines above, and at the other node's log."
)
# A path error messages name; matched in text, never opened.
_SHM = "/dev/shm"  # noqa: S108
_HINT_SHM = (
    "%s is too small or full: give the engine container a larger --shm-size (or --ipc=host)"
    " and remove stale files from %s." % (_SHM, _SHM)
)
_HINT_PORT = "The port is taken: stop whatever listens on it (an older engine?) or change the port."
_HINT_RAY = (
    "Ray could not place the workers: every node must have joined the Ray cluster with its"
    " GPU (ray status), and tensor_parallel_size must match the GPUs in the cluster."
)
_HINT_OTHER = (
    "Not a known failure: read this line with the traceback or lines just above it in the"
    " engine log."
)

# Each kind of ERROR_KINDS for a person: (what it means, what to change). One place for the
# whole kind, where an error's own hint speaks of its line; docs/troubleshooting.md is
# generated from this table and ERROR_HINTS (scripts/gen_docs.py).
ERROR_KIND_HELP = {
    "oom": (
        "The engine could not get the memory it asked for: the weights, the KV cache pool and"
        " the CUDA graphs do not fit together, or the KV cache pool cannot hold a single"
        " request of max_model_len tokens.",
        "Lower gpu_memory_utilization, max_model_len or max_num_seqs (vllm_recipe_overrides),"
        " or max_cudagraph_capture_size, and run again. A GB10 shares its 128 GB between the"
        " CPU and the GPU: stop whatever else holds memory on that node (an older engine, a"
        " download container).",
    ),
    "nccl": (
        "NCCL, which carries the tensor-parallel traffic between the nodes over RoCE, could not"
        " set up its connections or lost one (an ibverbs call failed, a proxy could not"
        " connect, a completion came back with an error).",
        "Re-run the fabric role and compare its facts with the engine's environment:"
        " NCCL_SOCKET_IFNAME, NCCL_IB_HCA and NCCL_IB_GID_INDEX must name this node's fabric"
        " port, RDMA device and RoCE v2 IPv4 GID. Then check the link itself: up, the same MTU"
        " on both ports, a full-size ping across, and --tags fabric_acceptance on real"
        " hardware (ib_write_bw, all_reduce_perf).",
    ),
    "permission": (
        "The UID the engine runs as could not read or write a path: most often a JIT compiler"
        " cache left in the image's root-owned directories, otherwise the Hugging Face cache"
        " or another mount owned by someone else.",
        "Re-run the node role: it makes the HF cache and the six JIT cache directories owned by"
        " node_container_uid and sets TRITON_CACHE_DIR, TORCH_EXTENSIONS_DIR, VLLM_CACHE_DIR,"
        " FLASHINFER_WORKSPACE_BASE, TVM_FFI_CACHE_DIR and XDG_CACHE_HOME to point into it."
        " Keep a replaced recipe's env from overriding them with image paths, then restart the"
        " engine (run the vllm role again).",
    ),
    "engine_dead": (
        "The engine core process or one of its workers died. This line reports the death, not"
        " its cause.",
        "Look for the first error logged before this one, in the same log or in the other"
        " node's (the vllm role saves both under vllm_log_dir when a start fails), and fix"
        " that one.",
    ),
    "timeout": (
        "Processes that must meet waited for each other in vain: the ranks' rendezvous on the"
        " head (torch.distributed store, gloo) or a call to a worker timed out.",
        "Check that the worker reaches the head's fabric address on vllm_master_port (firewall,"
        " routes), that GLOO_SOCKET_IFNAME and VLLM_HOST_IP name each node's fabric interface"
        " and address, and that the engine on the other node started at all (its own log). A"
        " worker that stops answering after it started usually ran out of memory.",
    ),
    "other": (
        "An error of no kind above: a bad engine flag in the recipe's command, /dev/shm too"
        " small, the API port taken, Ray unable to place the workers, or a failure the parser"
        " does not know.",
        "Read the error's hint: for the shapes the parser knows it says what to change."
        " Otherwise read the line with the traceback above it in the saved log.",
    ),
}
# Every fixed hint classify_error gives, under its kind, in the order it tests for them. An
# argparse error's hint is built from its line (kind ``other``), so it is not listed.
ERROR_HINTS = (
    ("oom", _HINT_OOM),
    ("nccl", _HINT_NCCL),
    ("permission", _HINT_JIT),
    ("permission", _HINT_PERMISSION),
    ("engine_dead", _HINT_ENGINE_DEAD),
    ("timeout", _HINT_GLOO),
    ("timeout", _HINT_RPC_TIMEOUT),
    ("timeout", _HINT_TIMEOUT),
    ("other", _HINT_SHM),
    ("other", _HINT_PORT),
    ("other", _HINT_RAY),
    ("other", _HINT_OTHER),
)


def _number(data):
    return int(data.replace(b",", b""))


def _cut(text, limit=MAX_TEXT):
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _classify_argparse(detail):
    unrecognized = _UNRECOGNIZED_RE.search(detail)
    if unrecognized:
        flags = unrecognized.group("flags").strip()
        return (
            "A bad engine flag in the recipe command: vllm serve does not know %s; remove or"
            " rename it (check the flag against this vLLM version)." % flags
        )
    flag = _ARG_FLAG_RE.search(detail)
    if flag:
        return (
            "A bad engine flag in the recipe command: the value given to %s is not valid for"
            " this vLLM version (%s); fix it in the recipe."
            % (flag.group("flag"), _cut(detail, 160))
        )
    return "A bad engine command line in the recipe: %s" % _cut(detail, 200)


def classify_error(text, frame=None):
    """(kind, hint) of one error line (prefixes and record header already removed).

    ``frame`` is the innermost traceback frame seen before it in the same process, used
    to recognise JIT caches when the exception itself names no path.
    """
    lower = text.lower()
    argparse = _ARGPARSE_RE.match(text)
    if argparse and not _EXCEPTION_RE.match(text):
        return "other", _classify_argparse(argparse.group("detail"))
    if "permissionerror" in lower or "permission denied" in lower or "[errno 13]" in lower:
        where = lower + " " + (frame or "").lower()
        if any(marker in where for marker in _JIT_MARKERS):
            return "permission", _HINT_JIT
        return "permission", _HINT_PERMISSION
    if _SHM in lower:
        return "other", _HINT_SHM
    if (
        "out of memory" in lower
        or "outofmemoryerror" in lower
        or "cannot allocate memory" in lower
        or "no available memory for the cache blocks" in lower
        or "larger than the available kv cache memory" in lower
    ):
        return "oom", _HINT_OOM
    if "nccl" in lower or "ibv_" in lower:
        return "nccl", _HINT_NCCL
    if (
        "enginedeaderror" in lower
        or "engine core initialization failed" in lower
        or "enginecore failed to start" in lower
        or "died unexpectedly" in lower
        or "enginecore encountered an issue" in lower
    ):
        return "engine_dead", _HINT_ENGINE_DEAD
    if "gloo" in lower and (
        "connect" in lower or "closed by peer" in lower or "timed out" in lower
    ):
        return "timeout", _HINT_GLOO
    if "rpc call" in lower and ("timed out" in lower or "timeout" in lower):
        return "timeout", _HINT_RPC_TIMEOUT
    if (
        "distnetworkerror" in lower
        or "diststoreerror" in lower
        or "timeouterror" in lower
        or "timed out" in lower
        or "connect timeout" in lower
    ):
        return "timeout", _HINT_TIMEOUT
    if "address already in use" in lower:
        return "other", _HINT_PORT
    if "placement group" in lower or "no available node types" in lower:
        return "other", _HINT_RAY
    return "other", _HINT_OTHER


def _decode(data):
    return data.decode("utf-8", "replace")


def _stat_values(msg):
    """The figures of a throughput message (bytes) by name, each None when not shown; None
    when it shows neither throughput."""
    values = {}
    stats = _decode(msg)
    for key, kind, pattern in _STAT_RES:
        match = pattern.search(stats)
        values[key] = kind(match.group(1)) if match else None
    if values["prompt_tokens_per_s"] is None and values["generation_tokens_per_s"] is None:
        return None
    return values


class _ThroughputSummary(object):
    """What every throughput line of one boot showed, in a few numbers whatever their count.

    A line is busy when it shows tokens going through or requests running. When the work
    stops, the engine logs an idle line (``0.0 tokens/s`` both, ``Running: 0 reqs``), so the
    newest line after a benchmark says nothing about the benchmark; this summary does.
    """

    __slots__ = (
        "lines",
        "busy_lines",
        "peak_generation",
        "peak_prompt",
        "peak_running",
        "busy_generation_sum",
        "busy_generation_lines",
    )

    def __init__(self):
        self.lines = 0
        self.busy_lines = 0
        self.peak_generation = None
        self.peak_prompt = None
        self.peak_running = None
        self.busy_generation_sum = 0.0
        self.busy_generation_lines = 0

    def add(self, prompt, generation, running):
        """Count one line's figures (each None when the line does not show it)."""
        self.lines += 1
        busy = False
        if generation is not None:
            if self.peak_generation is None or generation > self.peak_generation:
                self.peak_generation = generation
            busy = generation > 0
        if prompt is not None:
            if self.peak_prompt is None or prompt > self.peak_prompt:
                self.peak_prompt = prompt
            busy = busy or prompt > 0
        if running is not None:
            if self.peak_running is None or running > self.peak_running:
                self.peak_running = running
            busy = busy or running > 0
        if busy:
            self.busy_lines += 1
            if generation is not None:
                self.busy_generation_sum += generation
                self.busy_generation_lines += 1

    def result(self):
        """The summary, or None when no throughput line was read."""
        if not self.lines:
            return None
        mean = None
        if self.busy_generation_lines:
            mean = round(self.busy_generation_sum / self.busy_generation_lines, 1)
        return {
            "lines": self.lines,
            "busy_lines": self.busy_lines,
            "peak_generation_tokens_per_s": self.peak_generation,
            "peak_prompt_tokens_per_s": self.peak_prompt,
            "mean_generation_tokens_per_s": mean,
            "peak_running": self.peak_running,
        }


class VllmLogParser(object):
    """Streaming reader of one vLLM log: feed it, then ask :meth:`result`.

    ``feed_bytes`` and ``feed_text`` take any piece of the log (lines may be cut anywhere
    between two calls; an unfinished last line waits for the next piece), ``feed_line``
    one physical line, with or without its newline. Nothing is kept per line, so memory
    does not grow with the log.

    Lines are read as bytes and split on ``\\n``, which never occurs inside a UTF-8
    character, so a piece may also end in the middle of a character; only the few lines
    that matter are decoded (as UTF-8, undecodable bytes replaced), each one whole.
    """

    def __init__(self):
        self.lines = 0
        self.kv_lines = 0
        self.boots = 0
        self.errors_omitted = 0
        self._tail = b""
        self._last = None
        self._errors = []
        self._error_index = {}
        self._frames = {}
        self._dispatch = dict(
            (key.encode("utf-8")[:4], True if name is None else getattr(self, name))
            for key, name in _DISPATCH
        )
        self._reset_boot()

    # --- feeding -----------------------------------------------------------------------

    def feed_bytes(self, data: bytes) -> None:
        """Read a piece of the log as bytes (UTF-8)."""
        if self._tail:
            data = self._tail + data
            self._tail = b""
        end = data.rfind(b"\n")
        if end < 0:
            self._keep_tail(data)
        elif end + 1 < len(data):
            self._keep_tail(data[end + 1 :])
            self._read_block(data[: end + 1])
        else:
            self._read_block(data)

    def feed_text(self, text: str) -> None:
        """Read a piece of the log as text."""
        self.feed_bytes(text.encode("utf-8", "surrogatepass"))

    def feed_line(self, line) -> None:
        """Read one physical line (str or bytes), with or without its newline.

        A pending unfinished line from :meth:`feed_text`/:meth:`feed_bytes` is read
        first, as a line of its own.
        """
        self.flush()
        if not isinstance(line, bytes):
            line = line.encode("utf-8", "surrogatepass")
        self._read_block(line if line.endswith(b"\n") else line + b"\n")

    def feed_lines(self, lines: Iterable) -> None:
        """Read each of an iterable of physical lines (a file object works)."""
        for line in lines:
            self.feed_line(line)

    def flush(self) -> None:
        """Read a pending unfinished line (the log ended without a newline)."""
        if self._tail:
            tail, self._tail = self._tail, b""
            self._read_block(tail + b"\n")

    def _keep_tail(self, data):
        if len(data) > MAX_LINE:
            # No newline for a megabyte: read what there is as a line of its own.
            self._read_block(data + b"\n")
        else:
            self._tail = data

    def _read_block(self, block):
        """Complete lines, each ending in a newline."""
        if b"\x1b" in block:
            block = _ANSI_RE.sub(b"", block)
        if b"\r" in block:
            # Each piece between carriage returns is read as a line (empty ones cost nothing).
            self.lines += block.count(b"\n")
            lines = block.replace(b"\r", b"\n").split(b"\n")
        else:
            lines = block.split(b"\n")
            self.lines += len(lines) - 1
        lines.pop()  # the empty piece after the last newline
        self._read(lines)

    def _read(self, lines):
        """The hot path: every line goes through here (bytes, no ANSI, no ``\\r``).

        A record is recognised by its header, checked by position instead of a regular
        expression: a ``] `` whose word before (``[file.py:NN`` or V0's ``file.py:NN``)
        follows ``MM-DD HH:MM:SS``, the level just before the date (its last letter is
        enough: INFO, WARNING or DEBUG, ERROR, CRITICAL). Every ``] `` of the line is
        tried, so a progress bar glued in front does not hide a record. The first four
        bytes of the message pick the one handler that may read it; most messages have
        none. Other lines go to :meth:`_other` unless they are uvicorn's access log.
        """
        handlers = self._dispatch.get
        other = self._other
        last = None
        last_at = -1
        for line in lines:
            k = line.find(b"] ")
            while k > 0:
                lb = line.rfind(b" ", 0, k)
                if lb >= 14 and line[lb - 12] == 45 and line[lb - 3] == 58:  # "-", ":"
                    break
                k = line.find(b"] ", k + 2)
            else:
                # Not a record. Substring tests are much cheaper on str than on bytes.
                text = line.decode("utf-8", "replace")
                if (
                    "rror" in text
                    or ":  " in text
                    or 'File "' in text
                    or "xception" in text
                    or "NCCL WARN" in text
                    or "died unexpectedly" in text
                ) and "HTTP/1." not in text:
                    # (uvicorn's access log: '... "GET /health HTTP/1.1" 200 OK')
                    shown = other(text)
                    if shown is not None:
                        last = shown
                        last_at = -1
                continue
            k += 2
            key = line[k : k + 4]
            handler = handlers(key)
            if handler is not None and (handler is True or handler(line[k:])):
                continue
            # key >= b"!": the message is not empty and does not start with a blank.
            level = line[lb - 16] if lb >= 16 else 79
            if level == 79:  # INFO
                if key >= b"!":
                    last = line
                    last_at = k
            elif level == 82 or level == 76:  # ERROR, CRITICAL
                if key >= b"!":
                    shown = self._error_record(
                        line[k:].decode("utf-8", "replace"),
                        line[: lb - 15].decode("utf-8", "replace"),
                    )
                    if shown is not None:
                        last = shown
                        last_at = -1
                elif line.find(b'File "', k) >= 0:  # a traceback's frame
                    self._remember_frame(_decode(line[: lb - 15]), _decode(line[k:]).strip())
            elif key >= b"!" and not (level == 71 and line[lb - 17] == 85):
                last = line  # WARNING (DEBUG ends in G too, after a U), or no level
                last_at = k
        if last is not None:
            self._last = last[last_at:] if last_at >= 0 else last

    def _other(self, text):
        """A line that is not a record but may matter (see _read); its message or None."""
        lead = _LEAD_RE.match(text) if text[:1] in _LEAD_STARTS else None
        if lead is not None:
            proc = lead.group(0)
            text = text[lead.end() :]
        else:
            proc = ""
        first = text[:1]
        if first == " " or first == "\t":
            stripped = text.lstrip()
            if stripped.startswith(_FRAME_PREFIX):
                self._remember_frame(proc, stripped)
            return None
        if not first:
            return None
        if text[:5] in _UVICORN_STARTS:
            uvicorn = _UVICORN_RE.match(text)
            if uvicorn is not None:
                return self._uvicorn(uvicorn.group(1), uvicorn.group(2), proc)
        if (
            "rror" in text
            or "xception" in text
            or "NCCL WARN" in text
            or "died unexpectedly" in text
        ):
            return self._raw_error(text, proc)
        return None

    def _uvicorn(self, level, msg, proc):
        """uvicorn's own ``LEVEL:     message`` lines."""
        if msg.startswith(("Application startup complete", "Uvicorn running on")):
            self._set_ready()
        elif msg.startswith(("Shutting down", "Application shutdown complete")):
            self._set_shutdown()
        if level == "ERROR" or level == "CRITICAL":
            return self._error_record(msg, proc)
        if level == "DEBUG" or not msg.strip():
            return None
        return msg

    # --- errors ------------------------------------------------------------------------

    def _remember_frame(self, proc, frame):
        frames = self._frames
        if proc not in frames and len(frames) >= MAX_FRAME_KEYS:
            frames.clear()
        frames[proc] = _cut(frame, MAX_TEXT)

    def _error_record(self, msg, proc):
        """An ERROR record's message: traceback lines are context, the rest an error."""
        first = msg[:1]
        if first == " " or first == "\t" or not first:
            stripped = msg.lstrip()
            if stripped.startswith(_FRAME_PREFIX):
                self._remember_frame(proc, stripped)
            return None
        if first == "^" or first == "~" or msg.startswith(_TRACEBACK_NOISE):
            return None
        if _INTRO_RE.search(msg):
            return msg
        self._add_error(msg, proc)
        return msg

    def _raw_error(self, text, proc):
        """A line printed outside the logger that may be an error (exception, NCCL...)."""
        if text.startswith(_TRACEBACK_NOISE):
            return None
        if text[:1] == "{" and '"message"' in text:
            try:
                text = str(json.loads(text).get("message") or text)
            except (ValueError, AttributeError):
                pass
        if "NCCL WARN" in text:
            # "host:pid:tid [dev] file.cc:206 NCCL WARN ...": the same warning on every rank.
            text = text[text.index("NCCL WARN") :]
        elif not (
            _EXCEPTION_RE.match(text)
            or _ARGPARSE_RE.match(text)
            or "died unexpectedly" in text
            or (_SHM in text and "nsufficient" in text)
        ):
            return None
        self._add_error(text, proc)
        return text

    def _add_error(self, text, proc):
        repeats = 1
        if "across cluster]" in text:
            suffix = _RAY_SUFFIX_RE.search(text)
            if suffix is not None:
                repeats = int(suffix.group(1))
                text = text[: suffix.start()]
        text = _cut(text.strip())
        known = self._error_index.get(text)
        if known is not None:
            known["count"] += repeats
            kind = known["kind"]
        else:
            frame = self._frames.pop(proc, None)
            kind, hint = classify_error(text, frame)
            if len(self._errors) < MAX_ERRORS:
                error = {"kind": kind, "line": text, "hint": hint, "count": repeats, "frame": frame}
                self._errors.append(error)
                self._error_index[text] = error
            else:
                self.errors_omitted += 1
        if kind in FATAL_KINDS and self._ready:
            self._down = True

    # --- state -------------------------------------------------------------------------

    def _reset_boot(self):
        """Forget the values of an earlier boot (errors and counters stay)."""
        self.version = None
        self.kv_cache_tokens = None
        self.kv_cache_device = None
        self.max_concurrency = None
        self.max_concurrency_request_tokens = None
        self.available_kv_cache_gib = None
        self.model_load_gib = None
        self.model_load_seconds = None
        self.attention_backend = None
        self.moe_backend = None
        self.cudagraph_capture_sizes = None
        self.max_cudagraph_capture_size = None
        self._largest_profiled = None
        self._spec_configured = False
        self._spec_method = None
        self._spec_tokens = None
        self._spec_msg = None
        self._stats_msg = None
        self._throughput_summary = _ThroughputSummary()
        self._ready = False
        self._down = False
        self._shutdown = False
        self.world_size = None
        self.rank = None
        self.distributed_init_method = None
        self.distributed_backend = None
        self.init_engine_seconds = None
        self.graph_capture_seconds = None
        self.graph_capture_gib = None

    def _new_boot(self, version):
        self.boots += 1
        self._reset_boot()
        self.version = version

    def _set_ready(self):
        self._ready = True
        self._down = False
        self._shutdown = False

    def _set_shutdown(self):
        self._shutdown = True
        self._down = True

    # --- message handlers: bytes in (decoded only where text is kept); True when the
    # --- line is not a progress message --------------------------------------------------

    def _on_kv_size(self, msg):
        match = _KV_SIZE_RE.match(msg)
        if match is None:
            return False
        self.kv_lines += 1
        self.kv_cache_device = _decode(match.group("device"))
        self.kv_cache_tokens = _number(match.group("tokens"))
        if match.group("conc") is not None:
            self.max_concurrency_request_tokens = _number(match.group("request"))
            self.max_concurrency = float(match.group("conc"))
        return False

    def _on_max_concurrency(self, msg):
        match = _CONCURRENCY_RE.match(msg)
        if match is not None:
            self.max_concurrency_request_tokens = _number(match.group("request"))
            self.max_concurrency = float(match.group("conc"))
        return False

    def _on_available_kv(self, msg):
        match = _AVAILABLE_KV_RE.match(msg)
        if match is not None:
            self.available_kv_cache_gib = float(match.group("gib"))
        return False

    def _on_model_loading(self, msg):
        match = _MODEL_LOADING_RE.match(msg)
        if match is not None:
            self.model_load_gib = float(match.group("gib"))
            self.model_load_seconds = float(match.group("seconds"))
        return False

    def _on_loading_weights(self, msg):
        match = _V0_WEIGHTS_RE.match(msg)
        if match is not None:
            self.model_load_gib = float(match.group("gib"))
        return False

    def _on_using(self, msg):
        if self.attention_backend is None and b"backend" in msg:
            for pattern in _ATTENTION_RES:
                match = pattern.match(msg)
                if match is not None:
                    self.attention_backend = _decode(match.group("name"))
                    return False
        if self.moe_backend is None and b"MoE" in msg:
            for pattern in _MOE_RES:
                match = pattern.match(msg)
                if match is not None:
                    self.moe_backend = _decode(match.group("name"))
                    return False
        return False

    def _on_engine_config(self, msg):
        version = _ENGINE_VERSION_RE.search(msg)
        if version is None:
            return False
        self.version = _decode(version.group(1))
        spec = _SPEC_CONFIG_RE.search(msg)
        if spec is not None:
            body = spec.group("body")
            if body is None:
                self._spec_configured = False
                self._spec_method = self._spec_tokens = None
            else:
                self._spec_configured = True
                method = _SPEC_METHOD_RE.search(body)
                tokens = _SPEC_TOKENS_RE.search(body)
                self._spec_method = _decode(method.group("method")) if method else None
                self._spec_tokens = int(tokens.group("tokens")) if tokens else None
        sizes = _CAPTURE_SIZES_RE.search(msg)
        if sizes is not None:
            text = sizes.group("sizes")
            self.cudagraph_capture_sizes = [int(size) for size in text.split(b",") if size.strip()]
        largest = _MAX_CAPTURE_RE.search(msg)
        if largest is not None:
            self.max_cudagraph_capture_size = int(largest.group("size"))
        return False

    def _on_non_default_args(self, msg):
        spec = _ARGS_SPEC_RE.search(msg)
        if spec is not None and not self._spec_configured:
            method = _ARGS_SPEC_METHOD_RE.search(spec.group("body"))
            tokens = _ARGS_SPEC_TOKENS_RE.search(spec.group("body"))
            self._spec_method = _decode(method.group("method")) if method else None
            self._spec_tokens = int(tokens.group("tokens")) if tokens else None
        return False

    def _on_server_version(self, msg):
        match = _SERVER_VERSION_RE.match(msg)
        if match is not None:
            self._new_boot(_decode(match.group(1)))
        return False

    def _on_launch(self, msg):
        match = _LAUNCH_VERSION_RE.match(msg)
        if match is not None:
            self._new_boot(_decode(match.group(1)))
        return False

    def _on_logo(self, msg):
        if b"version" in msg:
            match = _LOGO_VERSION_RE.search(msg)
            if match is not None:
                self._new_boot(_decode(match.group(1)))
        return True

    def _on_engine_stats(self, msg):
        # "Engine 000: Avg prompt throughput: ...", "Avg prompt throughput: ..." (V0) or
        # "2 Engines Aggregated: Avg prompt throughput: ...": counted now for the summary (a
        # line every 10 seconds or so); the newest one is kept whole for last_throughput.
        if b"throughput" in msg:
            self._stats_msg = msg
            match = _SUMMARY_RE.search(msg)
            if match is not None:
                prompt, generation, running = match.groups()
                self._throughput_summary.add(float(prompt), float(generation), int(running))
            else:
                values = _stat_values(msg)
                if values is not None:
                    self._throughput_summary.add(
                        values["prompt_tokens_per_s"],
                        values["generation_tokens_per_s"],
                        values["running"],
                    )
            return True
        return False

    def _on_spec_metrics(self, msg):
        if msg.startswith(b"SpecDecoding metrics"):
            self._spec_msg = msg
            return True
        return False

    def _on_starting(self, msg):
        if msg.startswith(b"Starting vLLM"):
            self._set_ready()
        return False

    def _on_application(self, msg):
        if msg.startswith(b"Application startup complete"):
            self._set_ready()
        elif msg.startswith(b"Application shutdown"):
            self._set_shutdown()
        return False

    def _on_uvicorn_running(self, msg):
        if msg.startswith(b"Uvicorn running on"):
            self._set_ready()
        return False

    def _on_shutdown(self, msg):
        if not self._shutdown and msg.startswith((b"[shutdown]", b"Shutting down")):
            self._set_shutdown()
        return False

    def _on_world(self, msg):
        match = _WORLD_RE.match(msg)
        if match is not None:
            rank = int(match.group("rank"))
            if self.rank is None or rank <= self.rank:
                self.rank = rank
                self.world_size = int(match.group("world"))
                self.distributed_init_method = _decode(match.group("method"))
                self.distributed_backend = _decode(match.group("backend"))
        return False

    def _on_init_engine(self, msg):
        match = _INIT_ENGINE_RE.match(msg)
        if match is not None:
            self.init_engine_seconds = float(match.group("seconds"))
        return False

    def _on_graph_capture(self, msg):
        match = _GRAPH_CAPTURE_RE.match(msg)
        if match is not None:
            self.graph_capture_seconds = float(match.group("seconds"))
            self.graph_capture_gib = float(match.group("gib"))
        return False

    def _on_graph_profile(self, msg):
        if msg.startswith(b"Profiling CUDA graph memory"):
            sizes = [int(size) for size in _LARGEST_RE.findall(msg)]
            if sizes:
                self._largest_profiled = max(sizes)
        return False

    # --- result ------------------------------------------------------------------------

    def _throughput(self):
        if self._stats_msg is None:
            return None
        return _stat_values(self._stats_msg)

    def _speculative(self):
        if not self._spec_configured and self._spec_method is None and self._spec_msg is None:
            return None
        mean = per_position = average = None
        if self._spec_msg is not None:
            metrics = _decode(self._spec_msg)
            match = _MEAN_ACCEPTANCE_RE.search(metrics)
            mean = float(match.group(1)) if match else None
            match = _PER_POSITION_RE.search(metrics)
            if match:
                per_position = [float(rate) for rate in match.group(1).split(", ")]
            match = _AVG_DRAFT_RE.search(metrics)
            average = float(match.group(1)) if match else None
        return {
            "method": self._spec_method,
            "num_tokens": self._spec_tokens,
            "mean_acceptance_length": mean,
            "per_position_acceptance": per_position,
            "avg_draft_acceptance_rate": average,
        }

    def _last_message(self):
        if self._last is None:
            return None
        text = self._last
        if isinstance(text, bytes):
            text = _decode(text)
        suffix = _RAY_SUFFIX_RE.search(text)
        if suffix is not None:
            text = text[: suffix.start()]
        return _cut(text.strip()) or None

    def result(self) -> dict:
        """The summary so far (see RESULT_KEYS); reads a pending unfinished line first."""
        self.flush()
        max_capture = self.max_cudagraph_capture_size
        if max_capture is None and self.cudagraph_capture_sizes:
            max_capture = max(self.cudagraph_capture_sizes)
        if max_capture is None:
            max_capture = self._largest_profiled
        return {
            "version": self.version,
            "kv_cache_tokens": self.kv_cache_tokens,
            "kv_cache_device": self.kv_cache_device,
            "max_concurrency": self.max_concurrency,
            "max_concurrency_request_tokens": self.max_concurrency_request_tokens,
            "available_kv_cache_gib": self.available_kv_cache_gib,
            "model_load_gib": self.model_load_gib,
            "model_load_seconds": self.model_load_seconds,
            "attention_backend": self.attention_backend,
            "moe_backend": self.moe_backend,
            "cudagraph_capture_sizes": (
                list(self.cudagraph_capture_sizes)
                if self.cudagraph_capture_sizes is not None
                else None
            ),
            "max_cudagraph_capture_size": max_capture,
            "speculative": self._speculative(),
            "last_throughput": self._throughput(),
            "throughput_summary": self._throughput_summary.result(),
            "ready": self._ready and not self._down,
            "shutdown": self._shutdown,
            "world_size": self.world_size,
            "rank": self.rank,
            "distributed_init_method": self.distributed_init_method,
            "distributed_backend": self.distributed_backend,
            "init_engine_seconds": self.init_engine_seconds,
            "graph_capture_seconds": self.graph_capture_seconds,
            "graph_capture_gib": self.graph_capture_gib,
            "last_message": self._last_message(),
            "lines": self.lines,
            "kv_lines": self.kv_lines,
            "boots": self.boots,
            "errors": [dict(error) for error in self._errors],
            "errors_omitted": self.errors_omitted,
        }


# The start of a message -> the handler that reads it (None: skip the line). Matched on the
# message's first four bytes (the logo's block characters take three bytes each).
_DISPATCH = [
    ("GPU ", "_on_kv_size"),
    ("CPU ", "_on_kv_size"),
    ("XPU ", "_on_kv_size"),
    ("NPU ", "_on_kv_size"),
    ("TPU ", "_on_kv_size"),
    ("HPU ", "_on_kv_size"),
    ("Maxi", "_on_max_concurrency"),
    ("Avai", "_on_available_kv"),
    ("Mode", "_on_model_loading"),
    ("Load", "_on_loading_weights"),
    ("Usin", "_on_using"),
    ("Init", "_on_engine_config"),
    ("non-", "_on_non_default_args"),
    ("vLLM", "_on_server_version"),
    ("Laun", "_on_launch"),
    (" \u2584\u2584 ", "_on_logo"),
    ("Engi", "_on_engine_stats"),
    ("Avg ", "_on_engine_stats"),
    ("Spec", "_on_spec_metrics"),
    ("Star", "_on_starting"),
    ("Appl", "_on_application"),
    ("Uvic", "_on_uvicorn_running"),
    ("[shu", "_on_shutdown"),
    ("Shut", "_on_shutdown"),
    ("worl", "_on_world"),
    ("init", "_on_init_engine"),
    ("Grap", "_on_graph_capture"),
    ("Prof", "_on_graph_profile"),
    ("Rout", None),  # "Route: /v1/models, Methods: GET": not a progress message
]
# "<n> Engines Aggregated: Avg prompt throughput: ..." (data parallel).
_DISPATCH.extend((("%d Engines" % count)[:4], "_on_engine_stats") for count in range(2, 100))


def parse_lines(lines: Iterable[str]) -> dict:
    """The summary of a log given as an iterable of lines (see VllmLogParser.result)."""
    parser = VllmLogParser()
    parser.feed_lines(lines)
    return parser.result()


def parse_text(text: str) -> dict:
    """The summary of a log given as one string (see VllmLogParser.result)."""
    parser = VllmLogParser()
    parser.feed_text(text)
    return parser.result()
