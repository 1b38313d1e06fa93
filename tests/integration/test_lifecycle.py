"""A deployment's life on the lab, one scenario that shares its engine boots.

Each step below needs engines to start (the most expensive thing in the suite), so they run
in one sequence, each step starting from what the one before left:

1. sweep: two variants; "broken" (an unknown engine flag) fails its boot, with its cause and
   both logs saved, and the sweep goes on; "short" (half the context) boots, is measured and,
   being the best, stays (the converge's own boot facts stand for the starting recipe);
2. crash: a new deployment, bob removed from the users, whose worker engine is killed
   (SIGKILL, as the OOM killer does) while the cluster boots: the run said why it restarts
   (bob removed), then fails with the cause, every engine stopped;
3. recovery for bob alone, his key no longer given, on a recipe from sparkrun's registry:
   playbooks/import_sparkrun.yml writes its vars file and site.yml deploys it as written
   (-e @FILE), adapted to the lab by overrides: the tiny model, the lab's engine image, tensor
   parallel 2, the lab's context and CPU settings, and `-O0` added to its command (the lab
   shortcut every lab recipe takes, see inventory/lab). The run restarts (the engines are
   stopped) and serves the imported recipe's own flags; alice's key is locked out and her
   client directory removed; bob's given key is rotated (a new one generated, the given one
   refused), and the run says so;
4. the inventory in check mode: it would add alice back and restart, onto the deployment the
   converge started (the same fingerprint), and changes nothing.

The lab is left serving the inventory's recipe for bob only, with a generated key: this is
the last module of the integration stage (conftest orders `disruptive` last), the Molecule
stage after it deploys its own inventory, and the next session's converge puts the inventory
back. A real run of step 4 would cost one more engine boot and prove nothing step 4 does not.

Steps 2 to 4 run site.yml with --tags vllm, as an owner who changes only the engine does:
the preflight and every role's facts still run (they are tagged always), the fabric, node
and firewall stages' changes do not (the converge, the re-run and the Molecule scenario
prove whole runs of site.yml); each saves about 25 s of tasks that would change nothing.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
import yaml
from conftest import (
    CLIENTS,
    ENGINE_PLAN_TASK,
    ENGINES,
    LAB_VARS,
    LOG_DIR,
    MODEL,
    REPORTS,
    ROOT,
    SITE,
    api_key,
    assert_no_key_in,
    chat,
    engines_state,
    run_playbook,
    saved_log_dirs,
    task_facts,
    user_key,
)

pytestmark = pytest.mark.disruptive

SWEEP = ROOT / "playbooks" / "sweep.yml"
HEAD = ENGINES["node0"]
# Small bench settings for the variants: the sweep's pipeline is the point, not the figures.
SMALL_BENCH = {
    "bench_concurrency": [1],
    "bench_warmup_requests": 1,
    "bench_warmup_max_tokens": 4,
    "bench_prompts_per_concurrency": 1,
    "bench_output_len": 8,
    "bench_deep_input_len": 200,
    "bench_deep_output_len": 8,
}
VARIANTS = [
    {"name": "broken", "overrides": {"dtype": "bfloat16 --no-such-flag"}},
    {"name": "short", "overrides": {"max_model_len": 256}},
]
ONLY_ALICE = {"vllm_api_users": [{"name": "alice"}]}
# Bob is listed without the key the inventory gives him: the given key must be rotated.
ONLY_BOB_UNKEYED = {"vllm_api_users": [{"name": "bob"}]}
FINGERPRINT_TASK = ENGINE_PLAN_TASK
IMPORT = ROOT / "playbooks" / "import_sparkrun.yml"
# A recipe of sparkrun's registry (tests/unit/.../fixtures/sparkrun/registry/README.md): its
# command hard-codes flags the lab's tiny model can serve with (a GLM tool and reasoning
# parser, its batch and memory settings) and leaves tensor parallel to a placeholder.
REGISTRY_RECIPE = (
    ROOT
    / "tests/unit/plugins/module_utils/fixtures/sparkrun/registry"
    / "experimental-recipes_eugr-vllm_glm-4.7-flash-awq-vllm.yaml"
)
REGISTRY_FLAGS = (
    "--tool-call-parser glm47",
    "--reasoning-parser glm45",
    "--enable-auto-tool-choice",
    "--max-num-batched-tokens 4096",
    "--gpu-memory-utilization 0.7",
    "-tp 2",
)


def head_state() -> tuple[str, str, str]:
    """The head engine's ID, deployment label and command line."""
    out = subprocess.run(
        [
            "docker",
            "inspect",
            "-f",
            '{{.Id}}|{{index .Config.Labels "io.gb10-serving.deployment"}}|{{json .Config.Cmd}}',
            HEAD,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    container_id, label, command = out.split("|", 2)
    return container_id, label, " ".join(json.loads(command))


def started_at(container: str) -> str:
    return subprocess.run(
        ["docker", "inspect", "-f", "{{.State.StartedAt}}", container],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def crash_run(tmp_path):
    """site.yml on a changed deployment without bob, its worker killed 5 s into the boot."""
    worker = ENGINES["node1"]
    first_start = started_at(worker)
    result = {}
    # A changed engine environment is a new deployment: site.yml restarts both engines.
    runner = threading.Thread(
        target=lambda: result.setdefault(
            "run",
            run_playbook(
                SITE,
                tmp_path,
                extravars={
                    **ONLY_ALICE,
                    "vllm_recipe_overrides": {"env": {"GB10_FAULT_CASE": "crash"}},
                },
                tags="vllm",
            ),
        )
    )
    runner.start()
    deadline = time.monotonic() + 240
    while started_at(worker) in ("", first_start) and time.monotonic() < deadline:
        time.sleep(1)
    restarted = started_at(worker) not in ("", first_start)
    if restarted:
        time.sleep(5)
        subprocess.run(["docker", "kill", worker], check=True, capture_output=True)
    runner.join(timeout=600)
    return result["run"], restarted


def lab_adaptation(imported: dict) -> dict:
    """vllm_recipe_overrides that put an imported recipe on the lab, from the lab's recipe."""
    lab_recipe = LAB_VARS["vllm_recipe"]
    assert lab_recipe["model"] == MODEL
    return {
        "model": MODEL,
        "container": lab_recipe["container"],
        **{
            key: lab_recipe["defaults"][key]
            for key in ("tensor_parallel", "max_model_len", "max_num_seqs")
        },
        "env": lab_recipe["env"],
        # Lab shortcut: no torch.compile warm-up (inventory/lab says why).
        "command": imported["vllm_recipe"]["command"].rstrip() + " -O0",
    }


def said_by(run) -> str:
    """What a step that had to succeed said (its debug messages), after checking it did."""
    assert run.status == "successful", run.failure_messages
    return "\n".join(run.debug_messages)


def restore_key(name: str, key: str) -> None:
    """Put a user's generated key back where the role keeps it (0700 directory, 0600 file)."""
    directory = CLIENTS / name
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / "api-key"
    path.touch(mode=0o600)
    path.write_text(f"{key}\n")


@pytest.fixture(scope="module")
def life(converged, tmp_path_factory):
    """Run the four steps, each from where the one before left the lab."""
    steps = {"start": head_state(), "keys": {"alice": user_key("alice"), "bob": user_key("bob")}}
    try:
        logs = saved_log_dirs()
        sweeps = set(REPORTS.glob("*-sweep"))
        steps["sweep"] = run_playbook(
            SWEEP,
            tmp_path_factory.mktemp("sweep"),
            extravars={
                **SMALL_BENCH,
                "bench_sweep_variants": VARIANTS,
                "bench_sweep_keep": "best",
                "bench_sweep_rank_by": "max_concurrency",
            },
        )
        steps["sweep_dirs"] = sorted(set(REPORTS.glob("*-sweep")) - sweeps)
        steps["sweep_logs"] = sorted(saved_log_dirs() - logs)
        steps["after_sweep"] = head_state()

        logs = saved_log_dirs()
        steps["crash"], steps["crash_restarted"] = crash_run(tmp_path_factory.mktemp("crash"))
        steps["crash_logs"] = sorted(saved_log_dirs() - logs)
        steps["after_crash"] = engines_state()

        imported = tmp_path_factory.mktemp("import") / "registry-vars.yml"
        steps["import"] = run_playbook(
            IMPORT,
            imported.parent,
            extravars={
                "sparkrun_recipe_file": str(REGISTRY_RECIPE),
                "sparkrun_vars_dest": str(imported),
            },
        )
        steps["imported"] = yaml.safe_load(imported.read_text())
        steps["remove"] = run_playbook(
            SITE,
            tmp_path_factory.mktemp("remove"),
            vars_files=(imported,),
            extravars={
                **ONLY_BOB_UNKEYED,
                "vllm_recipe_overrides": lab_adaptation(steps["imported"]),
            },
            tags="vllm",
        )
        steps["after_remove"] = head_state()
        steps["alice_after_remove"] = chat(steps["keys"]["alice"]).status_code
        steps["alice_dir_after_remove"] = (CLIENTS / "alice").exists()
        steps["bob_given_after_rotation"] = chat(steps["keys"]["bob"]).status_code
        steps["keys"]["bob rotated"] = user_key("bob")
        steps["bob_rotated_after_rotation"] = chat(steps["keys"]["bob rotated"]).status_code
        steps["bob_files_after_rotation"] = sorted(p.name for p in (CLIENTS / "bob").iterdir())
    finally:
        # Whatever failed above, the inventory in check mode: it must change nothing. Alice's
        # key is put back first, as an owner restores a backup, so that the check run plans
        # the converge's deployment (the users' keys are in its fingerprint).
        restore_key("alice", steps["keys"]["alice"])
        steps["before_restore"] = engines_state()
        steps["restore"] = run_playbook(
            SITE, tmp_path_factory.mktemp("restore"), check=True, tags="vllm"
        )
        steps["after_restore"] = engines_state()
    return steps


def test_the_sweep_compares_every_variant(life, converged):
    run, new = life["sweep"], life["sweep_dirs"]
    assert run.status == "successful", run.failure_messages
    assert len(new) == 1, new
    sweep = json.loads((new[0] / "sweep.json").read_text())
    rows = {row["name"]: row for row in sweep["variants"]}
    assert list(rows) == ["broken", "short"]
    # Boot facts from the variant's own boot log: half the context of the starting recipe
    # (whose boot the converge read), twice the requests the same KV pool holds.
    start = task_facts(converged, "Keep this node's boot facts")["node0"]["vllm_boot"]
    short = rows["short"]["values"]
    assert short["kv_cache_tokens"] == start["kv_cache_tokens"] > 0
    assert short["max_concurrency"] == pytest.approx(2 * start["max_concurrency"], rel=0.01)
    assert short["single_stream"] > 0
    assert sweep["best"]["max_concurrency"] == ["short"]
    # The broken variant is recorded with its cause; the sweep went on.
    assert "--no-such-flag" in rows["broken"]["failed"]
    assert set(rows["broken"]["values"].values()) == {None}
    markdown = (new[0] / "sweep.md").read_text()
    assert "| broken (failed) |" in markdown
    assert "- max concurrency: short" in markdown
    assert (new[0] / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((new[0] / "02" / "bench.json").read_text())["runs"]


def test_a_bad_engine_flag_fails_with_its_cause_stops_every_engine_and_keeps_both_logs(life):
    joined = "\n".join(life["sweep"].failure_messages)
    assert "--no-such-flag" in joined
    assert "Every engine is stopped" in joined
    (saved,) = life["sweep_logs"]
    logs = {path.name: path.read_text() for path in saved.iterdir()}
    assert set(logs) == {"node0.log", "node1.log"}
    assert all("--no-such-flag" in text for text in logs.values())
    assert saved.stat().st_mode & 0o777 == 0o700


def test_the_sweep_leaves_the_best_variant_running(life):
    before, after = life["start"], life["after_sweep"]
    assert "--max-model-len 256" in after[2]
    assert after[1] != before[1]


def test_the_engine_crashing_mid_run_fails_with_its_cause_and_stops_the_cluster(life):
    assert life["crash_restarted"], "site.yml did not restart the worker"
    run = life["crash"]
    assert run.status == "failed"
    joined = "\n".join(run.failure_messages)
    assert "The engine did not start" in joined
    assert "node1 (exited, exit code 137)" in joined
    # Nothing half-started is left serving, and both logs are kept on the controller.
    assert not any(state and state[2] for state in life["after_crash"].values())
    (saved,) = life["crash_logs"]
    assert {path.name for path in saved.iterdir()} == {"node0.log", "node1.log"}


def test_removing_a_user_says_the_engine_restarts_and_locks_them_out(life):
    # What check mode says of the same change: test_vllm.py (on a serving cluster).
    said_before_crash = "\n".join(life["crash"].debug_messages)
    assert "Restarting the engine on every node" in said_before_crash
    assert "API users removed: bob" in said_before_crash
    assert "vLLM reads its API keys only when it starts" in said_before_crash
    said = said_by(life["remove"])
    # The run after the crash names the stopped engines among its reasons.
    assert "Restarting the engine on every node" in said
    assert "node1: the engine is exited" in said
    assert "Removed the client directory and key of the API users no longer in" in said
    assert life["alice_after_remove"] == 401
    assert not life["alice_dir_after_remove"]


def test_a_registry_recipe_imported_and_adapted_to_the_lab_boots_with_its_own_flags(life):
    assert life["import"].status == "successful", life["import"].failure_messages
    recipe = life["imported"]["vllm_recipe"]
    assert recipe["model"] == "cyankiwi/GLM-4.7-Flash-AWQ-4bit"
    assert life["imported"]["vllm_distributed_backend"] == "mp"
    said_by(life["remove"])
    deployment, command = life["after_remove"][1:]
    assert command.startswith(f"vllm serve {MODEL} ")
    for flag in REGISTRY_FLAGS:
        assert f" {flag}" in command, (flag, command)
    # The recipe's own context length gave way to the lab's; the deployment is a new one.
    assert "--max-model-len 512" in command
    assert deployment not in (life["start"][1], life["after_sweep"][1])
    assert life["bob_rotated_after_rotation"] == 200


def test_a_key_no_longer_given_is_rotated_and_the_old_one_refused(life):
    said = said_by(life["remove"])
    assert "Rotating the key of the API users whose key is no longer given" in said
    assert "vllm_api_users: bob." in said
    keys = life["keys"]
    assert keys["bob rotated"] != keys["bob"]
    assert len(keys["bob rotated"]) == 48
    assert life["bob_given_after_rotation"] == 401
    assert life["bob_rotated_after_rotation"] == 200
    # A generated key carries no marker: the next run keeps it.
    assert life["bob_files_after_rotation"] == ["api-key", "client.json", "env"]


def test_the_inventory_would_add_the_user_back_onto_the_converge_s_deployment(life):
    run = life["restore"]
    said = said_by(run)
    assert "API users added: alice" in said
    assert "Check mode: this run would restart the engine on every node" in said
    # The plan is the converge's deployment again: the same fingerprint, and its recipe.
    fingerprints = task_facts(run, FINGERPRINT_TASK)
    assert sorted(fingerprints) == ["node0", "node1"]
    assert {facts["vllm_deployment"] for facts in fingerprints.values()} == {life["start"][1]}
    planned = fingerprints
    assert "--max-model-len 512" in " ".join(planned["node0"]["__vllm_node"]["spec"]["command"])
    assert life["after_restore"] == life["before_restore"]
    assert user_key("bob") == life["keys"]["bob rotated"]
    # Check mode wrote nothing: alice's directory holds the key put back, and nothing else.
    assert sorted(p.name for p in (CLIENTS / "alice").iterdir()) == ["api-key"]


def test_no_step_shows_a_key_and_no_saved_log_holds_one(life):
    keys = (api_key(), *life["keys"].values())
    for step in ("sweep", "crash", "import", "remove", "restore"):
        assert_no_key_in(life[step], keys)
    saved = list(LOG_DIR.rglob("*.log"))
    assert saved
    for path in saved:
        text = path.read_text()
        for key in keys:
            assert key not in text
