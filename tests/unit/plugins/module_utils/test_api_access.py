# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_api_access: the API users and their keys, the allowed networks, the served model name.

Tables of good and bad inputs; every bad case names the variable, and no message ever
holds a key (the messages reach the play's output).
"""

from __future__ import annotations

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._api_access import (
    api_user_problems,
    cidr_problems,
    served_model_name,
)

# Stand-ins for real keys; a generated key has 48 letters and digits.
ALICE_KEY = "aliceKey0123456789abcdefghijklmnopqrstuvwxyzAB"  # noqa: S105
BOB_KEY = "bob-key_0123456789.abcdefghij~klmnop+qrst/uv=="  # noqa: S105
SERVICE_KEY = "serviceKey0123456789abcdefghijklmnopqrstuvwxyz"  # noqa: S105
KEYS = (ALICE_KEY, BOB_KEY, SERVICE_KEY)

GOOD_USERS = {
    "none": [],
    "generated-keys": [{"name": "alice"}, {"name": "dev-2"}, {"name": "b_3"}],
    "given-keys": [{"name": "alice", "key": ALICE_KEY}, {"name": "bob", "key": BOB_KEY}],
    "null-key-means-generate": [{"name": "alice", "key": None}],
    "longest-name": [{"name": "a" + "b" * 31}],
    "team-of-ten": [{"name": f"dev{index}"} for index in range(10)],
}


@pytest.mark.parametrize("case", sorted(GOOD_USERS))
def test_good_users_have_no_problem(case):
    assert api_user_problems(GOOD_USERS[case], SERVICE_KEY) == []


BAD_USERS = {
    "not-a-list": ({"name": "alice"}, ["vllm_api_users is a mapping, not a list"]),
    "entry-not-a-mapping": (["alice"], ["vllm_api_users[0] is a string, not a mapping"]),
    "unknown-field": (
        [{"name": "alice", "email": "a@example.org"}],
        ["vllm_api_users[0] has unknown field(s) email"],
    ),
    "no-name": ([{"key": ALICE_KEY}], ["vllm_api_users[0].name is null", "lower-case letter"]),
    "upper-case-name": ([{"name": "Alice"}], ["vllm_api_users[0].name is 'Alice'"]),
    "name-with-a-dot": ([{"name": "a.b"}], ["vllm_api_users[0].name is 'a.b'"]),
    "name-starts-with-a-digit": ([{"name": "2fa"}], ["vllm_api_users[0].name is '2fa'"]),
    "name-too-long": ([{"name": "a" * 33}], ["vllm_api_users[0].name is", "up to 31"]),
    "duplicate-name": (
        [{"name": "alice"}, {"name": "bob"}, {"name": "alice"}],
        ["vllm_api_users names alice more than once"],
    ),
    "short-key": (
        [{"name": "bob", "key": "short-key"}],
        ["vllm_api_users[0] (bob).key has 9 characters", "at least 32"],
    ),
    "empty-key": (
        [{"name": "bob", "key": ""}],
        ["vllm_api_users[0] (bob).key has 0 characters", "leave key out"],
    ),
    "key-not-a-string": (
        [{"name": "bob", "key": 12345678901234567890123456789012345}],
        ["vllm_api_users[0] (bob).key is a number, not a string"],
    ),
    "key-with-a-space": (
        [{"name": "bob", "key": "two words " + ALICE_KEY}],
        ["vllm_api_users[0] (bob).key holds a character a Bearer token cannot carry"],
    ),
    "key-starting-with-a-dash": (
        [{"name": "bob", "key": "-" + ALICE_KEY}],
        ["(bob).key holds a character", "starts with '-'"],
    ),
    "key-with-inner-padding": (
        [{"name": "bob", "key": ALICE_KEY[:20] + "=" + ALICE_KEY[20:]}],
        ["(bob).key holds a character"],
    ),
    "same-key-twice": (
        [{"name": "alice", "key": ALICE_KEY}, {"name": "bob", "key": ALICE_KEY}],
        ["vllm_api_users[1] (bob).key is the same as vllm_api_users[0] (alice).key"],
    ),
    "service-key": (
        [{"name": "bob", "key": SERVICE_KEY}],
        ["vllm_api_users[0] (bob).key is the service key (vllm_api_key)"],
    ),
    "several-at-once": (
        [{"name": "Bob"}, {"name": "carol", "key": "x" * 10}, {"name": "carol"}],
        [
            "vllm_api_users[0].name is 'Bob'",
            "vllm_api_users[1] (carol).key has 10 characters",
            "vllm_api_users names carol more than once",
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_USERS))
def test_bad_users_are_named_with_the_fix_and_no_key(case):
    users, fragments = BAD_USERS[case]
    problems = api_user_problems(users, SERVICE_KEY)
    # One problem per entry at fault, in order.
    assert len(problems) == (3 if case == "several-at-once" else 1), problems
    joined = "\n".join(problems)
    for fragment in fragments:
        assert fragment in joined
    for key in KEYS + ("short-key",):
        assert key not in joined


def test_without_a_known_service_key_only_the_users_are_compared():
    assert api_user_problems([{"name": "bob", "key": SERVICE_KEY}]) == []
    assert api_user_problems([{"name": "bob", "key": SERVICE_KEY}], "") == []


GOOD_CIDRS = {
    "everyone": ["0.0.0.0/0", "::/0"],
    "a-lan": ["10.0.0.0/24"],
    "one-address": ["10.219.0.1/32"],
    "ipv6-ula": ["fd00:1::/64"],
    "several": ["10.0.0.0/8", "192.168.1.0/24", "2001:db8::/32"],
}


@pytest.mark.parametrize("case", sorted(GOOD_CIDRS))
def test_good_cidrs_have_no_problem(case):
    assert cidr_problems(GOOD_CIDRS[case]) == []


BAD_CIDRS = {
    "not-a-list": ("10.0.0.0/24", ["vllm_allowed_cidrs is a string, not a list"]),
    "empty": ([], ["vllm_allowed_cidrs is empty, which would let nobody reach the API"]),
    "no-prefix": (["10.0.0.5"], ["vllm_allowed_cidrs[0] is '10.0.0.5'", "10.0.0.5/32"]),
    "not-an-address": (["lan/24"], ["vllm_allowed_cidrs[0] is 'lan/24', not an IPv4 or IPv6"]),
    "prefix-too-long": (["10.0.0.0/33"], ["vllm_allowed_cidrs[0] is '10.0.0.0/33', not an"]),
    "octet-too-big": (["10.0.0.256/32"], ["vllm_allowed_cidrs[0] is '10.0.0.256/32', not an"]),
    "host-bits": (
        ["10.0.0.5/24"],
        ["vllm_allowed_cidrs[0] is '10.0.0.5/24', which has host bits set", "10.0.0.0/24"],
    ),
    "ipv6-host-bits": (["fd00::1/64"], ["host bits set: write the network, fd00::/64"]),
    "not-a-string": ([24], ["vllm_allowed_cidrs[0] is a number, not a string"]),
    "space-inside": ([" 10.0.0.0/24"], ["vllm_allowed_cidrs[0] is ' 10.0.0.0/24', not an"]),
    "duplicate": (["10.0.0.0/24", "10.0.0.0/24"], ["lists 10.0.0.0/24 more than once"]),
}


@pytest.mark.parametrize("case", sorted(BAD_CIDRS))
def test_bad_cidrs_are_named_with_the_fix(case):
    cidrs, fragments = BAD_CIDRS[case]
    problems = cidr_problems(cidrs)
    assert len(problems) == 1, problems
    for fragment in fragments:
        assert fragment in problems[0]


def test_cidr_problems_name_the_variable_given():
    assert cidr_problems([], "firewall_allowed").pop().startswith("firewall_allowed is empty")


SERVED_NAMES = {
    "no-flag": (["vllm", "serve", "org/model", "--port", "8000"], "org/model"),
    "flag-and-value": (["vllm", "serve", "org/model", "--served-model-name", "ds4"], "ds4"),
    "flag-equals": (["vllm", "serve", "org/model", "--served-model-name=ds4"], "ds4"),
    "underscores": (["vllm", "serve", "org/model", "--served_model_name", "ds4"], "ds4"),
    "several-names": (["serve", "m", "--served-model-name", "first", "second"], "first"),
    "flag-without-value": (["vllm", "serve", "org/model", "--served-model-name"], "org/model"),
    "next-is-a-flag": (["serve", "org/model", "--served-model-name", "--port"], "org/model"),
    "not-a-list": ("vllm serve org/model", "org/model"),
}


@pytest.mark.parametrize("case", sorted(SERVED_NAMES))
def test_served_model_name(case):
    argv, expected = SERVED_NAMES[case]
    model = argv[2] if isinstance(argv, list) and argv[0] == "vllm" else "org/model"
    if isinstance(argv, list) and argv[0] == "serve":
        model = argv[1]
    assert served_model_name(argv, model) == expected
