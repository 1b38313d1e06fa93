# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Callback gb10.serving.preload, in a fresh interpreter as ansible-playbook starts one.

What it is for: a process forked after the callback was created (as Ansible forks a worker
for each task) finds every filter and action plugin of the collection already imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[4] / "plugins"
PREFIX = "ansible_collections.gb10.serving.plugins"

# Runs in a fresh interpreter: which plugin modules are imported before the callback is
# created, after, and in a child forked after it (the worker's view).
PROBE = f"""
import json, os, sys
def ours():
    return sorted(name for name in sys.modules
                  if name.startswith("{PREFIX}.filter.") or name.startswith("{PREFIX}.action."))
before = ours()
from {PREFIX}.callback.preload import CallbackModule
callback = CallbackModule()
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write, json.dumps(ours()).encode())
    os._exit(0)
os.waitpid(pid, 0)
child = json.loads(os.read(read, 1 << 20))
print(json.dumps({{"before": before, "preloaded": callback.preloaded, "child": child}}))
"""


def plugin_modules(kind):
    return sorted(
        f"{PREFIX}.{kind}.{path.stem}"
        for path in (PLUGINS / kind).glob("*.py")
        if path.stem != "__init__"
    )


def test_a_worker_forked_after_it_has_every_filter_and_action_plugin_imported():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, env=env
    ).stdout
    seen = json.loads(out)
    expected = plugin_modules("filter") + plugin_modules("action")
    assert len(plugin_modules("filter")) > 10
    assert plugin_modules("action")
    assert seen["before"] == []
    assert sorted(seen["preloaded"]) == sorted(expected)
    assert set(expected) <= set(seen["child"])
