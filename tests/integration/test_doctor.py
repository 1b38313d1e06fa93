"""The doctor (playbooks/doctor.yml) on the converged lab: read only, one report, and each
fault the field reports named on its node with the fix.

| fault                                  | how the lab makes it                          |
|----------------------------------------|-----------------------------------------------|
| a wrong owner in the cache             | a file of node1's cache chowned to root       |
| the GID index moved under the engine   | node0's GID tree laid again with index 5      |
| an MTU mismatch between the nodes      | the host end of node1's cable set to MTU 1500 |
| a node running a different image       | node1's engine container stood in for (below) |
| a killed worker behind a serving head  | node1's worker killed (test_watchdog.py)      |

Each puts the lab back itself. The killed worker is tests/integration/test_watchdog.py's:
the doctor names it there, then the watchdog brings the cluster back (one engine boot for
both). The different image is a lab shortcut, named as one: node1's engine container is
renamed aside (it goes on running, its rank untouched) and a container of another image
(the engine image with one label more, so another image ID) takes its name, labels and
environment and runs no engine. A real engine of another image costs a cluster boot, and
the doctor reads the same fields of either. A wrong socket ifname and the other verdicts
are unit-tested on this lab's captured evidence
(tests/unit/plugins/module_utils/test_doctor_judge.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from conftest import (
    ENGINES,
    NODE_CONTAINERS,
    REPORTS,
    ROOT,
    api_key,
    engines_state,
    inspect,
    run_playbook,
)
from test_fabric import cable_end, host_link

DOCTOR = ROOT / "playbooks" / "doctor.yml"
CACHE = "/var/lib/gb10-lab/{node}/huggingface"  # node_hf_cache_dir in inventory/lab


def _labctl():
    spec = importlib.util.spec_from_file_location("labctl", ROOT / "lab" / "labctl.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("labctl", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def doctor(tmp_path: Path, name: str, **extravars):
    """Run the doctor with its report under tmp_path/name; the run and the report."""
    out = tmp_path / name
    run = run_playbook(DOCTOR, out, extravars={"doctor_report_dir": str(out), **extravars})
    pages = sorted((out / "doctor").glob("*/doctor.json"))
    report = json.loads(pages[-1].read_text()) if pages else None
    return run, report


def verdict(report, check, host):
    return next(c for c in report["checks"] if c["check"] == check and c["host"] == host)


def failing(report):
    return {(c["check"], c["host"]) for c in report["checks"] if c["status"] == "fail"}


def test_a_healthy_cluster_passes_and_nothing_changes(converged, tmp_path):
    before = engines_state()
    run, report = doctor(tmp_path, "real", vllm_canary_max_tokens=2)
    assert run.status == "successful", run.failure_messages
    assert run.count("changed") == 0
    assert report["status"] != "fail", [c for c in report["checks"] if c["status"] == "fail"]
    assert verdict(report, "canary completion", None)["evidence"].startswith(
        "a 2-token completion came back"
    )
    assert verdict(report, "ranks", "node1")["evidence"].startswith("1 of 1 worker processes")
    # Each node runs the deployment the inventory plans now (the entry point `planned`).
    fingerprint = verdict_fingerprint()
    for host in ("node0", "node1"):
        planned = verdict(report, "plan", host)
        assert planned["status"] == "ok", planned
        assert fingerprint[:12] in planned["evidence"]
    # The page beside the JSON, and the summary in the play output.
    (page,) = (tmp_path / "real" / "doctor").glob("*/doctor.md")
    assert page.read_text().startswith(f"# gb10.serving doctor: {report['status']}")
    assert any("doctor: ok (" in m for m in run.debug_messages), run.debug_messages
    # Check mode: the same verdict, still nothing changed, the report written all the same.
    check = run_playbook(
        DOCTOR,
        tmp_path / "check",
        extravars={"doctor_report_dir": str(tmp_path / "check")},
        check=True,
    )
    assert check.status == "successful", check.failure_messages
    assert check.count("changed") == 0
    assert list((tmp_path / "check" / "doctor").glob("*/doctor.json"))
    assert engines_state() == before
    key = api_key()
    for text in (run.stdout, json.dumps(run.events_data), json.dumps(report), page.read_text()):
        assert key not in text


def test_the_thresholds_and_a_regression_are_the_inventory_s(converged, tmp_path):
    # This deployment's real bench report (site.yml wrote it), and a later one 50% slower.
    fingerprint = verdict_fingerprint()
    (first,) = sorted(REPORTS.glob(f"*-{fingerprint[:12]}/bench.json"))[:1]
    out = tmp_path / "thresholds"
    slower = json.loads(first.read_text())
    slower["summary"]["single_stream"] *= 0.5
    for stamp, doc in (
        ("20000101T000000Z", json.loads(first.read_text())),
        ("20990101T000000Z", slower),
    ):
        (out / f"{stamp}-{fingerprint[:12]}").mkdir(parents=True)
        (out / f"{stamp}-{fingerprint[:12]}" / "bench.json").write_text(json.dumps(doc))
    run, report = doctor(
        tmp_path,
        "thresholds",
        doctor_fatal=False,
        doctor_min_free_gib=10**6,
        doctor_min_available_gib=10**4,
        doctor_max_regression_pct=60,
    )
    # Failing checks, reported, and the play goes on (doctor_fatal: false).
    assert run.status == "successful", run.failure_messages
    assert report["status"] == "fail"
    assert {("free disk", "node0"), ("memory available", "node1")} <= failing(report)
    # 50% slower is within 60%: compared, not failed.
    regression = verdict(report, "single_stream", None)
    assert regression["status"] == "ok"
    assert "(-50.0%)" in regression["evidence"]


def verdict_fingerprint() -> str:
    proc = subprocess.run(
        [
            "docker",
            "inspect",
            "-f",
            '{{index .Config.Labels "io.gb10-serving.deployment"}}',
            ENGINES["node0"],
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


@contextlib.contextmanager
def another_image_under(container: str, env_file: Path):
    """While inside: a container of another image, running no engine, under the engine
    container's name, with its labels and environment (secrets left out); the engine itself
    renamed aside, still running. Put back after: the engine under its name, the stand-in
    and its image gone."""
    engine = inspect(container)
    other = "gb10-lab-other-engine:doctor"
    aside = f"{container}-aside"
    subprocess.run(
        ["docker", "build", "-q", "-t", other, "-"],
        input=f"FROM {engine['Image']}\nLABEL io.gb10-serving.test=another-image\n",
        capture_output=True,
        text=True,
        check=True,
    )
    env_file.write_text(
        "".join(
            f"{line}\n"
            for line in engine["Config"]["Env"]
            if not any(word in line.split("=", 1)[0] for word in ("KEY", "TOKEN", "SECRET"))
        )
    )
    labels = [f"--label={name}={value}" for name, value in engine["Config"]["Labels"].items()]
    subprocess.run(["docker", "rename", container, aside], check=True)
    try:
        subprocess.run(
            ["docker", "run", "-d", "--name", container]
            + ["--network", engine["HostConfig"]["NetworkMode"]]
            + labels
            + ["--env-file", str(env_file), "--entrypoint", "sleep", other, "infinity"],
            capture_output=True,
            check=True,
        )
        yield
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)
        subprocess.run(["docker", "rename", aside, container], check=True)
        subprocess.run(["docker", "rmi", other], capture_output=True, check=False)


def test_four_faults_at_once_are_each_named_on_their_node(converged, tmp_path):
    """A root-owned file in node1's cache, node0's GID moved to index 5, the host end of
    node1's cable at MTU 1500 and another image under node1's engine name, all in one doctor
    run (one run, four verdicts, each on its node and no other); each fault is put back
    after."""
    stray = f"{CACHE.format(node='node1')}/gb10-doctor-stray"
    node = NODE_CONTAINERS["node1"]
    labctl = _labctl()
    node0 = next(n for n in labctl.NODES if n.name == "node0")
    before = engines_state()
    subprocess.run(["docker", "exec", node, "sh", "-c", f"echo x > {stray}"], check=True)
    labctl.lay_gid_tree(dataclasses.replace(node0, gid_index=5))
    try:
        with (
            host_link(cable_end("node1"), "mtu", "1500", restore=("mtu", "9000")),
            another_image_under(ENGINES["node1"], tmp_path / "engine.env"),
        ):
            other_image = inspect(ENGINES["node1"])["Image"]
            run, report = doctor(tmp_path, "faults")
        owner = subprocess.run(
            ["docker", "exec", node, "stat", "-c", "%u:%g", stray],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    finally:
        subprocess.run(["docker", "exec", node, "rm", "-f", stray], check=True)
        labctl.lay_gid_tree(node0)
    assert run.status == "failed"
    assert any("cache owner on node1" in m for m in run.failure_messages + run.debug_messages)

    # The wrong owner: counted, never repaired (the file was still root's).
    found = verdict(report, "cache owner", "node1")
    assert found["status"] == "fail"
    assert stray in found["evidence"]
    assert "run site.yml" in found["fix"]
    assert verdict(report, "cache owner", "node0")["status"] == "ok"
    assert owner == "0:0"

    # The GID index moved under the running engine.
    found = verdict(report, "gid index", "node0")
    assert found["status"] == "fail"
    assert "NCCL_IB_GID_INDEX=3" in found["evidence"]
    assert "rocep1s0f1:1 5" in found["evidence"]
    assert "run site.yml" in found["fix"]
    assert verdict(report, "gid index", "node1")["status"] == "ok"
    # The plan made from the table now is not the one node0's engine was started with: its two
    # devices no longer agree on an index, so NCCL is told to pick each one's RoCE v2 IPv4 GID.
    found = verdict(report, "plan", "node0")
    assert found["status"] == "fail"
    assert "NCCL_IB_ROCE_VERSION_NUM: runs not set, the plan '2'" in found["evidence"]
    # node1's stand-in is told apart from the spec planned for it, by its image first.
    found = verdict(report, "plan", "node1")
    assert found["status"] == "fail"
    assert "the image: runs gb10-lab-other-engine:doctor, the plan " in found["evidence"]

    # The MTU mismatch, between the nodes: both ports keep their MTU, the pings over that
    # half fail both ways, the other half is not blamed.
    for host, peer in (("node0", "192.168.100.11"), ("node1", "192.168.100.10")):
        found = verdict(report, f"ping enp1s0f1np1 -> {peer}", host)
        assert found["status"] == "fail"
        assert found["evidence"].startswith("MTU mismatch")
        assert "MTU 9000" in found["fix"]
    assert verdict(report, "link enp1s0f1np1", "node1")["status"] == "ok"
    assert verdict(report, "ping enP2p1s0f1np1 -> 192.168.101.11", "node0")["status"] == "ok"

    # Another image on node1: both image IDs named with their nodes, and the fix.
    found = verdict(report, "image", None)
    assert found["status"] == "fail"
    head_image = inspect(ENGINES["node0"])["Image"]
    assert head_image != other_image
    assert f"{head_image} on node0" in found["evidence"]
    assert f"{other_image} on node1" in found["evidence"]
    assert "pulls and runs the image the head's plan pins" in found["fix"]
    # Nothing was restarted.
    assert engines_state() == before
