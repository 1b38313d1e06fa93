# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-ins for the containers Ansible hands to filters.

ansible-core 2.19 passes templated dicts and lists as lazy containers; a ``copy.deepcopy``
of one copies its templar, and with it every variable of the play (in site.yml that cost
about half a second a task). A filter must turn its input into plain data before copying.
"""

from __future__ import annotations


class NoDeepCopy(dict):
    """A mapping that fails the test when deep-copied, as a lazy container must never be."""

    def __deepcopy__(self, memo):
        raise AssertionError("the filter deep-copied Ansible's container instead of plain data")


def uncopyable(value):
    """``value`` with every mapping inside it, itself included, made a NoDeepCopy."""
    if isinstance(value, dict):
        return NoDeepCopy({key: uncopyable(item) for key, item in value.items()})
    if isinstance(value, list):
        return [uncopyable(item) for item in value]
    return value
