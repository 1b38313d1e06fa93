# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The real sparkrun judges our sparkrun export, and the import/export playbooks.

sparkrun 0.4.2 (``.venv-sparkrun``, made by ``scripts/setup.sh``; it needs Python 3.12) reads
what ``_sparkrun`` writes for the vllm role's default recipe and the lab's recipe:

- ``sparkrun recipe validate --json`` must accept it (exit 0, no error) and report exactly
  the warnings expected: ``managed-cache-env`` for the JIT cache variables it manages itself
  when the env is exported as it is, nothing once they are left to its ``runtime_cache``;
- ``sparkrun run --dry-run`` on two loopback hosts (a dry run probes no host) must print the
  serve command our own ``render_command`` gives, plus what sparkrun adds, each asserted:
  ``--served-model-name <model>`` everywhere, and on the head its rendezvous flags, the same
  flags the vllm role adds per node itself.

sparkrun runs offline with a HOME of its own: no registry (an empty registries.yaml), no
telemetry, no hub look-up. The playbooks run through ansible-runner on localhost only.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SPARKRUN = ROOT / ".venv-sparkrun" / "bin" / "sparkrun"
COLLECTIONS = ROOT / ".cache" / "collections"
FIXTURES = ROOT / "tests" / "unit" / "plugins" / "module_utils" / "fixtures"
FIXTURE = FIXTURES / "sparkrun" / "dspark-hybrid-v3.sparkrun.yaml"
ROLE_DEFAULTS = ROOT / "roles" / "vllm" / "defaults" / "main.yml"
ROLE_VARS = ROOT / "roles" / "vllm" / "vars" / "main.yml"
LAB_VARS = ROOT / "inventory" / "lab" / "group_vars" / "gb10_cluster.yml"
HOSTS = "127.0.0.2,127.0.0.3"
# What the vllm role fills {host} and {port} with by default (vllm_bind_address, vllm_port);
# sparkrun is given the same values (-o host=..., --port ...).
ROLE_VALUES = {"host": "0.0.0.0", "port": 8000}  # noqa: S104 - the engine listens on all addresses

if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))

from ansible_collections.gb10.serving.plugins.module_utils._sparkrun import (  # noqa: E402
    dump_recipe,
    export_recipe,
    import_recipe,
)
from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import (  # noqa: E402
    command_argv,
    merge_recipe,
    render_command,
)


def load_vars(path):
    with path.open(encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def inventory_recipe(path):
    """vllm_recipe with vllm_recipe_overrides, as the vllm role deploys it."""
    data = load_vars(path)
    return merge_recipe(data["vllm_recipe"], data.get("vllm_recipe_overrides") or {})


RECIPES = {
    "role-default": inventory_recipe(ROLE_DEFAULTS),
    "lab": inventory_recipe(LAB_VARS),
}
# Variables sparkrun 0.4.2 says it manages itself (managed-cache-env), per recipe.
MANAGED_ENV = {
    "role-default": [
        "FLASHINFER_WORKSPACE_BASE",
        "TORCH_EXTENSIONS_DIR",
        "TRITON_CACHE_DIR",
        "XDG_CACHE_HOME",
    ],
    "lab": ["TORCHINDUCTOR_CACHE_DIR"],
}


@pytest.fixture(scope="session")
def sparkrun_env(tmp_path_factory):
    if not os.access(SPARKRUN, os.X_OK):
        pytest.fail(f"{SPARKRUN.relative_to(ROOT)} is missing: run scripts/setup.sh")
    home = tmp_path_factory.mktemp("sparkrun-home")
    config = home / ".config" / "sparkrun"
    config.mkdir(parents=True)
    # No registry: sparkrun would otherwise try to clone its default recipe registries.
    (config / "registries.yaml").write_text("config_version: 99\nregistries: []\n")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SPARKRUN_", "XDG_", "HF_"))
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        SPARKRUN_NO_TELEMETRY="1",
        HF_HUB_OFFLINE="1",
    )
    return env


def sparkrun(env, *args):
    return subprocess.run(
        [str(SPARKRUN), *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def write_export(tmp_path, recipe, runtime_cache=False):
    path = tmp_path / "recipe.sparkrun.yaml"
    path.write_text(dump_recipe(export_recipe(recipe, runtime_cache=runtime_cache)))
    return path


def validate(env, path):
    proc = sparkrun(env, "recipe", "validate", "--json", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["valid"] is True
    assert report["errors"] == 0, report
    return report


def managed_names(issue):
    """The variables a managed-cache-env warning names ('env: sets A, B, which sparkrun...')."""
    match = re.match(r"env: sets (.+?), which sparkrun points", issue["message"])
    assert match, issue["message"]
    return match.group(1).split(", ")


# --- sparkrun recipe validate -------------------------------------------------------------


def test_sparkrun_is_the_version_we_know(sparkrun_env):
    proc = sparkrun(sparkrun_env, "--version")
    assert proc.returncode == 0
    assert proc.stdout.strip().endswith("version 0.4.2")


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_the_export_validates_with_the_managed_cache_warning(sparkrun_env, tmp_path, name):
    report = validate(sparkrun_env, write_export(tmp_path, RECIPES[name]))
    assert [issue["code"] for issue in report["issues"]] == ["managed-cache-env"]
    assert managed_names(report["issues"][0]) == MANAGED_ENV[name]


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_the_runtime_cache_export_validates_without_a_warning(sparkrun_env, tmp_path, name):
    path = write_export(tmp_path, RECIPES[name], runtime_cache=True)
    report = validate(sparkrun_env, path)
    assert report["issues"] == []
    assert yaml.safe_load(path.read_text())["runtime_cache"] == {"enabled": True}


def test_the_seed_recipe_gets_the_same_verdict_as_our_export(sparkrun_env, tmp_path):
    ours = validate(sparkrun_env, write_export(tmp_path, RECIPES["role-default"]))
    seed = validate(sparkrun_env, FIXTURE)
    assert seed["issues"] == ours["issues"]


# --- sparkrun run --dry-run: the serve command ----------------------------------------------


def indented_block(text, title):
    """The command printed, indented, under ``title``, as argv.

    It runs from the first line after the title to the first line not ending in a
    backslash (the log goes on with other indented lines).
    """
    lines = text.splitlines()
    start = lines.index(title) + 1
    block = []
    for line in lines[start:]:
        assert line.startswith("  "), f"no command under {title!r}: {line!r}"
        block.append(line[2:])
        if not line.endswith("\\"):
            break
    # A backslash ending a line continues the command: drop it with the line break.
    joined = re.sub(r"\\\n", " ", "\n".join(block))
    return shlex.split(joined)


@pytest.mark.parametrize("runtime_cache", [False, True], ids=["env", "runtime-cache"])
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_the_dry_run_serves_the_command_we_render(sparkrun_env, tmp_path, name, runtime_cache):
    recipe = RECIPES[name]
    path = write_export(tmp_path, recipe, runtime_cache=runtime_cache)
    proc = sparkrun(
        sparkrun_env,
        "-v",
        "run",
        str(path),
        "--hosts",
        HOSTS,
        "--dry-run",
        "--offline",
        "--no-auto-detect",
        "--no-sync-tuning",
        "-o",
        f"host={ROLE_VALUES['host']}",
        "--port",
        str(ROLE_VALUES["port"]),
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ours = command_argv(render_command(recipe, ROLE_VALUES))

    # What sparkrun would run: our command, plus the served model name it always pins (so the
    # API lists the model id even when vLLM is handed a local snapshot path). The vllm role
    # adds no such flag: vLLM names the model after the id it is given, the same string.
    served = ["--served-model-name", recipe["model"]]
    assert indented_block(proc.stdout, "Serve command:") == ours + served

    # The head's command (rank 0) adds the rendezvous of vLLM's native multi-node mode. The
    # role adds these very flags per node itself (roles/vllm/vars/main.yml, __vllm_role_flags),
    # with its own master address and port; a worker would also get --headless.
    head = indented_block(proc.stderr, "Serve command (head, rank 0):")
    rendezvous = head[len(ours) + len(served) :]
    assert head[: len(ours) + len(served)] == ours + served
    assert rendezvous == [
        "--nnodes",
        str(recipe["min_nodes"]),
        "--node-rank",
        "0",
        "--master-addr",
        "<HEAD_IP>",
        "--master-port",
        "25000",
    ]
    role_flags = load_vars(ROLE_VARS)["__vllm_role_flags"]
    assert set(rendezvous[::2]) <= set(role_flags)


# --- the playbooks, through ansible-runner --------------------------------------------------


@dataclass
class PlaybookRun:
    """What the tests look at: the runner's status, the changed count, failures, warnings."""

    status: str
    changed: int
    failures: list
    warnings: list


def run_playbook(tmp_path, playbook, extravars, inventory=None):
    import ansible_runner

    private = tmp_path / f"runner-{len(list(tmp_path.glob('runner-*')))}"
    private.mkdir()
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    result = ansible_runner.run(
        private_data_dir=str(private),
        project_dir=str(ROOT),
        playbook=str(ROOT / "playbooks" / playbook),
        inventory=[str(inventory)] if inventory else None,
        extravars=extravars,
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "PATH": path},
        quiet=True,
    )
    failures = [
        str(event["event_data"].get("res", {}).get("msg", ""))
        for event in result.events
        if event.get("event") == "runner_on_failed"
    ]
    warnings = [
        warning
        for event in result.events
        if event.get("event") == "runner_on_ok"
        for warning in event["event_data"].get("res", {}).get("warnings", [])
    ]
    changed = sum((result.stats or {}).get("changed", {}).values())
    return PlaybookRun(result.status, changed, failures, warnings)


def mode_of(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_import_playbook_writes_the_default_recipe_and_is_idempotent(tmp_path):
    dest = tmp_path / "recipe.yml"
    extravars = {"sparkrun_recipe_file": str(FIXTURE), "sparkrun_vars_dest": str(dest)}
    run = run_playbook(tmp_path, "import_sparkrun.yml", extravars)
    assert run.status == "successful", run.failures
    assert run.changed == 1
    assert run.warnings == []
    written = load_vars(dest)
    assert written["vllm_recipe"] == load_vars(ROLE_DEFAULTS)["vllm_recipe"]
    assert written["sparkrun_extra_fields"] == {}
    assert mode_of(dest) == 0o644
    run = run_playbook(tmp_path, "import_sparkrun.yml", extravars)
    assert (run.status, run.changed) == ("successful", 0), run.failures


def test_import_playbook_names_every_field_it_cannot_honour(tmp_path):
    source = tmp_path / "with-extras.sparkrun.yaml"
    data = yaml.safe_load(FIXTURE.read_text())
    data.update(model_revision="5e0d1b7", pre_exec=["pip install b12x"])
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    dest = tmp_path / "recipe.yml"
    extravars = {"sparkrun_recipe_file": str(source), "sparkrun_vars_dest": str(dest)}
    run = run_playbook(tmp_path, "import_sparkrun.yml", extravars)
    assert run.status == "successful", run.failures
    assert [w.split(": ")[1] for w in run.warnings] == ["model_revision", "pre_exec"]
    assert "set node_model_revision: '5e0d1b7' instead" in run.warnings[0]
    assert load_vars(dest)["sparkrun_extra_fields"] == {
        "model_revision": "5e0d1b7",
        "pre_exec": ["pip install b12x"],
    }
    # The export gives them back: the vars file as the inventory's group variables.
    group_vars = tmp_path / "inventory" / "group_vars"
    group_vars.mkdir(parents=True)
    (group_vars / "gb10_cluster.yml").write_text(dest.read_text())
    (tmp_path / "inventory" / "hosts.yml").write_text(
        "gb10_cluster:\n  children:\n    gb10_head:\n      hosts:\n        spark1:\n"
    )
    exported = tmp_path / "out.sparkrun.yaml"
    run = run_playbook(
        tmp_path,
        "export_sparkrun.yml",
        {"sparkrun_export_dest": str(exported)},
        inventory=tmp_path / "inventory",
    )
    assert run.status == "successful", run.failures
    assert yaml.safe_load(exported.read_text()) == data
    assert import_recipe(exported.read_text()).unsupported == {
        "model_revision": "5e0d1b7",
        "pre_exec": ["pip install b12x"],
    }


@pytest.mark.parametrize(
    ("extravars", "message"),
    [
        pytest.param({}, "Set sparkrun_recipe_file", id="no-file-variable"),
        pytest.param(
            {"sparkrun_recipe_file": "/nonexistent/recipe.yaml"},
            "sparkrun_recipe_file /nonexistent/recipe.yaml is not there",
            id="missing-file",
        ),
        pytest.param(
            {"sparkrun_recipe_file": "v1"},
            r"sparkrun_recipe_file .*v1.yaml cannot be imported: the sparkrun recipe is not a "
            r"v2 recipe: its recipe_version is the string '1'",
            id="not-v2",
        ),
    ],
)
def test_import_playbook_fails_naming_the_variable(tmp_path, extravars, message):
    if extravars.get("sparkrun_recipe_file") == "v1":
        v1 = tmp_path / "v1.yaml"
        v1.write_text("recipe_version: '1'\nmodel: x\n")
        extravars = {"sparkrun_recipe_file": str(v1)}
    dest = tmp_path / "recipe.yml"
    run = run_playbook(
        tmp_path, "import_sparkrun.yml", {**extravars, "sparkrun_vars_dest": str(dest)}
    )
    assert run.status == "failed"
    assert any(re.search(message, failure) for failure in run.failures), run.failures
    assert not dest.exists()


@pytest.mark.parametrize(
    ("inventory", "recipe"),
    [
        pytest.param(ROOT / "inventory" / "production", "role-default", id="production"),
        pytest.param(ROOT / "inventory" / "lab", "lab", id="lab"),
    ],
)
def test_export_playbook_writes_what_sparkrun_validates(sparkrun_env, tmp_path, inventory, recipe):
    dest = tmp_path / "out.sparkrun.yaml"
    extravars = {"sparkrun_export_dest": str(dest)}
    run = run_playbook(tmp_path, "export_sparkrun.yml", extravars, inventory)
    assert (run.status, run.changed) == ("successful", 1), run.failures
    assert dest.read_text() == dump_recipe(export_recipe(RECIPES[recipe]))
    assert mode_of(dest) == 0o644
    report = validate(sparkrun_env, dest)
    assert [issue["code"] for issue in report["issues"]] == ["managed-cache-env"]
    run = run_playbook(tmp_path, "export_sparkrun.yml", extravars, inventory)
    assert (run.status, run.changed) == ("successful", 0), run.failures


def test_export_playbook_can_leave_the_jit_caches_to_sparkrun(sparkrun_env, tmp_path):
    dest = tmp_path / "out.sparkrun.yaml"
    run = run_playbook(
        tmp_path,
        "export_sparkrun.yml",
        {"sparkrun_export_dest": str(dest), "sparkrun_runtime_cache": True},
        ROOT / "inventory" / "production",
    )
    assert run.status == "successful", run.failures
    assert validate(sparkrun_env, dest)["issues"] == []


# --- the corpus: our export of every registry recipe, judged by sparkrun ------------------

from concurrent.futures import ThreadPoolExecutor  # noqa: E402

from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.sparkrun_corpus import (  # noqa: E402,E501
    CORPUS,
    case_id,
    judged,
    reference_text,
    serve_argv,
)

CORPUS_VLLM = [path for path in CORPUS if reference_text(path).strip()]


def dry_run_serve_block(env, path, nodes):
    """The block under 'Serve command:' of sparkrun's dry run on ``nodes`` loopback hosts."""
    hosts = ",".join(f"127.0.0.{rank + 2}" for rank in range(nodes))
    # As the references were made (no --offline: an eugr build would then look for its image).
    proc = sparkrun(env, "run", str(path), "--hosts", hosts, "--dry-run")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    block = []
    for line in lines[lines.index("Serve command:") + 1 :]:
        if not line.startswith("  "):
            break
        block.append(line)
    return "\n".join(block) + "\n"


@pytest.fixture(scope="session")
def corpus_round_trip(sparkrun_env, tmp_path_factory):
    """Our export of each imported corpus recipe, run once through sparkrun, in parallel
    (each call takes about a second)."""
    work = tmp_path_factory.mktemp("corpus")

    def one(path):
        imported = import_recipe(path.read_text(encoding="utf-8"))
        exported = export_recipe(imported.recipe, imported.unsupported, None, imported.backend)
        where = work / case_id(path).replace("/", "-")
        where.mkdir()
        # sparkrun resolves each mod beside the recipe; its content is no part of the command.
        for mod in exported.get("mods") or []:
            (where / mod).mkdir(parents=True, exist_ok=True)
            (where / mod / "run.sh").write_text("#!/bin/sh\n")
        target = where / path.name
        target.write_text(dump_recipe(exported))
        return imported, dry_run_serve_block(sparkrun_env, target, exported.get("min_nodes", 1))

    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(zip(CORPUS_VLLM, pool.map(one, CORPUS_VLLM), strict=True))


@pytest.mark.parametrize("path", CORPUS_VLLM, ids=case_id)
def test_sparkrun_starts_the_same_engine_from_our_export(corpus_round_trip, path):
    imported, block = corpus_round_trip[path]
    model = imported.recipe["model"]
    ours, ours_backend = judged(serve_argv(block), model)
    theirs, theirs_backend = judged(serve_argv(reference_text(path)), model)
    assert ours == theirs
    assert ours_backend == theirs_backend


def test_the_generated_flags_are_sparkruns():
    from ansible_collections.gb10.serving.plugins.module_utils._sparkrun import (
        GENERATED_FLAG_KEYS,
        NEGATED_SWITCH_KEYS,
        SWITCH_KEYS,
        generated_flag,
    )

    script = (
        "import json; from sparkrun.runtimes import _vllm_common as c; print(json.dumps("
        "[list(c.VLLM_FLAG_MAP.items()), sorted(c.VLLM_BOOL_FLAGS), "
        "sorted(c.VLLM_NEGATABLE_BOOL_FLAGS)]))"
    )
    proc = subprocess.run(
        [str(SPARKRUN.parent / "python"), "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    flag_map, switches, negated = json.loads(proc.stdout)
    assert [[key, generated_flag(key)] for key in GENERATED_FLAG_KEYS] == flag_map
    assert sorted(SWITCH_KEYS) == switches
    assert sorted(NEGATED_SWITCH_KEYS) == negated
