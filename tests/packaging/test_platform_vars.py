"""What differs between a Spark and the lab lives in each role's vars/<platform>.yml.

The lab runs only vars/lab.yml, so a variable that vars/spark.yml lacks would first fail
on a user's Spark. Every platform the cluster role accepts has a file in every role that
has any, with the same variables, each read by the role; and no task, handler or template
compares gb10_platform itself (the preflight checks it is the same on every node, the
engine plan gets it as data).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"
PLATFORMS = yaml.safe_load((ROLES / "cluster" / "meta" / "argument_specs.yml").read_text())[
    "argument_specs"
]["main"]["options"]["gb10_platform"]["choices"]
PLATFORM_ROLES = sorted(
    role.name
    for role in ROLES.iterdir()
    if any((role / "vars" / f"{p}.yml").exists() for p in PLATFORMS)
)


def role_sources(role: Path) -> str:
    parts = [
        path.read_text()
        for sub in ("tasks", "handlers", "templates")
        for path in sorted((role / sub).rglob("*"))
        if path.is_file()
    ]
    return "\n".join(parts)


def test_the_platforms_are_the_spark_and_the_lab():
    assert PLATFORMS == ["spark", "lab"]
    assert PLATFORM_ROLES == ["bench", "fabric", "node"]


@pytest.mark.parametrize("role", PLATFORM_ROLES)
def test_every_platform_sets_the_same_variables(role):
    keys = {
        p: set(yaml.safe_load((ROLES / role / "vars" / f"{p}.yml").read_text())) for p in PLATFORMS
    }
    assert keys["spark"] == keys["lab"], keys
    assert all(key.startswith(f"__{role}_") for key in keys["spark"])


@pytest.mark.parametrize("role", PLATFORM_ROLES)
def test_every_platform_variable_is_read_and_the_file_is_loaded(role):
    sources = role_sources(ROLES / role)
    assert (
        'file: "{{ gb10_platform }}.yml"' in (ROLES / role / "tasks" / "preflight.yml").read_text()
    )
    for key in yaml.safe_load((ROLES / role / "vars" / "spark.yml").read_text()):
        assert re.search(rf"\b{key}\b", sources), f"{role}: {key} is set but never read"


@pytest.mark.parametrize("role", sorted(r.name for r in ROLES.iterdir() if r.is_dir()))
def test_no_task_compares_the_platform(role):
    found = re.findall(r"gb10_platform\s*[=!]=|[=!]=\s*gb10_platform", role_sources(ROLES / role))
    assert not found, f"{role}: compare through vars/<platform>.yml instead: {found}"
