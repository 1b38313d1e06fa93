# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_preflight: each check over good and bad values, and the Jinja readings it keeps.

The checks were Jinja conditions; the rows marked "as Jinja" pin the readings they kept
(the ``int`` filter's, ``unique``'s, ``truncate``'s), so a fix of one is a decision, not
an accident. The bad-input matrix over the lab is in test_bad_input_matrix.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.gb10.serving.plugins.module_utils._plain import jinja_int
from ansible_collections.gb10.serving.plugins.module_utils._preflight import (
    CHECKS,
    _truncate,
    _unique,
    engine_fit_problems,
)

GROUPS = {"gb10_head": ["node0"], "gb10_workers": ["node1", "node2"]}
INVENTORY = {"groups": GROUPS, "head_group": "gb10_head", "worker_group": "gb10_workers"}
RECIPE = {"model": "org/model", "min_nodes": 2, "defaults": {"tensor_parallel": 2}}
FLAGS = ["--node-rank", "--headless", "--api-key"]
LISTEN = {
    "vllm_bind_address": "0.0.0.0",  # noqa: S104 - the default, a value here, not a bind
    "vllm_port": 8000,
    "vllm_master_port": 29500,
    "vllm_ray_port": 6379,
}
CLIENTS = {
    "vllm_api_host": "10.219.0.10",
    "vllm_client_config_dir": "~/.config/gb10-serving/clients",
    "vllm_engine_keys_file": "/etc/gb10-serving/vllm-api-keys.yaml",
}
LONG_HOST = "http://" + "x" * 70 + " y"

# The watchdog role's defaults.
WATCHDOG = {
    "watchdog_interval": 60,
    "watchdog_failures": 3,
    "watchdog_max_restarts": 3,
    "watchdog_window": 3600,
    "watchdog_canary_timeout": 30,
    "watchdog_boot_timeout": 1800,
    "watchdog_webhook_url": "",
}
DOWNLOAD_WAIT = {
    "node_download_timeout": 14400,
    "node_download_poll": 5,
    "node_download_progress_interval": 30,
}

GOOD = [
    ("inventory_head", INVENTORY),
    ("inventory_node", {**INVENTORY, "host": "node2"}),
    ("inventory_overlap", INVENTORY),
    ("inventory_overlap", {**INVENTORY, "groups": {"gb10_head": ["node0"]}}),
    ("inventory_platform", {"platforms": ["spark", "spark"]}),
    ("inventory_platform", {"platforms": ["lab", "LAB"]}),  # as Jinja: unique ignores case
    ("node_ids", {"node_container_uid": 0, "node_container_gid": 4294967294}),
    ("node_ids", {"node_container_uid": "1000", "node_container_gid": 1000.7}),
    ("node_ids", {"node_container_uid": "abc", "node_container_gid": 1000}),  # as Jinja: 0
    ("node_cache_dirs", {"node_hf_cache_dir": "/srv/hf", "node_hf_cache_mount": "/c"}),
    ("node_token_file", {"node_hf_token_file": "/etc/t", "node_hf_cache_dir": "/srv/hf"}),
    ("node_token_file", {"node_hf_token_file": "/srv/hf-token", "node_hf_cache_dir": "/srv/hf"}),
    ("node_model", {"node_model": "deepseek-ai/DeepSeek-V4-Flash-DSpark"}),
    ("node_model", {"node_model": "gb10-lab/tiny-llama"}),
    ("node_revision", {"node_model_revision": "main"}),
    ("node_revision", {"node_model_revision": "0123456789abcdef0123456789abcdef01234567"}),
    ("node_checkpoints", {"checkpoints": [["org/m", "main"], ["org/m", "main"]]}),
    ("node_checkpoints", {"checkpoints": [["org/m", "main"], ["Org/M", "main"]]}),  # as Jinja
    (
        "engine_role_flags",
        {"argv": ["vllm", "serve", "--port", "8000"], "role_flags": FLAGS, "api_users": []},
    ),
    ("engine_role_flags", {"argv": ["--config=x.yaml"], "role_flags": FLAGS, "api_users": []}),
    ("engine_fit", {"recipe": RECIPE, "nodes": ["node0", "node1"]}),
    ("engine_fit", {"recipe": {"model": "org/model"}, "nodes": ["node0"]}),
    ("engine_fit", {"recipe": {"defaults": {"tensor_parallel": "2"}}, "nodes": ["a", "b"]}),
    ("engine_model", {"recipe": RECIPE, "node_model": "org/model"}),
    ("engine_listen", LISTEN),
    ("engine_listen", {**LISTEN, "vllm_bind_address": "::", "vllm_port": "8001"}),
    ("engine_api_key", {"vllm_api_key": ""}),
    ("engine_api_key", {"vllm_api_key": "k" * 16}),
    ("engine_clients", CLIENTS),
    (
        "engine_clients",
        {**CLIENTS, "vllm_api_host": "head.example.org", "vllm_engine_keys_file": "/k.yml"},
    ),
    ("engine_cluster_name", {"gb10_cluster_name": "production"}),
    ("engine_cluster_name", {"gb10_cluster_name": "Lab-2.blue_" + "x" * 53}),
    ("engine_reserved_env", {"recipe_env": {"OMP_NUM_THREADS": "1"}, "vllm_extra_env": {}}),
    ("engine_reserved_env", {"recipe_env": None, "vllm_extra_env": {"VLLM_HOST_IP": "x"}}),
    ("engine_wait", {"vllm_ready_timeout": 1800, "vllm_ready_poll": 15}),
    ("engine_wait", {"vllm_ready_timeout": 10, "vllm_ready_poll": 10}),
    ("node_download_wait", DOWNLOAD_WAIT),
    (
        "node_download_wait",
        {**DOWNLOAD_WAIT, "node_download_poll": "0.05", "node_download_progress_interval": 1},
    ),
    ("sweep_variants", {"bench_sweep_variants": {"max_model_len": [1]}}),
    ("sweep_variants", {"bench_sweep_variants": [{"max_model_len": 1}]}),
    ("watchdog", WATCHDOG),
    ("watchdog", {**WATCHDOG, "watchdog_interval": "5", "watchdog_canary_timeout": 4.5}),
    ("watchdog", {**WATCHDOG, "watchdog_webhook_url": "https://hooks.example.org/gb10"}),
]


@pytest.mark.parametrize(
    ("check", "arguments"), GOOD, ids=[f"{c}-{i}" for i, (c, _a) in enumerate(GOOD)]
)
def test_good_values_have_no_problem(check, arguments):
    assert CHECKS[check](**arguments) == []


BAD = {
    "two-heads": (
        "inventory_head",
        {**INVENTORY, "groups": {**GROUPS, "gb10_head": ["node0", "node1"]}},
        "The inventory group 'gb10_head' must hold exactly one host (the head, rank 0); it "
        "holds 2: node0, node1. Put one node in 'gb10_head' and the others in 'gb10_workers'.",
    ),
    "no-head-group": (
        "inventory_head",
        {**INVENTORY, "head_group": "heads"},
        "The inventory group 'heads' must hold exactly one host (the head, rank 0); it holds "
        "0: none. Put one node in 'heads' and the others in 'gb10_workers'.",
    ),
    "stray-node": (
        "inventory_node",
        {**INVENTORY, "host": "node3"},
        "node3 is in neither 'gb10_head' nor 'gb10_workers'; add it to one of them.",
    ),
    "head-also-worker": (
        "inventory_overlap",
        {**INVENTORY, "groups": {**GROUPS, "gb10_workers": ["node1", "node0"]}},
        "node0 is in both 'gb10_head' and 'gb10_workers'; keep it in one.",
    ),
    "platforms-differ": (
        "inventory_platform",
        {"platforms": ["lab", "spark", "lab"]},
        "gb10_platform differs between nodes (lab, spark); set it once for the whole cluster "
        "in group_vars.",
    ),
    "uid-too-big": (
        "node_ids",
        {"node_container_uid": 4294967295, "node_container_gid": 1000},
        "node_container_uid (4294967295) and node_container_gid (1000) must be numeric IDs "
        "from 0 to 4294967294: use the UID and GID the engine runs as (1000 by default).",
    ),
    "gid-negative-text": (
        "node_ids",
        {"node_container_uid": 1000, "node_container_gid": "-1"},
        "node_container_uid (1000) and node_container_gid (-1) must be numeric IDs",
    ),
    "mount-is-root": (
        "node_cache_dirs",
        {"node_hf_cache_dir": "/srv/hf", "node_hf_cache_mount": "///"},
        "node_hf_cache_dir ('/srv/hf') and node_hf_cache_mount ('///') must be absolute paths "
        "other than /, for example /srv/gb10-serving/huggingface and /cache/huggingface.",
    ),
    "dir-is-slash": (
        "node_cache_dirs",
        {"node_hf_cache_dir": "/", "node_hf_cache_mount": "/c"},
        "node_hf_cache_dir ('/') and node_hf_cache_mount ('/c')",
    ),
    "token-in-the-cache": (
        "node_token_file",
        {"node_hf_token_file": "/srv/hf//token", "node_hf_cache_dir": "/srv/hf/"},
        "node_hf_token_file (/srv/hf/token) lies in node_hf_cache_dir (/srv/hf), which the "
        "engine mounts",
    ),
    "token-relative": (
        "node_token_file",
        {"node_hf_token_file": "hf-token", "node_hf_cache_dir": "/srv/hf"},
        "node_hf_token_file ('hf-token') must be an absolute file path",
    ),
    "model-with-two-slashes": (
        "node_model",
        {"node_model": "org/name/extra"},
        "node_model 'org/name/extra' is not a Hugging Face repository id: write it as "
        "org/name, for example deepseek-ai/DeepSeek-V4-Flash-DSpark.",
    ),
    "model-url": (
        "node_model",
        {"node_model": "https://huggingface.co/org/name"},
        "node_model 'https://huggingface.co/org/name' is not",
    ),
    "revision-empty": (
        "node_revision",
        {"node_model_revision": ""},
        "node_model_revision '' must be a branch, tag or commit with no spaces, for example "
        "main or a 40-hex commit.",
    ),
    "revision-tab": (
        "node_revision",
        {"node_model_revision": "v1\tv2"},
        "node_model_revision 'v1\tv2' must be",
    ),
    "checkpoints-differ": (
        "node_checkpoints",
        {"checkpoints": [["org/m", "main"], ["org/m", "v2"], ["org/m", "main"]]},
        "The nodes name different checkpoints (org/m@main; org/m@v2): tensor parallelism needs "
        "the same node_model and node_model_revision on every node; set them once for the "
        "cluster in group_vars.",
    ),
    "one-role-flag": (
        "engine_role_flags",
        {"argv": ["vllm", "--node-rank=1"], "role_flags": FLAGS, "api_users": []},
        "vllm_recipe.command carries --node-rank, which the role sets per node (ranks, master "
        "address, revision; the API keys from vllm_api_key and vllm_api_users). Remove it from "
        "the command.",
    ),
    "role-flags-spelled-with-underscores": (
        "engine_role_flags",
        {"argv": ["vllm", "--api_key", "k", "--master_port=1", "--max_model_len", "9"]}
        | {"role_flags": [*FLAGS, "--master-port"], "api_users": []},
        "vllm_recipe.command carries --api_key, --master_port, which the role sets per node",
    ),
    "role-flags-and-config-with-users": (
        "engine_role_flags",
        {
            "argv": ["--config", "x", "--api-key=k", "--headless", "--api-key", "j"],
            "role_flags": FLAGS,
            "api_users": [{"name": "alice"}],
        },
        "vllm_recipe.command carries --config, --api-key, --headless, which the role sets per "
        "node (ranks, master address, revision; the API keys from vllm_api_key and "
        "vllm_api_users). Remove them from the command.",
    ),
    "tensor-parallel-above-nodes": (
        "engine_fit",
        {"recipe": {**RECIPE, "defaults": {"tensor_parallel": 4}}, "nodes": ["node0", "node1"]},
        "The recipe needs 2 node(s) and tensor parallel 4 x pipeline parallel unset "
        "(vllm_recipe.min_nodes, vllm_recipe.max_nodes, vllm_recipe.defaults.tensor_parallel, "
        "vllm_recipe.defaults.pipeline_parallel), but the cluster has 2 node(s), one GPU each "
        "(node0, node1). Make tensor_parallel x pipeline_parallel 2 (vllm_recipe_overrides; "
        "for example tensor_parallel 2 and pipeline_parallel 1) or change the inventory.",
    ),
    "parallel-product-not-the-node-count": (
        "engine_fit",
        {
            "recipe": {"defaults": {"tensor_parallel": 2, "pipeline_parallel": 2}},
            "nodes": ["a", "b", "c"],
        },
        "The recipe needs 1 node(s) and tensor parallel 2 x pipeline parallel 2",
    ),
    "more-nodes-than-the-recipe-allows": (
        "engine_fit",
        {
            "recipe": {"min_nodes": 3, "max_nodes": 3, "defaults": {"pipeline_parallel": 4}},
            "nodes": list("abcd"),
        },
        "The recipe needs 3 node(s) (at most 3) and tensor parallel unset x pipeline parallel 4",
    ),
    "min-nodes-above-nodes": (
        "engine_fit",
        {"recipe": {"min_nodes": 3}, "nodes": ["node0", "node1"]},
        "The recipe needs 3 node(s) and tensor parallel unset x pipeline parallel unset",
    ),
    "tensor-parallel-not-a-number": (
        "engine_fit",
        {"recipe": {"defaults": {"tensor_parallel": "two"}}, "nodes": ["node0", "node1"]},
        "The recipe needs 1 node(s) and tensor parallel two",
    ),
    "model-not-node-model": (
        "engine_model",
        {"recipe": RECIPE, "node_model": "org/other"},
        "vllm_recipe.model is org/model but node_model is org/other: the engine would serve a "
        "checkpoint that is not in the cache. Make them the same.",
    ),
    "bind-to-a-name": (
        "engine_listen",
        {**LISTEN, "vllm_bind_address": "localhost"},
        "vllm_bind_address must be an IP address (0.0.0.0 for every interface), and vllm_port, "
        "vllm_master_port and vllm_ray_port ports between 1 and 65535, the API port different "
        "from the master port; got localhost, 8000, 29500, 6379.",
    ),
    "api-port-is-the-master-port": (
        "engine_listen",
        {**LISTEN, "vllm_port": "29500"},
        "got 0.0.0.0, 29500, 29500, 6379.",
    ),
    "ray-port-out-of-range": (
        "engine_listen",
        {**LISTEN, "vllm_ray_port": 65536},
        "got 0.0.0.0, 8000, 29500, 65536.",
    ),
    "api-key-short": (
        "engine_api_key",
        {"vllm_api_key": "k" * 15},
        "vllm_api_key must be at least 16 characters without spaces; leave it empty to have "
        "one generated into vllm_api_key_file.",
    ),
    "api-key-with-a-space": (
        "engine_api_key",
        {"vllm_api_key": "k" * 10 + " " + "k" * 10},
        "vllm_api_key must be at least 16 characters without spaces",
    ),
    "api-host-a-url": (
        "engine_clients",
        {**CLIENTS, "vllm_api_host": "http://head:8000"},
        "vllm_api_host must be the host name or address clients reach the head at, without a "
        "scheme, port or path (got http://head:8000); vllm_client_config_dir a controller "
        "directory (got ~/.config/gb10-serving/clients); and vllm_engine_keys_file an absolute "
        "path ending in .yaml or .yml, as vLLM's --config wants (got "
        "/etc/gb10-serving/vllm-api-keys.yaml).",
    ),
    "api-host-long-is-cut": (
        "engine_clients",
        {**CLIENTS, "vllm_api_host": LONG_HOST},
        f"(got {LONG_HOST[:57]}...);",
    ),
    "api-host-not-a-string": (
        "engine_clients",
        {**CLIENTS, "vllm_api_host": ["head"]},
        "(got ['head']);",
    ),
    "client-dir-empty": (
        "engine_clients",
        {**CLIENTS, "vllm_client_config_dir": ""},
        "vllm_client_config_dir a controller directory (got );",
    ),
    "cluster-name-a-path": (
        "engine_cluster_name",
        {"gb10_cluster_name": "../other"},
        "gb10_cluster_name names this cluster's directory of keys and client configurations on "
        "the controller (~/.config/gb10-serving/<name>): a letter or digit, then up to 63 "
        "letters, digits, '.', '_' or '-' (got ../other). Its default is the inventory's "
        "directory name; set gb10_cluster_name in the inventory's group_vars.",
    ),
    "cluster-name-empty": ("engine_cluster_name", {"gb10_cluster_name": ""}, "(got )."),
    "cluster-name-too-long": (
        "engine_cluster_name",
        {"gb10_cluster_name": "x" * 70},
        "(got " + "x" * 57 + "...).",
    ),
    "cluster-name-with-a-space": (
        "engine_cluster_name",
        {"gb10_cluster_name": "my cluster"},
        "(got my cluster).",
    ),
    "cluster-name-not-a-string": ("engine_cluster_name", {"gb10_cluster_name": None}, "(got )."),
    "keys-file-relative": (
        "engine_clients",
        {**CLIENTS, "vllm_engine_keys_file": "keys.yaml"},
        "(got keys.yaml).",
    ),
    "api-key-in-the-recipe-env": (
        "engine_reserved_env",
        {"recipe_env": {"VLLM_API_KEY": ""}, "vllm_extra_env": {}},
        "vllm_recipe.env sets VLLM_API_KEY, which would bypass the collection's handling of "
        "secrets (it shows in `docker inspect`; an empty VLLM_API_KEY can switch the check "
        "off): remove it and set vllm_api_key (or vllm_api_users for each person's key).",
    ),
    "token-in-the-extra-env": (
        "engine_reserved_env",
        {"recipe_env": {}, "vllm_extra_env": {"HF_TOKEN": "hf_x"}},
        "vllm_extra_env sets HF_TOKEN, which would bypass",
    ),
    "poll-above-timeout": (
        "engine_wait",
        {"vllm_ready_timeout": 600, "vllm_ready_poll": 900},
        "vllm_ready_timeout and vllm_ready_poll must be positive, the poll no longer than the "
        "timeout; got 600 and 900.",
    ),
    "timeout-zero": (
        "engine_wait",
        {"vllm_ready_timeout": 0, "vllm_ready_poll": 0},
        "got 0 and 0.",
    ),
    "download-poll-zero": (
        "node_download_wait",
        {**DOWNLOAD_WAIT, "node_download_poll": 0},
        "node_download_timeout, node_download_poll and node_download_progress_interval must "
        "be positive numbers of seconds, the poll no longer than the timeout; got 14400, 0 "
        "and 30.",
    ),
    "download-poll-above-timeout": (
        "node_download_wait",
        {**DOWNLOAD_WAIT, "node_download_timeout": 10, "node_download_poll": 30},
        "got 10, 30 and 30.",
    ),
    "download-interval-not-a-number": (
        "node_download_wait",
        {**DOWNLOAD_WAIT, "node_download_progress_interval": "soon"},
        "got 14400, 5 and soon.",
    ),
    "watchdog-no-failures": (
        "watchdog",
        {**WATCHDOG, "watchdog_failures": 0},
        "watchdog_failures must be a whole number of at least 1, not 0.",
    ),
    "watchdog-interval-short": (
        "watchdog",
        {**WATCHDOG, "watchdog_interval": 1, "watchdog_canary_timeout": 0.5},
        "watchdog_interval must be at least 5 seconds, not 1.",
    ),
    "watchdog-canary-outlasts-interval": (
        "watchdog",
        {**WATCHDOG, "watchdog_canary_timeout": 60},
        "watchdog_canary_timeout must be positive seconds, shorter than watchdog_interval "
        "(60), not 60.",
    ),
    "watchdog-window-short": (
        "watchdog",
        {**WATCHDOG, "watchdog_window": 30},
        "watchdog_window must be a number of seconds no shorter than watchdog_interval, not 30.",
    ),
    "watchdog-webhook-not-a-url": (
        "watchdog",
        {**WATCHDOG, "watchdog_webhook_url": "hooks.example.org"},
        "watchdog_webhook_url must be empty or an http(s) URL, not 'hooks.example.org'.",
    ),
    "sweep-empty": (
        "sweep_variants",
        {"bench_sweep_variants": {}},
        "bench_sweep_variants is empty: give the variants to compare, for example -e "
        '\'{"bench_sweep_variants": {"max_model_len": [393216, 500000]}}\'.',
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_values_name_the_variables_and_the_fix(case):
    check, arguments, message = BAD[case]
    problems = CHECKS[check](**arguments)
    assert len(problems) == 1, problems
    assert problems[0].startswith(message) or message in problems[0], problems[0]


def test_no_message_holds_the_api_key():
    key = "secret with spaces"  # noqa: S105
    assert key not in " ".join(CHECKS["engine_api_key"](vllm_api_key=key))


def test_every_check_is_tested_good_and_bad():
    assert {check for check, _arguments in GOOD} == set(CHECKS)
    assert {check for check, _arguments, _message in BAD.values()} == set(CHECKS)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("42", 42),
        (" 7 ", 7),
        ("42.9", 42),
        ("1e3", 1000),
        (3.9, 3),
        (True, 1),
        ("abc", 0),
        (None, 0),
        ("0x10", 0),
        ([1], 0),
    ],
)
def test_numbers_read_as_jinja_int_reads_them(value, expected):
    assert jinja_int(value) == expected


def test_unique_as_ansible_unique():
    assert _unique(["lab", "LAB", "spark", "lab", 1, 1]) == ["lab", "spark", 1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x" * 65, "x" * 65),  # within the leeway
        ("x" * 66, "x" * 57 + "..."),
        ("word " * 20, "word " * 10 + "word..."),
    ],
)
def test_truncate_as_jinja_truncate(text, expected):
    assert _truncate(text, 60) == expected


def test_a_real_three_node_pipeline_recipe_fits_three_nodes_only():
    """sparkrun's 3-node Qwen3.5-397B recipe: pipeline parallel 3 x tensor parallel 1, min
    and max nodes 3. It fits three Sparks; two or four are refused naming both numbers."""
    fixture = (
        Path(__file__).parent / "fixtures" / "sparkrun" / "qwen3.5-397b-3x-pipeline.sparkrun.yaml"
    )
    recipe = yaml.safe_load(fixture.read_text().split("\n---\n", 1)[1])
    assert engine_fit_problems(recipe, ["n0", "n1", "n2"]) == []
    for nodes in (["n0", "n1"], ["n0", "n1", "n2", "n3"]):
        (problem,) = engine_fit_problems(recipe, nodes)
        assert "tensor parallel 1 x pipeline parallel 3" in problem
        assert f"the cluster has {len(nodes)} node(s)" in problem
    # Two by two on four nodes fits once the range allows four.
    four = {
        **recipe,
        "max_nodes": 4,
        "defaults": {**recipe["defaults"], "tensor_parallel": 2, "pipeline_parallel": 2},
    }
    assert engine_fit_problems(four, ["n0", "n1", "n2", "n3"]) == []
