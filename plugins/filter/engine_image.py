# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters gb10.serving.engine_image_pin and engine_image_problems: one image everywhere."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._engine_image import (
    pin,
    pin_problems,
)
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain


def engine_image_pin(reference, image=None):
    """The recipe's image reference and the node's image (docker_image_info) -> its pin."""
    if not isinstance(reference, str) or not reference:
        raise AnsibleFilterError("engine_image_pin expects the image reference, a string")
    if image is not None and not isinstance(image, Mapping):
        raise AnsibleFilterError(
            f"engine_image_pin expects the node's image as a mapping, got {type(image).__name__}"
        )
    try:
        return pin(reference, plain(image) if image is not None else None)
    except ValueError as exc:
        raise AnsibleFilterError(f"engine_image_pin: {exc}") from exc


def engine_image_problems(pins):
    """{node: engine_image_pin result} -> the message naming the nodes that differ, or []."""
    if not isinstance(pins, Mapping):
        raise AnsibleFilterError(
            f"engine_image_problems expects a mapping of node to pin, got {type(pins).__name__}"
        )
    return pin_problems(plain(pins))


class FilterModule:
    """gb10.serving engine image filters."""

    def filters(self):
        return {
            "engine_image_pin": engine_image_pin,
            "engine_image_problems": engine_image_problems,
        }
