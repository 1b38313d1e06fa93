# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading the real captures under fixtures/, and deriving a case from one."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def load_raw(kind, name):
    """A capture from fixtures/<kind>/ exactly as stored, carriage returns included.

    For captures whose source is told beside them instead of in a first line (the lab's own
    logs, files that group several sources under their own '#' lines).
    """
    return (FIXTURES / kind / name).read_bytes().decode("utf-8")


def load_capture(kind, name):
    """A capture from fixtures/<kind>/, without its first ('# SOURCE: ...') line.

    Read byte for byte: carriage returns (progress bars, CRLF) are kept.
    """
    source, _newline, output = load_raw(kind, name).partition("\n")
    assert source.startswith("# SOURCE: "), name
    return output


def edit(text, old, new):
    """Replace the one occurrence of ``old`` (a derived case must change exactly one thing)."""
    assert text.count(old) == 1, old
    return text.replace(old, new)
