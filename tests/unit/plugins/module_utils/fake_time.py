# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A clock for the wait loop's tests: time moves only when the loop sleeps (or a look is
told to take time), so a test of a budget counts rounds exactly on any machine, however
busy. A test of rounds against the wall clock fails on a loaded CI runner."""

from __future__ import annotations

import functools

from ansible_collections.gb10.serving.plugins.module_utils import _waiting


class FakeTime:
    """A clock that only moves when the loop sleeps (or a look takes time)."""

    def __init__(self, look_takes=0.0):
        self.now = 100.0
        self.look_takes = look_takes
        self.sleeps = []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def follow(self):
        """``_waiting.follow`` on this clock, for a module that imported it by name."""
        return functools.partial(_waiting.follow, clock=self.clock, sleep=self.sleep)
