# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one of the collection's action plugins for real, with a local connection."""

from __future__ import annotations

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.playbook.task import Task
from ansible.plugins.connection.local import Connection
from ansible.template import Templar


def load_shell_plugins():
    """Load Ansible's shell plugins in this thread. Ansible runs hosts in forked workers, so its
    plugin loader is not thread-safe: two threads building their first connection at once can see
    a half-loaded doc fragment. Tests that run an action on several hosts in threads call this
    before starting them."""
    Connection(PlayContext(), None)


def run_action(
    action_class, name, args, check_mode=False, basedir=None, task_vars=None, task_uuid=None
):
    """The result of ``action_class(...).run()`` for a task ``name`` with ``args``;
    ``task_uuid`` makes several runs one task on several hosts (as Ansible runs it)."""
    task = Task()
    if task_uuid is not None:
        task._uuid = task_uuid
    task.action = name
    task.args = args
    task.check_mode = check_mode
    play_context = PlayContext()
    loader = DataLoader()
    if basedir is not None:
        loader.set_basedir(str(basedir))
    action = action_class(
        task=task,
        connection=Connection(play_context, None),
        play_context=play_context,
        loader=loader,
        templar=Templar(loader=loader),
        shared_loader_obj=None,
    )
    return action.run(task_vars=task_vars or {})
