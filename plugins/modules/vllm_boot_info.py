#!/usr/bin/python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_boot_info
short_description: Summarise a vLLM engine container's log - boot facts, readiness, errors
version_added: 0.1.0
description:
  - Reads the log of a vLLM engine container straight from the Docker engine of the node,
    streaming it (any size, bounded memory), and summarises it with the same parser as the
    P(gb10.serving.parse_vllm_log#filter) filter - version, KV cache pool and concurrency,
    weights, attention and MoE backends, CUDA graph capture, speculative decoding, the
    latest throughput and a summary of every throughput line (peaks, mean while busy), the
    rank line, readiness, and every error classified with a hint on what to change.
  - Reports the container's state too (running, exit code, OOM kill, restarts), so one task
    tells whether an engine is up, still booting, or why it stopped.
  - A container that does not exist is not a failure; RV(exists) is V(false).
  - Fails only on bad options, when the Docker engine cannot be reached or answers with an
    error, or when O(dest) cannot be written.
  - Talks to the Docker Engine API over its local unix socket with the Python standard
    library; needs no Docker SDK on the node. Run it on the node that runs the container,
    as a user that may use the socket.
author:
  - gb10.serving maintainers (@gb10)
extends_documentation_fragment:
  - gb10.serving.attributes
  - gb10.serving.attributes.info_module
options:
  name:
    description: The container's name (or ID).
    type: str
    required: true
  docker_host:
    description:
      - The Docker engine's API socket, as C(unix://<path>). Other schemes (C(tcp://),
        C(ssh://)) are not supported and fail.
    type: str
    default: unix:///var/run/docker.sock
  since_start:
    description:
      - Read only the log of the container's current start (Docker's C(since) set to the
        container's C(State.StartedAt), rounded down to the second), not the logs of earlier
        starts.
      - With V(false), the whole log Docker kept; the boot values then describe the newest
        boot in it, and RV(boot.boots) counts them.
      - Not used when O(since) is given.
    type: bool
    default: true
  since:
    description:
      - Read the log from this Unix time, in seconds (Docker's C(since)), for example the
        time a benchmark began, so that RV(boot.throughput_summary) covers the benchmark
        only; rounded down to the second.
      - Overrides O(since_start) when given.
      - Lines before it are not read, so a boot that started earlier is not seen - its
        values (RV(boot.version), RV(boot.kv_cache_tokens), RV(boot.ready), ...) are then
        V(null) or V(false); read the boot with a second task without O(since).
      - Must be V(0) or more.
    type: float
  dest:
    description:
      - Also write the log that was read, as it came (colour codes and carriage returns
        kept, stdout and stderr whole lines at a time in arrival order; secrets masked, see
        O(redact)), to this path on the node, mode C(0600).
        Missing parent directories are created with mode C(0700).
      - A diagnostic copy, rewritten on every run (through a temporary file in the same
        directory); it does not count as a change, so C(changed) stays V(false).
      - Not written in check mode.
    type: path
  timeout:
    description: Seconds to wait for the Docker engine to connect or to send more of the log.
    type: int
    default: 60
  redact:
    description:
      - Secrets (the API keys) masked as C(<redacted>) wherever they occur in the log, before
        it is parsed or copied to O(dest). Without them the values of the secret fields vLLM
        logs (C(api_key) in its arguments, C(--api-key), C(VLLM_API_KEY), C(HF_TOKEN)) are
        still masked; vLLM releases before argument redaction log the key with its arguments.
    type: list
    elements: str
    default: []
notes:
  - The values in RV(boot) are the newest ones of the log (the latest throughput line, the
    latest boot); RV(boot.throughput_summary) covers the throughput lines of the latest boot;
    errors are the first 20 distinct ones, identical lines counted.
  - Docker's C(since) has a resolution of one second; lines an earlier start of the same
    container logged within that second are read too.
seealso:
  - plugin: gb10.serving.parse_vllm_log
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Read the engine's boot log
  gb10.serving.vllm_boot_info:
    name: gb10-vllm
  register: __vllm_boot_info
  become: true

- name: Stop with the engine's first error and what to do about it
  ansible.builtin.fail:
    msg: >-
      The engine on {{ inventory_hostname }} failed ({{ __vllm_first_error.kind }}):
      {{ __vllm_first_error.line }} -- {{ __vllm_first_error.hint }}
  vars:
    __vllm_first_error: "{{ __vllm_boot_info.boot.errors | first }}"
  when:
    - __vllm_boot_info.exists
    - not __vllm_boot_info.boot.ready
    - __vllm_boot_info.boot.errors | length > 0

- name: Show the KV cache pool this max_model_len gives
  ansible.builtin.debug:
    msg: >-
      {{ __vllm_boot_info.boot.kv_cache_tokens }} tokens,
      {{ __vllm_boot_info.boot.max_concurrency }}x requests of
      {{ __vllm_boot_info.boot.max_concurrency_request_tokens }} tokens

- name: Keep a copy of the whole log (every start) for the report
  gb10.serving.vllm_boot_info:
    name: gb10-vllm
    since_start: false
    dest: /var/lib/gb10/reports/engine.log
  register: __vllm_boot_history

- name: Note when the benchmark begins
  ansible.builtin.set_fact:
    # The controller's clock (Unix time); Docker compares it with the node's.
    __vllm_bench_began: "{{ now().timestamp() }}"

# ... the benchmark runs here ...

- name: Read the engine's throughput lines logged since the benchmark began
  gb10.serving.vllm_boot_info:
    name: gb10-vllm
    since: "{{ __vllm_bench_began }}"
  register: __vllm_bench_log

- name: Show the engine's generation throughput during the benchmark
  ansible.builtin.debug:
    msg: >-
      peak {{ __vllm_bench_summary.peak_generation_tokens_per_s }} tokens/s, mean
      {{ __vllm_bench_summary.mean_generation_tokens_per_s }} tokens/s over
      {{ __vllm_bench_summary.busy_lines }} busy stats lines
  vars:
    __vllm_bench_summary: "{{ __vllm_bench_log.boot.throughput_summary }}"
  when: __vllm_bench_summary is not none
"""

RETURN = r"""
exists:
  description: Whether a container named O(name) exists.
  returned: always
  type: bool
  sample: true
container:
  description: The container's state, V(null) when it does not exist.
  returned: always
  type: dict
  contains:
    id:
      description: The container ID.
      type: str
      sample: 4a08136414ffa8d5789ad3eaf55910bc891833b88b80c92b3444a1bcff424780
    name:
      description: The container's name.
      type: str
      sample: gb10-vllm
    status:
      description: Docker's status (V(created), V(running), V(restarting), V(exited), ...).
      type: str
      sample: running
    running:
      description: Whether the container is running.
      type: bool
      sample: true
    restarting:
      description: Whether Docker is restarting it (restart policy after an exit).
      type: bool
      sample: false
    exit_code:
      description: The exit code of its last run (V(0) while it runs).
      type: int
      sample: 0
    oom_killed:
      description: Whether the kernel killed it for memory.
      type: bool
      sample: false
    restart_count:
      description: How many times Docker restarted it.
      type: int
      sample: 0
    started_at:
      description: When the current (or last) run started, as Docker writes it.
      type: str
      sample: "2026-12-02T12:32:17.402031975Z"
    finished_at:
      description: When the last run ended (C(0001-01-01T00:00:00Z) while it never ended).
      type: str
      sample: "0001-01-01T00:00:00Z"
    image:
      description: The image it runs.
      type: str
      sample: gb10-lab-engine:lab
    labels:
      description: Its labels.
      type: dict
      sample: {"gb10.serving/role": "engine"}
    tty:
      description: Whether it has a TTY (its log is then one raw stream).
      type: bool
      sample: false
since:
  description:
    - The Unix time (seconds) the log was read from - O(since) rounded down to the second
      when given, else the container's start; V(null) when the log was read whole
      (O(since_start=false) without O(since), or a container that never started), or when
      the container does not exist.
  returned: always
  type: int
  sample: 1796214737
boot:
  description:
    - The summary of the log; the keys of the P(gb10.serving.parse_vllm_log#filter) filter,
      each always present, V(null) when the log did not show it.
    - V(null) when the container does not exist.
  returned: always
  type: dict
  contains:
    version:
      description: The vLLM version.
      type: str
      sample: 0.32.0
    kv_cache_tokens:
      description: Tokens the KV cache holds.
      type: int
      sample: 2050000
    kv_cache_device:
      description: Where the KV cache lives, as logged (V(GPU), V(CPU), V(GPU + host)).
      type: str
      sample: GPU
    max_concurrency:
      description:
        - Requests of RV(boot.max_concurrency_request_tokens) tokens the KV cache holds at once.
      type: float
      sample: 5.21
    max_concurrency_request_tokens:
      description: The request size (max_model_len) RV(boot.max_concurrency) counts.
      type: int
      sample: 393216
    available_kv_cache_gib:
      description: Memory given to the KV cache, GiB.
      type: float
      sample: 16.23
    model_load_gib:
      description: Memory the weights took, GiB.
      type: float
      sample: 142.31
    model_load_seconds:
      description: Seconds loading the weights took.
      type: float
      sample: 912.235622
    attention_backend:
      description: The attention backend the engine chose (the target model's).
      type: str
      sample: FLASHINFER_MLA_SPARSE_DSV4
    moe_backend:
      description: The MoE backend the engine chose.
      type: str
      sample: b12x
    cudagraph_capture_sizes:
      description: The batch sizes captured as CUDA graphs, from the engine's configuration dump.
      type: list
      elements: int
      sample: [1, 2, 4, 8, 16, 32, 64, 128]
    max_cudagraph_capture_size:
      description: The largest batch captured as a CUDA graph (larger ones run eager).
      type: int
      sample: 128
    speculative:
      description:
        - Speculative decoding (C(method), C(num_tokens), C(mean_acceptance_length),
          C(per_position_acceptance), C(avg_draft_acceptance_rate)); V(null) without it.
      type: dict
      sample:
        method: dspark
        num_tokens: 3
        mean_acceptance_length: 2.58
        per_position_acceptance: [0.859, 0.719, 0.5]
        avg_draft_acceptance_rate: 69.3
    last_throughput:
      description:
        - The newest throughput line (C(prompt_tokens_per_s), C(generation_tokens_per_s),
          C(running), C(waiting)).
      type: dict
      sample:
        prompt_tokens_per_s: 4917.3
        generation_tokens_per_s: 929.6
        running: 9
        waiting: 56
    throughput_summary:
      description:
        - Every throughput line of the newest boot (of the part of the log read, see
          O(since)), V(null) before one; a line is busy when either throughput is above 0
          or a request runs.
        - The newest line is often the idle one the engine logs when a run ends; the peaks
          and the mean tell what the run reached.
      type: dict
      contains:
        lines:
          description: Throughput lines read (one per engine and 10 seconds or so).
          type: int
          sample: 7
        busy_lines:
          description: Those of them that are busy.
          type: int
          sample: 6
        peak_generation_tokens_per_s:
          description: The highest generation (decode) throughput, tokens per second.
          type: float
          sample: 1021.1
        peak_prompt_tokens_per_s:
          description: The highest prompt (prefill) throughput, tokens per second.
          type: float
          sample: 4917.3
        mean_generation_tokens_per_s:
          description:
            - The mean generation throughput of the busy lines, rounded to 0.1; V(null)
              when no line is busy.
          type: float
          sample: 294.2
        peak_running:
          description: The most requests running on one line.
          type: int
          sample: 9
    ready:
      description: The HTTP server started and no shutdown or fatal error followed.
      type: bool
      sample: true
    shutdown:
      description: The server logged its shutdown.
      type: bool
      sample: false
    world_size:
      description: torch.distributed's world size.
      type: int
      sample: 2
    rank:
      description: This engine's rank (the lowest, when the log holds several).
      type: int
      sample: 0
    distributed_init_method:
      description: How the ranks meet, as logged.
      type: str
      sample: tcp://192.168.100.10:29511
    distributed_backend:
      description: torch.distributed's backend (V(gloo), V(nccl)).
      type: str
      sample: gloo
    init_engine_seconds:
      description: Seconds the engine took to start (profile, KV cache, warm-up).
      type: float
      sample: 46.66
    graph_capture_seconds:
      description: Seconds CUDA graph capture took.
      type: float
      sample: 7.0
    graph_capture_gib:
      description: Memory the CUDA graphs took, GiB.
      type: float
      sample: 0.95
    last_message:
      description: The newest progress message (prefixes, level, date and file removed).
      type: str
      sample: Starting vLLM server on http://0.0.0.0:8000
    lines:
      description: Lines read.
      type: int
      sample: 207
    kv_lines:
      description: C(KV cache size) lines read.
      type: int
      sample: 1
    boots:
      description: Boots the log shows.
      type: int
      sample: 1
    errors:
      description:
        - The first 20 distinct errors, in the order logged, each with C(kind) (V(oom),
          V(nccl), V(permission), V(engine_dead), V(timeout), V(other)), C(line), C(hint),
          C(count) and C(frame) (the innermost traceback frame before it, or V(null)).
      type: list
      elements: dict
      sample:
        - kind: permission
          line: "PermissionError: [Errno 13] Permission denied: '/cache/jit/triton/x'"
          hint: "A JIT compiler cache is not writable by the engine: ..."
          count: 2
          frame: null
    errors_omitted:
      description: Error lines not kept because RV(boot.errors) was full.
      type: int
      sample: 0
dest:
  description:
    - The copy of the log that was written; V(null) when none was (no O(dest), check mode, or
      no container).
  returned: always
  type: str
  sample: /var/lib/gb10/reports/engine.log
"""

# Imports follow the documentation blocks, as validate-modules requires.
import math  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.gb10.serving.plugins.module_utils._docker_logs import (  # noqa: E402
    DockerClient,
    DockerError,
    container_summary,
    log_blocks,
    started_at_seconds,
)
from ansible_collections.gb10.serving.plugins.module_utils._redact import Redactor  # noqa: E402
from ansible_collections.gb10.serving.plugins.module_utils._vllm_log import (  # noqa: E402
    VllmLogParser,
)


class DestError(Exception):
    """O(dest) cannot be written."""


def _make_parents(directory):
    """Create the missing directories of a path, each mode 0700 (existing ones untouched)."""
    missing = []
    while directory and not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        os.chmod(path, 0o700)  # whatever the umask


def _open_dest(dest):
    """(file object, temporary path) in dest's directory, mode 0600; parents made 0700."""
    directory = os.path.dirname(dest) or "."
    if os.path.isdir(dest):
        raise DestError("dest %s is a directory; give a file path" % dest)
    try:
        _make_parents(directory)
        handle, temporary = tempfile.mkstemp(
            prefix=".%s." % os.path.basename(dest), suffix=".tmp", dir=directory
        )
    except OSError as exc:
        raise DestError("cannot write the log copy %s: %s" % (dest, exc)) from exc
    return os.fdopen(handle, "wb"), temporary


def since_seconds(value):
    """The since option as whole Unix seconds (rounded down); ValueError when not one."""
    if not math.isfinite(value) or value < 0:
        raise ValueError(
            "since must be a Unix time in seconds, 0 or more (for example the time a benchmark"
            " began); got %s" % value
        )
    return int(math.floor(value))


def read_boot(client, name, since_start=True, dest=None, since=None, redact=()):
    """The module's result for container ``name`` (raises DockerError, DestError).

    ``since`` (whole Unix seconds) overrides ``since_start``.
    """
    info = client.inspect(name)
    if info is None:
        return dict(changed=False, exists=False, container=None, since=None, boot=None, dest=None)
    container = container_summary(info)
    if since is None and since_start:
        since = started_at_seconds(container["started_at"])
    parser = VllmLogParser()
    out = temporary = None
    if dest is not None:
        out, temporary = _open_dest(dest)
    try:
        sink = out.write if out is not None else None
        masked = Redactor(redact).data
        for block in log_blocks(client.logs(name, since), container["tty"], sink, masked):
            parser.feed_bytes(block)
        if out is not None:
            out.close()
            os.chmod(temporary, 0o600)
            os.replace(temporary, dest)
            temporary = None
    except OSError as exc:
        raise DestError("cannot write the log copy %s: %s" % (dest, exc)) from exc
    finally:
        if out is not None and not out.closed:
            out.close()
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
    return dict(
        changed=False,
        exists=True,
        container=container,
        since=since,
        boot=parser.result(),
        dest=dest,
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            docker_host=dict(type="str", default="unix:///var/run/docker.sock"),
            since_start=dict(type="bool", default=True),
            since=dict(type="float"),
            dest=dict(type="path"),
            timeout=dict(type="int", default=60),
            redact=dict(type="list", elements="str", default=[], no_log=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["timeout"] <= 0:
        module.fail_json(
            msg="timeout must be a positive number of seconds, got %d" % params["timeout"]
        )
    since = None
    if params["since"] is not None:
        try:
            since = since_seconds(params["since"])
        except ValueError as exc:
            module.fail_json(msg=str(exc))
    dest = None if module.check_mode else params["dest"]
    try:
        client = DockerClient(params["docker_host"], timeout=params["timeout"])
        result = read_boot(
            client, params["name"], params["since_start"], dest, since, params["redact"]
        )
    except (DockerError, DestError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
