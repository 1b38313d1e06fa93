# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Attribute documentation shared by the gb10.serving modules (private doc fragment)."""

from __future__ import annotations


class ModuleDocFragment:
    # What each attribute means; every module extends this one.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Runs in check mode, and then reports what it would change without changing it.
  diff_mode:
    description: Reports what it changed (or, in check mode, would change) when run in diff mode.
"""

    # For *_info modules that only read the target; use together with DOCUMENTATION.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - The module only reads the target, so check mode runs it unchanged.
  diff_mode:
    support: N/A
    details:
      - The module only reads the target; there is nothing to diff.
"""
