# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Real sparkrun recipes and what sparkrun 0.4.2 starts for each (fixtures/sparkrun/).

``registry/`` holds recipes of spark-arena/recipe-registry, ``derived/`` variants of some of
them for the cases the registry lacks; ``rendered/<file>.txt`` beside each is the serve
command of sparkrun's dry run (empty when sparkrun starts no vLLM). See the READMEs there.
Shared by the unit corpus test and the round trip through the real sparkrun.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sparkrun"
CORPUS = sorted((FIXTURES / "registry").glob("*.yaml")) + sorted(
    (FIXTURES / "derived").glob("*.yaml")
)
# What the vllm role fills {host} and {port} with when the recipe's defaults say the same:
# every recipe of the corpus serves on 0.0.0.0:8000.
ROLE_VALUES = {"host": "0.0.0.0", "port": 8000}  # noqa: S104 - the engine listens on all addresses
# Flags the vllm role adds per node (roles/vllm/vars/main.yml, __vllm_role_flags) that a
# sparkrun serve command may carry, with the value each takes.
ROLE_FLAGS = ("--distributed-executor-backend", "--revision", "--nnodes", "--master-addr",
              "--master-port", "--node-rank")  # fmt: skip
# Why a recipe is refused: the sparkrun runtime it names.
REFUSED = {
    "no-runtime-llama-server.yaml": "llama-cpp",
    "runtime-trtllm.yaml": "trtllm",
}


def case_id(path):
    return f"{path.parent.name}/{path.stem}"


def reference_text(path):
    return (path.parent / "rendered" / f"{path.name}.txt").read_text(encoding="utf-8")


def serve_argv(text):
    """A printed serve command (backslash continuations, two-blank indent) as argv."""
    return shlex.split(re.sub(r"\\\n", " ", text))


def judged(argv, model):
    """``argv`` as the comparison reads it: without the --served-model-name sparkrun appends
    for ``model``, without the role's per-node flags; and the executor backend it asks for
    (None when it names none)."""
    words = list(argv)
    if words[-2:] == ["--served-model-name", model]:
        words = words[:-2]
    kept, backend, index = [], None, 0
    while index < len(words):
        name, equals, value = words[index].partition("=")
        if name in ROLE_FLAGS:
            if not equals:
                index += 1
                value = words[index] if index < len(words) else ""
            if name == "--distributed-executor-backend":
                backend = value
        else:
            kept.append(words[index])
        index += 1
    return kept, backend
