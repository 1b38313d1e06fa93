# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Documentation only: gb10.serving.bench_report is an action plugin (plugins/action/bench_report.py)
# that runs on the controller; this file gives it its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
module: bench_report
short_description: Write the benchmark report (JSON, Markdown, PNG chart) on the controller
version_added: 0.1.0
description:
  - Builds the benchmark report from the figures of the bench stage and writes C(bench.json),
    C(bench.md) and C(bench.png) into O(dest) on the controller; with O(sweep=true), writes
    C(sweep.json), C(sweep.md) and C(sweep.png) from the variants of a sweep instead.
  - C(bench.md) holds the field report's table (single-stream, conc-4, conc-8, conc-16, deep
    single, tool-calls) with a row for this run and the field report's hybrid-v3 row beside it,
    then the warm-up, the speculative-decoding acceptance, the figures per concurrency (TTFT,
    TPOT), the deep request, the tool-call cases and the deployment fingerprint. When the
    figures come from the lab it says so, above everything else.
  - C(bench.png) plots aggregate output tokens/s against concurrency, this run's line and the
    field report's points. It needs matplotlib on the controller; without it the JSON and
    Markdown are still written and the task warns, naming the package to install.
  - A file is only rewritten when its content changes (the chart carries no timestamp
    metadata), so the same report written twice reports no change the second time.
  - Runs on the controller only; nothing is sent to the managed host.
options:
  dest:
    description:
      - The directory the files go into, for example C(reports/20261202T170000Z). Created
        (mode C(0755), with any missing parents) when missing. A relative path is relative to
        the playbook's directory.
    type: path
    required: true
  report:
    description:
      - Without O(sweep), either the finished report (a mapping with C(schema_version)), or the
        parts it is built from, as a mapping with these keys
      - C(runs) (required), the result of P(gb10.serving.parse_bench_serve#filter) for each
        concurrency, each with a C(concurrency) key added.
      - C(deployment) (required), the fingerprint, for example C(recipe_hash), C(image),
        C(model), C(model_revision), C(node_count).
      - C(deep), the deep single request, either its parsed bench result or a mapping with
        C(prompt_tokens), C(output_tokens), C(ttft_ms), C(decode_tokens_per_s).
      - C(tool_calls), the result of P(gb10.serving.score_tool_calls#filter).
      - C(warmup), a mapping with C(requests) and C(seconds).
      - C(spec_decode), the C(speculative) mapping of the engine-log facts.
      - C(throughput), the engine's own throughput during the run; the log parser's
        C(throughput_summary) (read from the log since the run began), or parsed throughput
        line(s).
      - C(reference), the row to compare with; the field report's hybrid-v3 row when left out,
        none when null.
      - C(lab), the figures come from the lab's tiny CPU model (default V(false)).
      - C(generated_at), the timestamp to print; the current UTC time when left out.
      - With O(sweep=true), the list of variants, each a mapping with C(name), C(overrides),
        C(boot) (C(kv_cache_tokens), C(max_concurrency) from the boot log) and C(report) (a
        finished bench report), or an already computed comparison.
    type: raw
    required: true
  sweep:
    description:
      - Write the sweep comparison (C(sweep.*)) instead of a bench report; it names the best
        variant of every column (higher is better everywhere).
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.conn
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
  async:
    support: none
  become:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details:
      - Writes nothing and creates no directory; reports a change when a file would be
        written.
  connection:
    support: none
  delegation:
    support: none
    details: Runs on the controller; delegation has no effect.
  diff_mode:
    support: none
  platform:
    platforms: all
requirements:
  - matplotlib on the controller, for the chart only.
notes:
  - Run it once per play, for example with C(run_once=true); every host would otherwise
    write the same files.
seealso:
  - plugin: gb10.serving.parse_bench_serve
    plugin_type: filter
  - plugin: gb10.serving.score_tool_calls
    plugin_type: filter
  - plugin: gb10.serving.bench_input_problems
    plugin_type: filter
author:
  - gb10.serving maintainers (@gb10)
"""

EXAMPLES = r"""
- name: Write the benchmark report
  gb10.serving.bench_report:
    dest: "{{ playbook_dir }}/../reports/{{ __bench_stamp }}"
    report:
      runs: "{{ __bench_runs }}"
      deep: "{{ __bench_deep }}"
      tool_calls: "{{ __bench_tool_calls }}"
      warmup:
        requests: "{{ bench_warmup_requests }}"
        seconds: "{{ __bench_warmup_seconds }}"
      spec_decode: "{{ __bench_log.boot.speculative }}"
      throughput: "{{ __bench_log.boot.throughput_summary }}"
      deployment: "{{ __bench_fingerprint }}"
      lab: "{{ gb10_platform == 'lab' }}"
  run_once: true
  register: __bench_report

- name: Write the sweep comparison
  gb10.serving.bench_report:
    dest: "{{ playbook_dir }}/../reports/{{ __sweep_stamp }}"
    report: "{{ __sweep_variants_measured }}"
    sweep: true
  run_once: true
"""

RETURN = r"""
dest:
  description: The directory the files are in (absolute).
  returned: always
  type: str
  sample: /home/ops/gb10/reports/20261202T170000Z
files:
  description: The report's files, whether rewritten or already up to date.
  returned: always
  type: list
  elements: str
  sample:
    - /home/ops/gb10/reports/20261202T170000Z/bench.json
    - /home/ops/gb10/reports/20261202T170000Z/bench.md
    - /home/ops/gb10/reports/20261202T170000Z/bench.png
summary:
  description:
    - This run's row of the table, C(single_stream), C(conc_4), C(conc_8), C(conc_16) (output
      tokens/s, null when not measured), C(deep_single) (decode tokens/s), C(tool_calls) (V(n/m)).
  returned: without sweep
  type: dict
best:
  description: Per column of the sweep, the names of the variants with the best value.
  returned: with sweep
  type: dict
report:
  description: What was written as C(bench.json) (or C(sweep.json)), for the play to go on with.
  returned: always
  type: dict
"""
