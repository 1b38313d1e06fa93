# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight checks of the preflight, node and vllm roles and the sweep, as pure functions.

Pure Python, no Ansible imports. Each check takes the variables it looks at and returns
the problems found: an empty list, or one message naming the variables and the fix. The
roles run one check per assert task (``gb10.serving.preflight_problems``), so a check
fails on the node and in the order it did when it was written in Jinja; the role's task
adds "Nothing has been changed." where it said so before. The fabric's and the
firewall's checks live beside their plans (``_fabric_plan``, ``_firewall``), the recipe's
and the API users' in ``_vllm_recipe`` and ``_api_access``.

The checks were Jinja conditions first, and keep their meaning: ``jinja_int`` (in
``_plain``) is Jinja's ``int`` filter (text that is no number counts as 0), ``_unique``
Ansible's ``unique`` (case-insensitive, first spelling kept), ``_text`` what ``{{ value }}``
prints.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import List

from ansible_collections.gb10.serving.plugins.module_utils._plain import jinja_int

# The highest UID or GID a container may run as ((uid_t)-1 means "none").
ID_MAX = 4294967294
# The lowest and highest TCP port.
PORT_MIN = 1
PORT_MAX = 65535
# The shortest service key.
API_KEY_MIN_LENGTH = 16

# A Hugging Face repository id: org/name.
_HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_IPV4_SHAPE = re.compile(r"^(\d{1,3}\.){3}\d{1,3}$")
_API_HOST = re.compile(r"^[A-Za-z0-9_.:%-]+$")
_KEYS_FILE = re.compile(r"^/.*[.]ya?ml$")
_ABSOLUTE = re.compile(r"^/.+")
_SPACE = re.compile(r"\s")
# An engine argument's flag: what comes before '='.
_FLAG_VALUE = re.compile(r"=.*$")
# How far past its length truncate() lets a value run before it cuts (Jinja's leeway).
_TRUNCATE_LEEWAY = 5


def _text(value) -> str:
    """How ``{{ value }}`` prints inside a message: null prints nothing (``join`` prints None)."""
    return "" if value is None else str(value)


def _unique(values) -> list:
    """Ansible's ``unique`` filter: first of each, strings compared without case."""
    seen, kept = [], []
    for value in values:
        key = value.lower() if isinstance(value, str) else value
        if key not in seen:
            seen.append(key)
            kept.append(value)
    return kept


def _truncate(text: str, length: int) -> str:
    """Jinja's ``truncate`` filter: cut at a word, marked '...', when well over ``length``."""
    if len(text) <= length + _TRUNCATE_LEEWAY:
        return text
    return text[: length - 3].rsplit(" ", 1)[0] + "..."


def _matches(pattern, value) -> bool:
    """Ansible's ``match`` test: the pattern matches at the start of the value as text."""
    return pattern.match(str(value)) is not None


def _group(groups, name) -> list:
    hosts = groups.get(name) if isinstance(groups, Mapping) else None
    return list(hosts) if hosts is not None else []


# --- the inventory (preflight role) ------------------------------------------------------


def inventory_head_problems(groups, head_group, worker_group) -> List[str]:
    """The head group must hold exactly one host."""
    heads = _group(groups, head_group)
    if len(heads) == 1:
        return []
    return [
        f"The inventory group '{head_group}' must hold exactly one host (the head, rank 0); "
        f"it holds {len(heads)}: {', '.join(str(h) for h in heads) or 'none'}. Put one node "
        f"in '{head_group}' and the others in '{worker_group}'."
    ]


def inventory_node_problems(host, groups, head_group, worker_group) -> List[str]:
    """``host`` must be the head or a worker."""
    if host in _group(groups, head_group) or host in _group(groups, worker_group):
        return []
    return [f"{host} is in neither '{head_group}' nor '{worker_group}'; add it to one of them."]


def inventory_overlap_problems(groups, head_group, worker_group) -> List[str]:
    """No host may be both the head and a worker."""
    workers = _group(groups, worker_group)
    both = [host for host in _group(groups, head_group) if host in workers]
    if not both:
        return []
    return [
        f"{', '.join(str(h) for h in both)} is in both '{head_group}' and '{worker_group}'; "
        "keep it in one."
    ]


def inventory_platform_problems(platforms) -> List[str]:
    """Every node's ``gb10_platform`` (one per node) must be the same."""
    found = _unique(platforms)
    if len(found) == 1:
        return []
    return [
        f"gb10_platform differs between nodes ({', '.join(str(p) for p in found)}); set it "
        "once for the whole cluster in group_vars."
    ]


# --- the node role -------------------------------------------------------------------------


def node_ids_problems(node_container_uid, node_container_gid) -> List[str]:
    """The container's UID and GID must be IDs, 0 to ID_MAX."""
    if all(0 <= jinja_int(value) <= ID_MAX for value in (node_container_uid, node_container_gid)):
        return []
    return [
        f"node_container_uid ({_text(node_container_uid)}) and node_container_gid "
        f"({_text(node_container_gid)}) must be numeric IDs from 0 to {ID_MAX}: use the UID "
        "and GID the engine runs as (1000 by default)."
    ]


def _absolute_dir(path) -> bool:
    return _matches(_ABSOLUTE, path) and len(str(path).strip("/")) > 0


def node_cache_dirs_problems(node_hf_cache_dir, node_hf_cache_mount) -> List[str]:
    """Both cache paths must be absolute, and not /."""
    if _absolute_dir(node_hf_cache_dir) and _absolute_dir(node_hf_cache_mount):
        return []
    return [
        f"node_hf_cache_dir ('{_text(node_hf_cache_dir)}') and node_hf_cache_mount "
        f"('{_text(node_hf_cache_mount)}') must be absolute paths other than /, for example "
        "/srv/gb10-serving/huggingface and /cache/huggingface."
    ]


def node_token_file_problems(node_hf_token_file, node_hf_cache_dir) -> List[str]:
    """The token file: an absolute path, outside the cache the engine mounts."""
    if not _absolute_dir(node_hf_token_file):
        return [
            f"node_hf_token_file ('{_text(node_hf_token_file)}') must be an absolute file path,"
            " for example /etc/gb10-serving/hf-token."
        ]
    token = "/" + "/".join(part for part in str(node_hf_token_file).split("/") if part)
    cache = "/" + "/".join(part for part in str(node_hf_cache_dir).split("/") if part)
    if token == cache or token.startswith(cache.rstrip("/") + "/"):
        return [
            f"node_hf_token_file ({token}) lies in node_hf_cache_dir ({cache}), which the "
            "engine mounts and whose model code could read it: put it outside, for example "
            "/etc/gb10-serving/hf-token."
        ]
    return []


def node_model_problems(node_model) -> List[str]:
    """``node_model`` must be a Hugging Face repository id, org/name."""
    if _matches(_HF_REPO, node_model):
        return []
    return [
        f"node_model '{_text(node_model)}' is not a Hugging Face repository id: write it as "
        "org/name, for example deepseek-ai/DeepSeek-V4-Flash-DSpark."
    ]


def node_revision_problems(node_model_revision) -> List[str]:
    """``node_model_revision`` must name one revision: not empty, no whitespace."""
    if len(node_model_revision) > 0 and not _SPACE.search(str(node_model_revision)):
        return []
    return [
        f"node_model_revision '{_text(node_model_revision)}' must be a branch, tag or commit "
        "with no spaces, for example main or a 40-hex commit."
    ]


def node_checkpoints_problems(checkpoints) -> List[str]:
    """Every node's ``[node_model, node_model_revision]`` (one pair per node) must agree."""
    found = _unique("@".join(str(part) for part in pair) for pair in checkpoints)
    if len(found) == 1:
        return []
    return [
        f"The nodes name different checkpoints ({'; '.join(found)}): tensor parallelism "
        "needs the same node_model and node_model_revision on every node; set them once for "
        "the cluster in group_vars."
    ]


def _seconds(value):
    """A number of seconds (int, float or its text), or None."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def node_download_wait_problems(
    node_download_timeout, node_download_poll, node_download_progress_interval
) -> List[str]:
    """The download's timeout, poll and progress interval positive, the poll no longer than
    the timeout (a fraction of a second is a valid poll)."""
    timeout, poll, interval = (
        _seconds(node_download_timeout),
        _seconds(node_download_poll),
        _seconds(node_download_progress_interval),
    )
    if None not in (timeout, poll, interval) and 0 < poll <= timeout and interval > 0:
        return []
    return [
        "node_download_timeout, node_download_poll and node_download_progress_interval must "
        "be positive numbers of seconds, the poll no longer than the timeout; got "
        f"{_text(node_download_timeout)}, {_text(node_download_poll)} and "
        f"{_text(node_download_progress_interval)}."
    ]


# --- the engine (vllm role) ----------------------------------------------------------------


def engine_role_flags_problems(argv, role_flags, api_users) -> List[str]:
    """The recipe's rendered command must not carry a flag the role sets per node.

    ``argv`` is the command's arguments, ``role_flags`` the flags the role adds; with
    ``api_users``, the role passes the keys file through ``--config`` too.
    """
    flags = list(role_flags) + (["--config"] if api_users else [])
    # vLLM's parser takes --api_key for --api-key: compare the names with dashes, name the
    # flag as the recipe spells it.
    clashes = _unique(
        flag
        for flag in (_FLAG_VALUE.sub("", str(arg)) for arg in argv)
        if (flag.replace("_", "-") if flag.startswith("--") else flag) in flags
    )
    if not clashes:
        return []
    return [
        f"vllm_recipe.command carries {', '.join(clashes)}, which the role sets per node "
        "(ranks, master address, revision; the API keys from vllm_api_key and "
        f"vllm_api_users). Remove {'them' if len(clashes) > 1 else 'it'} from the command."
    ]


def engine_fit_problems(recipe, nodes) -> List[str]:
    """The recipe's node range and parallelism must fit ``nodes``, one GPU each.

    ``recipe`` is the merged recipe; ``nodes`` the cluster's nodes, head first. Every node
    holds one GPU, so tensor parallel times pipeline parallel (1 when unset) must be the node
    count: 2 x 1 on two Sparks, 1 x 3 or 3 x 1 on three, 2 x 2 or 4 x 1 on four.
    """
    min_nodes = recipe.get("min_nodes", 1)
    max_nodes = recipe.get("max_nodes")
    defaults = recipe.get("defaults")
    defaults = defaults if isinstance(defaults, Mapping) else {}
    tensor_parallel = str(defaults.get("tensor_parallel", ""))
    pipeline_parallel = str(defaults.get("pipeline_parallel", ""))
    count = len(nodes)
    product = (jinja_int(tensor_parallel) if tensor_parallel else 1) * (
        jinja_int(pipeline_parallel) if pipeline_parallel else 1
    )
    fits_range = jinja_int(min_nodes) <= count and (
        max_nodes in (None, "") or count <= jinja_int(max_nodes)
    )
    fits_gpus = (tensor_parallel == "" and pipeline_parallel == "") or product == count
    if fits_range and fits_gpus:
        return []
    most = "" if max_nodes in (None, "") else f" (at most {_text(max_nodes)})"
    return [
        f"The recipe needs {_text(min_nodes)} node(s){most} and tensor parallel "
        f"{tensor_parallel or 'unset'} x pipeline parallel {pipeline_parallel or 'unset'} "
        "(vllm_recipe.min_nodes, vllm_recipe.max_nodes, vllm_recipe.defaults.tensor_parallel, "
        f"vllm_recipe.defaults.pipeline_parallel), but the cluster has {count} node(s), one "
        f"GPU each ({', '.join(str(n) for n in nodes)}). Make tensor_parallel x "
        f"pipeline_parallel {count} (vllm_recipe_overrides; for example tensor_parallel "
        f"{count} and pipeline_parallel 1) or change the inventory."
    ]


def engine_model_problems(recipe, node_model) -> List[str]:
    """The recipe must serve the checkpoint the node role puts in the cache."""
    model = recipe.get("model")
    if model == node_model:
        return []
    return [
        f"vllm_recipe.model is {_text(model)} but node_model is {_text(node_model)}: the "
        "engine would serve a checkpoint that is not in the cache. Make them the same."
    ]


def engine_listen_problems(
    vllm_bind_address, vllm_port, vllm_master_port, vllm_ray_port
) -> List[str]:
    """An IP address to bind, three ports in range, the API's not the master's."""
    ports = [jinja_int(port) for port in (vllm_port, vllm_master_port, vllm_ray_port)]
    if (
        (_matches(_IPV4_SHAPE, vllm_bind_address) or ":" in str(vllm_bind_address))
        and all(PORT_MIN <= port <= PORT_MAX for port in ports)
        and ports[0] != ports[1]
    ):
        return []
    return [
        "vllm_bind_address must be an IP address (0.0.0.0 for every interface), and vllm_port, "
        f"vllm_master_port and vllm_ray_port ports between {PORT_MIN} and {PORT_MAX}, the API "
        f"port different from the master port; got {_text(vllm_bind_address)}, "
        f"{_text(vllm_port)}, {_text(vllm_master_port)}, {_text(vllm_ray_port)}."
    ]


def engine_api_key_problems(vllm_api_key) -> List[str]:
    """A given service key has at least API_KEY_MIN_LENGTH characters, no whitespace.

    An empty key is not checked (one is generated). The message never holds the key.
    """
    if len(vllm_api_key) == 0 or (
        len(vllm_api_key) >= API_KEY_MIN_LENGTH and not _SPACE.search(str(vllm_api_key))
    ):
        return []
    return [
        f"vllm_api_key must be at least {API_KEY_MIN_LENGTH} characters without spaces; leave "
        "it empty to have one generated into vllm_api_key_file."
    ]


def engine_clients_problems(
    vllm_api_host, vllm_client_config_dir, vllm_engine_keys_file
) -> List[str]:
    """Where clients reach the API, where their files go, where the head keeps the keys."""
    if (
        isinstance(vllm_api_host, str)
        and _matches(_API_HOST, vllm_api_host)
        and isinstance(vllm_client_config_dir, str)
        and len(vllm_client_config_dir) > 0
        and _matches(_KEYS_FILE, vllm_engine_keys_file)
    ):
        return []
    return [
        "vllm_api_host must be the host name or address clients reach the head at, without a "
        f"scheme, port or path (got {_truncate(str(vllm_api_host), 60)}); "
        "vllm_client_config_dir a controller directory (got "
        f"{_text(vllm_client_config_dir)}); and vllm_engine_keys_file an absolute path ending "
        f"in .yaml or .yml, as vLLM's --config wants (got {_text(vllm_engine_keys_file)})."
    ]


# A cluster's name: one directory name under ~/.config/gb10-serving on the controller.
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def engine_cluster_name_problems(gb10_cluster_name) -> List[str]:
    """The cluster's name is a directory name: a letter or digit, then 63 of ``A-Za-z0-9._-``."""
    if isinstance(gb10_cluster_name, str) and _matches(_CLUSTER_NAME, gb10_cluster_name):
        return []
    return [
        "gb10_cluster_name names this cluster's directory of keys and client configurations "
        "on the controller (~/.config/gb10-serving/<name>): a letter or digit, then up to 63 "
        f"letters, digits, '.', '_' or '-' (got {_truncate(_text(gb10_cluster_name), 60)}). "
        "Its default is the inventory's directory name; set gb10_cluster_name in the "
        "inventory's group_vars."
    ]


# Environment the engine must not get from the recipe or vllm_extra_env, with the variable
# that gives it instead: a recipe's VLLM_API_KEY would override the root-only env file (an
# empty one switches authentication off) and show in `docker inspect`; a token there would
# reach the engine, which needs none.
RESERVED_ENV = {
    "VLLM_API_KEY": "vllm_api_key (or vllm_api_users for each person's key)",
    "HF_TOKEN": "node_hf_token (the download gets it, the engine does not)",
    "HUGGING_FACE_HUB_TOKEN": "node_hf_token (the download gets it, the engine does not)",
}


def engine_reserved_env_problems(recipe_env, vllm_extra_env) -> List[str]:
    """No key or token in the engine's plain environment."""
    problems = []
    for variable, env in (("vllm_recipe.env", recipe_env), ("vllm_extra_env", vllm_extra_env)):
        for name in sorted(set(env or {}) & set(RESERVED_ENV)):
            problems.append(
                f"{variable} sets {name}, which would bypass the collection's handling of "
                f"secrets (it shows in `docker inspect`; an empty {name} can switch the "
                f"check off): remove it and set {RESERVED_ENV[name]}."
            )
    return problems


def engine_wait_problems(vllm_ready_timeout, vllm_ready_poll) -> List[str]:
    """Both waiting times positive, the poll no longer than the timeout."""
    timeout, poll = jinja_int(vllm_ready_timeout), jinja_int(vllm_ready_poll)
    if timeout > 0 and 0 < poll <= timeout:
        return []
    return [
        "vllm_ready_timeout and vllm_ready_poll must be positive, the poll no longer than the "
        f"timeout; got {_text(vllm_ready_timeout)} and {_text(vllm_ready_poll)}."
    ]


# --- the sweep (playbooks/sweep.yml) --------------------------------------------------------


def sweep_variants_problems(bench_sweep_variants) -> List[str]:
    """A sweep needs variants to compare (the bench role checks each one)."""
    if len(bench_sweep_variants) > 0:
        return []
    return [
        "bench_sweep_variants is empty: give the variants to compare, for example "
        '-e \'{"bench_sweep_variants": {"max_model_len": [393216, 500000]}}\'.'
    ]


# --- the watchdog (watchdog role) ------------------------------------------------------------


def watchdog_problems(
    watchdog_interval,
    watchdog_failures,
    watchdog_max_restarts,
    watchdog_window,
    watchdog_canary_timeout,
    watchdog_boot_timeout,
    watchdog_webhook_url,
) -> List[str]:
    """The watchdog's counts at least 1, its times positive seconds, the interval at least 5
    and no longer than the window, the canary's timeout shorter than the interval, the
    webhook empty or an http(s) URL."""
    problems = []
    for name, value in (
        ("watchdog_failures", watchdog_failures),
        ("watchdog_max_restarts", watchdog_max_restarts),
    ):
        if isinstance(value, bool) or not str(value).isdigit() or int(value) < 1:
            problems.append(f"{name} must be a whole number of at least 1, not {_text(value)}.")
    interval, window, canary, boot = (
        _seconds(watchdog_interval),
        _seconds(watchdog_window),
        _seconds(watchdog_canary_timeout),
        _seconds(watchdog_boot_timeout),
    )
    if interval is None or interval < 5:
        problems.append(
            f"watchdog_interval must be at least 5 seconds, not {_text(watchdog_interval)}."
        )
    if window is None or (interval is not None and window < interval):
        problems.append(
            "watchdog_window must be a number of seconds no shorter than watchdog_interval, "
            f"not {_text(watchdog_window)}."
        )
    if canary is None or canary <= 0 or (interval is not None and canary >= interval):
        problems.append(
            "watchdog_canary_timeout must be positive seconds, shorter than watchdog_interval "
            f"({_text(watchdog_interval)}), not {_text(watchdog_canary_timeout)}."
        )
    if boot is None or boot <= 0:
        problems.append(
            f"watchdog_boot_timeout must be positive seconds, not {_text(watchdog_boot_timeout)}."
        )
    url = str(watchdog_webhook_url or "")
    if url and not re.match(r"^https?://[^\s/]+", url):
        problems.append(f"watchdog_webhook_url must be empty or an http(s) URL, not {url!r}.")
    return problems


# The checks by the name the roles call them by (gb10.serving.preflight_problems), in the
# order the roles run them.
CHECKS = {
    "inventory_head": inventory_head_problems,
    "inventory_node": inventory_node_problems,
    "inventory_overlap": inventory_overlap_problems,
    "inventory_platform": inventory_platform_problems,
    "node_ids": node_ids_problems,
    "node_cache_dirs": node_cache_dirs_problems,
    "node_token_file": node_token_file_problems,
    "node_model": node_model_problems,
    "node_revision": node_revision_problems,
    "node_checkpoints": node_checkpoints_problems,
    "node_download_wait": node_download_wait_problems,
    "engine_role_flags": engine_role_flags_problems,
    "engine_fit": engine_fit_problems,
    "engine_model": engine_model_problems,
    "engine_listen": engine_listen_problems,
    "engine_api_key": engine_api_key_problems,
    "engine_clients": engine_clients_problems,
    "engine_cluster_name": engine_cluster_name_problems,
    "engine_reserved_env": engine_reserved_env_problems,
    "engine_wait": engine_wait_problems,
    "sweep_variants": sweep_variants_problems,
    "watchdog": watchdog_problems,
}
