# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Documentation only: gb10.serving.warn is an action plugin (plugins/action/warn.py) that
# runs on the controller; this file gives it its documentation, as ansible.builtin.assert does.

from __future__ import annotations

DOCUMENTATION = r"""
module: warn
short_description: Show messages as Ansible warnings without failing
version_added: 0.1.0
description:
  - Shows each message of O(msg) as an Ansible warning, a C([WARNING]) line in the output
    (and an entry of the task's C(warnings)), and carries on. Meant for preflight findings
    that should be loud but must not stop a run, such as the output of
    P(gb10.serving.recipe_warnings#filter).
  - An empty list, and blank messages, show nothing, so a list of findings can be passed as
    it is.
  - Never changes anything and never fails, except on a O(msg) that is not a string or a list
    of strings.
  - ansible-core shows a given warning text once per run, however many hosts or tasks raise
    it; every task result still holds its own warnings.
options:
  msg:
    description:
      - The warning, or a list of warnings (one C([WARNING]) each).
    type: raw
    required: true
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
      - Shows the warnings in check mode too; there is nothing to change.
  connection:
    support: none
  delegation:
    support: none
    details: Runs on the controller; delegation has no effect.
  diff_mode:
    support: none
  platform:
    platforms: all
seealso:
  - module: ansible.builtin.debug
  - module: ansible.builtin.assert
  - plugin: gb10.serving.recipe_warnings
    plugin_type: filter
author:
  - gb10.serving maintainers (@gb10)
"""

EXAMPLES = r"""
- name: Warn about recipe settings that cost throughput
  gb10.serving.warn:
    msg: "{{ __vllm_recipe | gb10.serving.recipe_warnings }}"

- name: Warn once about the benchmark warm-up
  gb10.serving.warn:
    msg: >-
      The first two minutes after boot run about 30% slow (JIT and autotune);
      warm up before measuring.
"""

RETURN = r"""
warnings_emitted:
  description: How many warnings were shown (blank messages are not counted).
  returned: always
  type: int
  sample: 1
"""
