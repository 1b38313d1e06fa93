# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plan_engine and restart_reasons: the engine's plan for 2 to 4 nodes on both backends, and
why a running cluster differs from it."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._engine_plan import (
    RAY_HEAD_SCRIPT,
    EnginePlanError,
    plan_engine,
    restart_reasons,
    spec_differences,
)

SERVE = ["vllm", "serve", "deepseek-ai/DeepSeek-V4-Flash-DSpark", "--tensor-parallel-size", "2"]


def node(n, platform="spark", **extra):
    inputs = {
        "host": f"spark{n}",
        "container": "gb10-vllm",
        "platform": platform,
        "image": "vllm/vllm-openai@sha256:" + "ab" * 32,
        "fabric_ipv4": f"192.168.100.{10 + n}",
        "engine": {
            "uid": 1000,
            "gid": 1000,
            "hf_cache_dir": "/srv/hf",
            "hf_cache_mount": "/root/.cache/huggingface",
            "commit": "",
            "env": {"HF_HOME": "/root/.cache/huggingface", "XDG_CACHE_HOME": "/jit"},
        },
        "serve_argv": list(SERVE),
        "recipe_env": {"VLLM_USE_DEEP_GEMM": 0},
        "fabric_env": {"NCCL_IB_HCA": "rocep1s0f1", "VLLM_HOST_IP": f"192.168.100.{10 + n}"},
        "extra_env": {},
        "hf_offline": False,
        "network_mode": "host",
        "ipc_mode": "host",
        "memlock_unlimited": True,
        "restart_policy": "no",
        "log_options": {"max-size": "50m"},
    }
    inputs.update(extra)
    return inputs


CLUSTER = {
    "backend": "mp",
    "master_port": 29501,
    "ray_port": 6379,
    "secret_env_file": "/etc/gb10-serving/vllm-secret.env",
    "api_key_sha256": "f" * 64,
    "api_keys": None,
}


def cluster(**changes):
    return {**CLUSTER, **changes}


MP = [
    pytest.param(
        2,
        0,
        ["--nnodes", "2", "--node-rank", "0", "--master-addr", "192.168.100.10"],
        id="mp-2-head",
    ),
    pytest.param(
        2,
        1,
        ["--nnodes", "2", "--node-rank", "1", "--master-addr", "192.168.100.10", "--headless"],
        id="mp-2-worker",
    ),
    pytest.param(3, 2, ["--nnodes", "3", "--node-rank", "2", "--headless"], id="mp-3-last"),
    pytest.param(4, 3, ["--nnodes", "4", "--node-rank", "3", "--headless"], id="mp-4-last"),
]


@pytest.mark.parametrize(("count", "rank", "wanted"), MP)
def test_mp_commands_give_every_rank_its_place(count, rank, wanted):
    plan = plan_engine([node(n) for n in range(count)], CLUSTER)
    command = plan["nodes"][f"spark{rank}"]["spec"]["command"]
    assert command[: len(SERVE)] == SERVE
    tail = command[len(SERVE) :]
    assert tail[:2] == ["--distributed-executor-backend", "mp"]
    text = " ".join(tail)
    assert " ".join(wanted[:-1] if wanted[-1] == "--headless" else wanted) in text
    assert ("--headless" in tail) is (rank > 0)
    assert tail[tail.index("--master-port") + 1] == "29501"
    assert all(isinstance(arg, str) for arg in command)


@pytest.mark.parametrize("count", [2, 3, 4])
def test_ray_head_runs_the_wait_script_and_workers_join_it(count):
    plan = plan_engine([node(n) for n in range(count)], cluster(backend="ray"))
    head = plan["nodes"]["spark0"]["spec"]["command"]
    assert head[:5] == ["sh", "-c", RAY_HEAD_SCRIPT, "6379", str(count)]
    assert head[5:] == SERVE + ["--distributed-executor-backend", "ray"]
    for n in range(1, count):
        assert plan["nodes"][f"spark{n}"]["spec"]["command"] == [
            "ray",
            "start",
            "--block",
            "--disable-usage-stats",
            "--address=192.168.100.10:6379",
            f"--node-ip-address=192.168.100.{10 + n}",
        ]
    assert plan["start_order"] == [f"spark{n}" for n in range(count)]


@pytest.mark.parametrize("count", [2, 3, 4])
def test_mp_starts_the_workers_before_the_head(count):
    plan = plan_engine([node(n) for n in range(count)], CLUSTER)
    assert plan["ranks"] == [f"spark{n}" for n in range(count)]
    assert plan["start_order"] == [f"spark{n}" for n in range(1, count)] + ["spark0"]
    assert [plan["nodes"][host]["rank"] for host in plan["ranks"]] == list(range(count))
    assert [plan["nodes"][host]["head"] for host in plan["ranks"]] == [True] + [False] * (count - 1)


def test_the_model_commit_is_pinned_and_the_head_reads_the_users_keys():
    keys = {"file": "/etc/gb10-serving/keys.yaml", "mount": "/etc/keys.yaml", "users": ["bo", "al"]}
    keys["sha256"] = "e" * 64
    engine = {**node(0)["engine"], "commit": "0123abcd"}
    nodes = [node(0, engine=engine), node(1, engine=engine)]
    plan = plan_engine(nodes, cluster(api_keys=keys))
    head, worker = plan["nodes"]["spark0"]["spec"], plan["nodes"]["spark1"]["spec"]
    assert head["command"][len(SERVE) : len(SERVE) + 4] == [
        "--revision",
        "0123abcd",
        "--config",
        "/etc/keys.yaml",
    ]
    assert "--config" not in worker["command"]
    assert "--revision" in worker["command"]
    assert head["volumes"][-1] == "/etc/gb10-serving/keys.yaml:/etc/keys.yaml:ro"
    assert head["api_users"] == ["al", "bo"]
    assert head["api_keys_sha256"] == "e" * 64
    assert "api_users" not in worker
    assert len(worker["volumes"]) == 1


def test_without_users_the_spec_has_no_user_fields():
    spec = plan_engine([node(0), node(1)], CLUSTER)["nodes"]["spark0"]["spec"]
    assert "api_users" not in spec
    assert "api_keys_sha256" not in spec
    assert spec["secret_env_file"] == CLUSTER["secret_env_file"]
    assert spec["api_key_sha256"] == "f" * 64


def test_only_the_head_reads_the_secret_env_file():
    worker = plan_engine([node(0), node(1)], CLUSTER)["nodes"]["spark1"]["spec"]
    assert worker["secret_env_file"] == ""
    assert worker["api_key_sha256"] == ""


def test_environment_layers_win_in_order_and_are_strings():
    extra = {"extra_env": {"NCCL_IB_HCA": "mine", "VLLM_USE_DEEP_GEMM": 1}, "hf_offline": True}
    env = plan_engine([node(0, **extra), node(1)], CLUSTER)["nodes"]["spark0"]["spec"]["env"]
    assert env["NCCL_IB_HCA"] == "mine"
    assert env["VLLM_USE_DEEP_GEMM"] == "1"
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["HF_HOME"] == "/root/.cache/huggingface"
    plain = plan_engine([node(0), node(1)], CLUSTER)["nodes"]["spark0"]["spec"]["env"]
    assert plain["VLLM_USE_DEEP_GEMM"] == "0"
    assert "HF_HUB_OFFLINE" not in plain


def test_a_spark_gets_the_gpus_and_the_rdma_devices_the_lab_does_not():
    spark = plan_engine([node(0), node(1)], CLUSTER)["nodes"]["spark0"]["spec"]
    lab = plan_engine([node(0, "lab"), node(1, "lab")], CLUSTER)["nodes"]["spark0"]["spec"]
    assert spark["gpus"] is True
    assert spark["devices"] == ["/dev/infiniband:/dev/infiniband"]
    assert lab["gpus"] is False
    assert lab["devices"] == []
    assert spark["ulimits"] == ["memlock:-1:-1"]
    unlimited_off = plan_engine([node(0, memlock_unlimited=False), node(1)], CLUSTER)
    assert unlimited_off["nodes"]["spark0"]["spec"]["ulimits"] == []
    assert spark["user"] == "1000:1000"
    assert spark["cap_drop"] == ["ALL"]


def test_the_fingerprint_is_sorted_json_of_the_specs_in_rank_order():
    plan = plan_engine([node(0), node(1)], CLUSTER)
    specs = [plan["nodes"][host]["spec"] for host in plan["ranks"]]
    text = json.dumps(specs, sort_keys=True)
    assert plan["deployment"] == hashlib.sha256(text.encode()).hexdigest()


CHANGES = [
    pytest.param({"image": "vllm/vllm-openai@sha256:" + "cd" * 32}, id="image"),
    pytest.param({"serve_argv": SERVE + ["--max-model-len", "8192"]}, id="recipe-flag"),
    pytest.param({"extra_env": {"NCCL_DEBUG": "INFO"}}, id="extra-env"),
    pytest.param({"fabric_ipv4": "192.168.100.50"}, id="head-address"),
    pytest.param({"restart_policy": "unless-stopped"}, id="restart-policy"),
]


@pytest.mark.parametrize("change", CHANGES)
def test_any_change_to_a_node_changes_the_fingerprint(change):
    before = plan_engine([node(0), node(1)], CLUSTER)["deployment"]
    assert plan_engine([node(0, **change), node(1)], CLUSTER)["deployment"] != before


def test_the_same_inputs_give_the_same_fingerprint_and_the_backend_changes_it():
    first = plan_engine([node(0), node(1)], CLUSTER)["deployment"]
    assert plan_engine([node(0), node(1)], dict(CLUSTER))["deployment"] == first
    assert plan_engine([node(0), node(1)], cluster(backend="ray"))["deployment"] != first
    assert plan_engine([node(0), node(1)], cluster(api_key_sha256="0" * 64))["deployment"] != first


BAD = [
    pytest.param([], CLUSTER, "at least one node", id="no-nodes"),
    pytest.param([node(0), node(0)], CLUSTER, "listed twice", id="twice"),
    pytest.param([node(0), node(1)], cluster(backend="grpc"), "backend must be", id="backend"),
    pytest.param([node(0, fabric_ipv4=None), node(1)], CLUSTER, "'fabric_ipv4'", id="no-address"),
    pytest.param([node(0, engine=None), node(1)], CLUSTER, "'engine'", id="no-engine"),
]


@pytest.mark.parametrize(("nodes", "settings", "words"), BAD)
def test_unusable_inputs_name_what_is_missing(nodes, settings, words):
    with pytest.raises(EnginePlanError, match=words):
        plan_engine(nodes, settings)


def running(plan, host, **state):
    labels = {"io.gb10-serving.deployment": plan["deployment"]}
    labels.update(state.pop("labels", {}))
    status = {"Running": True, "Restarting": False, "Status": "running", "ExitCode": 0}
    status.update(state)
    return {"exists": True, "container": {"State": status, "Config": {"Labels": labels}}}


def healthy(plan):
    return {host: running(plan, host) for host in plan["ranks"]}


def test_a_healthy_cluster_as_planned_has_no_reason_to_restart():
    plan = plan_engine([node(0), node(1)], CLUSTER)
    assert restart_reasons(plan, healthy(plan), 200) == []


REASONS = [
    pytest.param(
        lambda p: {"spark1": {"exists": False, "container": None}},
        200,
        [],
        ["spark1: no engine container"],
        id="worker-missing",
    ),
    pytest.param(
        lambda p: {"spark1": running(p, "spark1", Running=False, Status="exited", ExitCode=137)},
        200,
        [],
        ["spark1: the engine is exited (exit code 137)"],
        id="worker-exited",
    ),
    pytest.param(
        lambda p: {"spark0": running(p, "spark0", Restarting=True, Status="restarting")},
        200,
        [],
        ["spark0: the engine is restarting (exit code 0)"],
        id="head-restarting",
    ),
    pytest.param(
        lambda p: {"spark1": running(p, "spark1", labels={"io.gb10-serving.deployment": "old"})},
        200,
        [],
        ["spark1: the deployment changed"],
        id="fingerprint",
    ),
    pytest.param(
        lambda p: {
            "spark0": {
                "exists": True,
                "container": {"State": {"Running": True}, "Config": {"Labels": None}},
            }
        },
        200,
        [],
        ["spark0: the deployment changed"],
        id="no-labels",
    ),
    pytest.param(lambda p: {}, -1, [], ["spark0: /health answers -1"], id="health-refused"),
    pytest.param(lambda p: {}, None, [], ["spark0: /health answers nothing"], id="health-none"),
    pytest.param(lambda p: {}, 503, [], ["spark0: /health answers 503"], id="health-503"),
    pytest.param(
        lambda p: {"spark0": running(p, "spark0", labels={"io.gb10-serving.api-users": "al,bo"})},
        200,
        ["bo", "cy"],
        ["API users added: cy; API users removed: al"],
        id="users-changed",
    ),
    pytest.param(
        lambda p: {},
        200,
        ["al"],
        ["API users added: al"],
        id="first-user",
    ),
]


@pytest.mark.parametrize(("changes", "health", "users", "wanted"), REASONS)
def test_each_difference_names_its_node_and_cause(changes, health, users, wanted):
    plan = plan_engine([node(0), node(1)], CLUSTER)
    current = healthy(plan)
    current.update(changes(plan))
    assert restart_reasons(plan, current, health, api_users=users) == wanted


def test_a_stopped_head_is_not_asked_for_health_and_reasons_follow_rank_order():
    plan = plan_engine([node(n) for n in range(3)], CLUSTER)
    current = {
        "spark2": {"exists": False},
        "spark0": running(plan, "spark0", Running=False, Status="exited", ExitCode=1),
        "spark1": running(plan, "spark1", labels={"io.gb10-serving.deployment": "x"}),
    }
    assert restart_reasons(plan, current, None) == [
        "spark0: the engine is exited (exit code 1)",
        "spark1: the deployment changed",
        "spark2: no engine container",
    ]


# docker inspect of the converged lab's head engine (Config and HostConfig, its VLLM_API_KEY
# left out) and the same node's vllm_planned, read by the doctor's entry point `planned` on
# that lab a moment later.
VLLM_FIXTURES = Path(__file__).parent / "fixtures" / "vllm"
INSPECT = json.loads((VLLM_FIXTURES / "engine-inspect-lab-node0.json").read_text())
PLANNED = json.loads((VLLM_FIXTURES / "engine-planned-lab-node0.json").read_text())


def test_the_lab_head_runs_exactly_the_spec_it_was_planned_with():
    assert INSPECT["Config"]["Labels"]["io.gb10-serving.deployment"] == PLANNED["deployment"]
    # Docker's own spelling (container:<ID>, ":rw" binds, string log options) is no difference.
    assert INSPECT["HostConfig"]["NetworkMode"].startswith("container:")
    assert spec_differences(PLANNED["spec"], INSPECT) == []


def _set_env(name, value):
    return lambda spec: spec["env"].update({name: value})


DRIFTS = [
    (_set_env("NCCL_IB_GID_INDEX", "5"), "NCCL_IB_GID_INDEX: runs '3', the plan '5'"),
    (_set_env("GB10_PROBE", "1"), "GB10_PROBE: runs not set, the plan '1'"),
    (_set_env("HF_TOKEN", "hf_secret_value"), "HF_TOKEN: runs not set, the plan (a secret)"),
    (lambda spec: spec["command"].append("--enforce-eager"), "the plan adds `--enforce-eager`"),
    (lambda spec: spec["command"].pop(), "the plan drops"),
    (
        lambda spec: spec["command"].extend(["--api-key", "sk-secret-value"]),
        "adds `--api-key <redacted>",
    ),
    (lambda spec: spec.update(image="gb10-lab-engine:other"), "the image: runs "),
    (
        lambda spec: spec.update(restart_policy="always"),
        "policy: runs unless-stopped, the plan always",
    ),
    (lambda spec: spec.update(user="0:0"), "the user: runs 1000:1000, the plan 0:0"),
    (lambda spec: spec["volumes"].pop(), "the mounts: runs "),
    (lambda spec: spec.update(log_options={"max-size": "1m"}), "the log options: runs "),
]


@pytest.mark.parametrize(("change", "words"), DRIFTS)
def test_each_difference_from_the_plan_is_named_and_no_secret_shown(change, words):
    spec = copy.deepcopy(PLANNED["spec"])
    change(spec)
    found = spec_differences(spec, INSPECT)
    assert len(found) == 1, found
    assert words in found[0]
    assert "secret_value" not in found[0]
