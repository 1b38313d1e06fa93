# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Team access filters: api_user_problems, cidr_problems, served_model_name."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.gb10.serving.plugins.module_utils._api_access import (
    api_user_problems,
    cidr_problems,
    served_model_name,
)
from ansible_collections.gb10.serving.plugins.module_utils._plain import plain


def api_user_problems_filter(users, service_key=None):
    """Every problem with vllm_api_users (no message holds a key); empty when none."""
    return api_user_problems(plain(users), plain(service_key))


def cidr_problems_filter(cidrs, variable="vllm_allowed_cidrs"):
    """Every problem with a list of networks in CIDR notation; empty when none."""
    return cidr_problems(plain(cidrs), str(variable))


def served_model_name_filter(argv, model):
    """The model name the engine answers to, from its command's arguments."""
    if not isinstance(model, str):
        raise AnsibleFilterError(
            f"served_model_name: model must be the recipe's model (a string), got "
            f"{type(model).__name__}"
        )
    return served_model_name(plain(argv), str(model))


class FilterModule:
    """gb10.serving team access filters."""

    def filters(self):
        return {
            "api_user_problems": api_user_problems_filter,
            "cidr_problems": cidr_problems_filter,
            "served_model_name": served_model_name_filter,
        }
