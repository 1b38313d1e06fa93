"""Engine stage on the lab: the real CPU vLLM at tensor parallel 2 across the two nodes."""

from __future__ import annotations

import json
import subprocess

import pytest
import requests
import yaml
from conftest import (
    ENGINES,
    KEY_FILE,
    LAB_INVENTORY,
    MODEL,
    NODE_CONTAINERS,
    SITE,
    api_key,
    api_url,
    chat,
    engines_state,
    inspect,
    run_playbook,
    task_facts,
)

HEAD_FABRIC_IP = "192.168.100.10"
WORKER_FABRIC_IP = "192.168.100.11"
# The lab's per-node variables (vllm_extra_env among them), by node.
LAB_HOSTVARS = {
    node: values
    for group in yaml.safe_load((LAB_INVENTORY / "hosts.yml").read_text(encoding="utf-8"))[
        "gb10_cluster"
    ]["children"].values()
    for node, values in group["hosts"].items()
}


def test_chat_completion_with_the_key_returns_text(converged):
    response = chat(api_key())
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == MODEL
    assert body["usage"]["completion_tokens"] >= 4
    assert isinstance(body["choices"][0]["message"]["content"], str)
    assert body["choices"][0]["message"]["content"]


@pytest.mark.parametrize("key", [None, "not-the-key-0123456789"], ids=["no-key", "wrong-key"])
def test_request_without_the_key_is_refused(converged, key):
    assert chat(key).status_code == 401
    assert requests.get(f"{api_url()}/v1/models", timeout=30).status_code == 401


def test_the_key_is_kept_secret(converged):
    key = api_key()
    assert len(key) >= 16
    assert KEY_FILE.stat().st_mode & 0o777 == 0o600
    assert KEY_FILE.parent.stat().st_mode & 0o777 == 0o700
    assert key not in converged.stdout
    assert key not in json.dumps(converged.events_data)
    head = inspect(ENGINES["node0"])
    assert key not in json.dumps(head["Config"]["Cmd"])
    secret = subprocess.run(
        [
            "docker",
            "exec",
            NODE_CONTAINERS["node0"],
            "stat",
            "-c",
            "%a %U",
            "/etc/gb10-serving/vllm-secret.env",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert secret == ["600", "root"]


def test_ranks_meet_over_the_fabric(converged):
    worker_log = subprocess.run(
        ["docker", "logs", ENGINES["node1"]], capture_output=True, text=True, check=True
    )
    text = worker_log.stdout + worker_log.stderr
    assert f"distributed_init_method=tcp://{HEAD_FABRIC_IP}:29500" in text
    assert "world_size=2 rank=1" in text
    connections = subprocess.run(
        ["docker", "exec", NODE_CONTAINERS["node0"], "ss", "-Htn", "state", "established"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pairs = [line.split()[-2:] for line in connections.splitlines() if line.strip()]
    assert any(
        local.startswith(HEAD_FABRIC_IP + ":") and peer.startswith(WORKER_FABRIC_IP + ":")
        for local, peer in pairs
    ), connections


def test_the_commands_carry_ranks_and_the_fabric_env(converged):
    head, worker = inspect(ENGINES["node0"]), inspect(ENGINES["node1"])
    head_cmd, worker_cmd = head["Config"]["Cmd"], worker["Config"]["Cmd"]
    for cmd, rank in ((head_cmd, "0"), (worker_cmd, "1")):
        assert cmd[cmd.index("--node-rank") + 1] == rank
        assert cmd[cmd.index("--master-addr") + 1] == HEAD_FABRIC_IP
        assert cmd[cmd.index("--nnodes") + 1] == "2"
        assert len(cmd[cmd.index("--revision") + 1]) == 40
    assert "--headless" in worker_cmd
    assert "--headless" not in head_cmd
    for info, ip in ((head, HEAD_FABRIC_IP), (worker, WORKER_FABRIC_IP)):
        env = dict(item.split("=", 1) for item in info["Config"]["Env"])
        assert env["VLLM_HOST_IP"] == ip
        assert env["GLOO_SOCKET_IFNAME"] == "enp1s0f1np1"
        assert env["HF_HOME"] == "/cache/huggingface"
        assert env["TRITON_CACHE_DIR"] == "/cache/huggingface/jitcache/triton"
        assert info["Config"]["User"] == "1000:1000"
        assert "VLLM_API_KEY" not in env or info is head
        labels = info["Config"]["Labels"]
        assert (
            labels["io.gb10-serving.deployment"]
            == head["Config"]["Labels"]["io.gb10-serving.deployment"]
        )
    # vllm_extra_env, a host variable in the lab: each rank on its own core, over the rest.
    for node, info in (("node0", head), ("node1", worker)):
        env = dict(item.split("=", 1) for item in info["Config"]["Env"])
        for name, value in LAB_HOSTVARS[node]["vllm_extra_env"].items():
            assert env[name] == value, (node, name)


def test_the_lab_engines_ask_for_no_gpu_rdma_device_or_memlock(converged):
    """gb10_platform lab: no GPU request and no /dev/infiniband (a Spark gets both);
    vllm_memlock_unlimited false in the lab: no memlock ulimit (the default raises it)."""
    for node, name in ENGINES.items():
        host = inspect(name)["HostConfig"]
        assert not host.get("DeviceRequests"), node
        devices = [device["PathOnHost"] for device in host.get("Devices") or []]
        assert not [path for path in devices if path.startswith("/dev/infiniband")], node
        ulimits = [limit["Name"] for limit in host.get("Ulimits") or []]
        assert "memlock" not in ulimits, node


def test_the_engines_gain_no_privilege_and_run_one_pinned_image(converged):
    """No new privileges and no capability; every engine starts from the image ID of the
    recipe's tag (the lab's engine image is built here, so it has no registry digest), and
    the service facts say so."""
    image = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", "gb10-lab-engine:lab"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert image.startswith("sha256:")
    for node, name in ENGINES.items():
        container = inspect(name)
        assert container["HostConfig"]["SecurityOpt"] == ["no-new-privileges:true"], node
        assert container["HostConfig"]["CapDrop"] == ["ALL"], node
        assert not container["HostConfig"].get("CapAdd"), node
        assert container["Image"] == image, node
        assert container["Config"]["Image"] == image, node
    service = task_facts(converged, "Keep the cluster's service facts")["node0"]["vllm_service"]
    assert service["image"] == "gb10-lab-engine:lab"
    assert service["image_pinned"] == image


def test_nodes_holding_different_images_stop_before_the_engines_change(converged, tmp_path):
    """node1's recipe names another image (the lab nodes share one Docker daemon, so a
    different tag stands in for a node that pulled the tag at another time): the run stops
    at the image check, naming node1 and what each node holds, and the engines are as they
    were."""
    other = "gb10-lab-other-engine:test"
    node_image = inspect(NODE_CONTAINERS["node0"])["Image"]
    subprocess.run(["docker", "tag", node_image, other], check=True)
    overlay = tmp_path / "other_image_on_node1.yml"
    overlay.write_text(
        "gb10_cluster:\n  children:\n    gb10_workers:\n      hosts:\n        node1:\n"
        f"          vllm_recipe_overrides: {{container: '{other}'}}\n"
    )
    before = engines_state()
    try:
        run = run_playbook(SITE, tmp_path, inventories=(LAB_INVENTORY, overlay), tags="vllm")
    finally:
        subprocess.run(["docker", "rmi", other], check=True, capture_output=True)
    assert run.status == "failed"
    said = " ".join(" ".join(run.failure_messages).split())
    assert "is not the same image on every node" in said
    assert "node1 differs" in said
    assert "Nothing has been changed on the engines." in said
    assert engines_state() == before


def test_boot_log_facts(converged):
    facts = task_facts(converged, "Keep this node's boot facts")
    head = facts["node0"]["vllm_boot"]
    assert head["version"] == "0.32.0"
    assert head["kv_cache_device"] == "CPU"
    assert head["kv_cache_tokens"] > 100000
    assert head["max_concurrency"] >= 10
    assert head["max_concurrency_request_tokens"] == 512
    assert head["world_size"] == 2
    assert head["ready"] is True
    assert head["errors"] == []
    assert facts["node1"]["vllm_boot"]["rank"] == 1


def test_check_mode_on_a_serving_cluster_changes_nothing(converged, tmp_path):
    before = engines_state()
    run = run_playbook(SITE, tmp_path, check=True)
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 0
    assert engines_state() == before
