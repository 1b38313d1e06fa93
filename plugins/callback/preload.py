# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Callback gb10.serving.preload: import this collection's plugins once, before any task."""

from __future__ import annotations

DOCUMENTATION = r"""
name: preload
type: aggregate
short_description: Import this collection's filter and action plugins once, before any task
description:
  - Ansible runs each task of each host in a forked worker process. A worker that templates
    one of this collection's filters (or runs one of its action plugins) imports it, and
    everything it imports, itself, unless the process it was forked from already had it;
    the next task's worker does it again. With this callback enabled, the controller's main
    process imports them once when the run starts, and every worker inherits them.
  - It changes nothing else. It handles no event and prints nothing.
  - The checkout's C(ansible.cfg) and the Molecule scenario enable it. C(make bench) measures
    it (C(benchmarks/task_overhead.py)); on the lab, C(site.yml --check --tags vllm), about
    200 tasks on two nodes, took 32.1 s without it and 24.3 s with it.
requirements:
  - Enable it in C(callbacks_enabled) (C(ANSIBLE_CALLBACKS_ENABLED)).
"""

import importlib  # noqa: E402
import pkgutil  # noqa: E402

from ansible.plugins.callback import CallbackBase  # noqa: E402

# The packages whose modules are imported; each module's own imports come with it.
PRELOADED_PACKAGES = (
    "ansible_collections.gb10.serving.plugins.filter",
    "ansible_collections.gb10.serving.plugins.action",
)


def preload(packages=PRELOADED_PACKAGES):
    """Import every module of ``packages``; the names imported, in order."""
    names = []
    for package_name in packages:
        package = importlib.import_module(package_name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            name = f"{package_name}.{info.name}"
            importlib.import_module(name)
            names.append(name)
    return names


class CallbackModule(CallbackBase):
    """Preload on creation (the main process creates its callbacks before the first play)."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gb10.serving.preload"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.preloaded = preload()
