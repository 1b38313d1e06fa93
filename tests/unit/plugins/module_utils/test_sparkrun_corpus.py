# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every recipe of the corpus (sparkrun_corpus) imports and renders to what sparkrun starts.

The judge is sparkrun 0.4.2's own dry run, captured in the fixtures: the argv our import
and render give must be its serve command, less the --served-model-name it appends and the
per-node flags the vllm role adds itself; the executor backend it asks for must be the
vllm_distributed_backend the import writes. Recipes for other runtimes are refused, naming
the runtime. What is imported also passes the vllm role's own checks, so site.yml deploys
the vars file as it is.
"""

from __future__ import annotations

import re

import pytest
import yaml
from ansible_collections.gb10.serving.plugins.module_utils._preflight import (
    engine_fit_problems,
    engine_role_flags_problems,
)
from ansible_collections.gb10.serving.plugins.module_utils._sparkrun import (
    SparkrunError,
    dump_vars_file,
    export_recipe,
    import_recipe,
)
from ansible_collections.gb10.serving.plugins.module_utils._vllm_recipe import (
    command_argv,
    recipe_problems,
    render_command,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.sparkrun_corpus import (
    CORPUS,
    REFUSED,
    ROLE_VALUES,
    case_id,
    judged,
    reference_text,
    serve_argv,
)

VLLM = [path for path in CORPUS if reference_text(path).strip()]
OTHERS = [path for path in CORPUS if not reference_text(path).strip()]
ROLE_FLAGS = yaml.safe_load(
    (CORPUS[0].parents[7] / "roles" / "vllm" / "vars" / "main.yml").read_text(encoding="utf-8")
)["__vllm_role_flags"]


def test_the_corpus_is_all_there():
    assert len([p for p in CORPUS if p.parent.name == "registry"]) == 37
    assert len(VLLM) == 43
    assert sorted(p.name for p in OTHERS if p.parent.name == "derived") == sorted(REFUSED)


@pytest.mark.parametrize("path", VLLM, ids=case_id)
def test_the_import_renders_what_sparkrun_starts(path):
    imported = import_recipe(path.read_text(encoding="utf-8"))
    ours = command_argv(render_command(imported.recipe, ROLE_VALUES))
    model = imported.recipe["model"]
    theirs, backend = judged(serve_argv(reference_text(path)), model)
    assert ours == theirs
    # On one node sparkrun names no backend; on several, the one it runs.
    assert imported.backend == (backend or RAY.get(path.stem, "mp"))


# The derived recipes sparkrun runs on Ray (by runtime, command or default); all else is mp.
RAY = {
    "runtime-vllm-ray": "ray",
    "runtime-eugr-vllm": "ray",
    "command-asks-for-ray": "ray",
    "defaults-ask-for-ray": "ray",
}


@pytest.mark.parametrize("path", VLLM, ids=case_id)
def test_the_ray_recipes_select_the_ray_backend(path):
    assert import_recipe(path.read_text(encoding="utf-8")).backend == RAY.get(path.stem, "mp")


@pytest.mark.parametrize("path", OTHERS, ids=case_id)
def test_other_runtimes_are_refused_naming_the_runtime(path):
    runtime = yaml.safe_load(path.read_text(encoding="utf-8")).get("runtime")
    runtime = runtime or REFUSED[path.name]
    with pytest.raises(SparkrunError, match=rf"not a vLLM recipe: .*\b{re.escape(runtime)}\b"):
        import_recipe(path.read_text(encoding="utf-8"))


def strings(data):
    if isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from strings(value)
    elif isinstance(data, str):
        yield data


@pytest.mark.parametrize("path", VLLM, ids=case_id)
def test_the_vars_file_passes_the_roles_checks(path):
    imported = import_recipe(path.read_text(encoding="utf-8"))
    written = yaml.safe_load(dump_vars_file(imported))
    recipe = written["vllm_recipe"]
    assert written["vllm_distributed_backend"] == imported.backend
    assert recipe_problems(recipe) == []
    argv = command_argv(render_command(recipe, ROLE_VALUES))
    assert engine_role_flags_problems(argv, ROLE_FLAGS, []) == []
    nodes = [f"spark{n}" for n in range(1, (recipe.get("min_nodes") or 1) + 1)]
    assert engine_fit_problems(recipe, nodes) == []
    # Ansible templates every string of a vars file: none may hold Jinja.
    assert not [text for text in strings(written) if re.search(r"\{[{%#]", text)]


@pytest.mark.parametrize("path", VLLM, ids=case_id)
def test_nothing_is_dropped_silently(path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    imported = import_recipe(data)
    for key in data:
        assert key in imported.recipe or key in imported.unsupported, key
    for path_set_aside in imported.unsupported:
        assert any(note.startswith(f"{path_set_aside}: ") for note in imported.notes)
    exported = export_recipe(imported.recipe, imported.unsupported, None, imported.backend)
    for key in data:
        assert key in exported, key
