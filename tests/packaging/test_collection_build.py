"""`ansible-galaxy collection build` ships the collection and nothing of the workshop."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def members(tmp_path_factory) -> set[str]:
    out = tmp_path_factory.mktemp("dist")
    galaxy = shutil.which("ansible-galaxy")
    assert galaxy, "ansible-galaxy is not on PATH: run scripts/setup.sh"
    subprocess.run(
        [galaxy, "collection", "build", "--output-path", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (tarball,) = out.glob("gb10-serving-*.tar.gz")
    with tarfile.open(tarball) as tar:
        return {m.name for m in tar.getmembers()}


@pytest.mark.parametrize(
    "path",
    [
        "MANIFEST.json",
        "COPYING",
        "README.md",
        "site.yml",
        "playbooks/site.yml",
        "playbooks/preflight.yml",
        "roles/preflight/meta/argument_specs.yml",
        "roles/preflight/tasks/main.yml",
        "docs/index.md",
        "docs/troubleshooting.md",
        "meta/runtime.yml",
        "inventory/production/hosts.yml",
    ],
)
def test_ships(members, path):
    assert path in members


@pytest.mark.parametrize(
    "top",
    ["lab", "tests", "molecule", "scripts", "benchmarks", ".ci", ".cache", ".venv", "build"],
)
def test_leaves_out(members, top):
    assert not [m for m in members if m == top or m.startswith(top + "/")]


def test_no_caches_or_bytecode(members):
    assert not [m for m in members if "__pycache__" in m or "_cache" in m.split("/")[0]]
