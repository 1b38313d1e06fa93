# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading the real captures under fixtures/, and deriving a case from one."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def load_capture(kind, name):
    """A capture from fixtures/<kind>/, without its first ('# SOURCE: ...') line."""
    text = (FIXTURES / kind / name).read_text(encoding="utf-8")
    source, _newline, output = text.partition("\n")
    assert source.startswith("# SOURCE: "), name
    return output


def edit(text, old, new):
    """Replace the one occurrence of ``old`` (a derived case must change exactly one thing)."""
    assert text.count(old) == 1, old
    return text.replace(old, new)
