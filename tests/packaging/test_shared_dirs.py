"""A directory that several roles create gets one owner and one mode from all of them.

Otherwise each run flips what another stage set, and a run right after a restart reports
changes (the engine stage once made /etc/gb10-serving 0700, the other stages 0755). The
paths are the roles' own defaults and vars, rendered as Ansible would.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import jinja2
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"


def role_variables() -> dict:
    variables = {}
    for role in sorted(ROLES.iterdir()):
        for part in ("defaults", "vars"):
            path = role / part / "main.yml"
            if path.exists():
                variables.update(yaml.safe_load(path.read_text()) or {})
    return variables


def tasks(node):
    """Every task mapping in a task file, blocks and rescues included."""
    if isinstance(node, list):
        for item in node:
            yield from tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always"):
            yield from tasks(node.get(key))


def created_directories():
    """(resolved path, (owner, group, mode), where) for each directory a role creates."""
    # Paths, not HTML: nothing to escape.
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)  # noqa: S701
    env.filters["dirname"] = os.path.dirname
    variables = role_variables()
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in tasks(yaml.safe_load(path.read_text())):
            args = task.get("ansible.builtin.file")
            if not isinstance(args, dict) or args.get("state") != "directory":
                continue
            try:
                resolved = env.from_string(str(args["path"])).render(variables)
                # A path made of another variable: render once more.
                resolved = env.from_string(resolved).render(variables)
            except (jinja2.UndefinedError, jinja2.TemplateAssertionError):
                continue  # a per-host or per-item path, or one made with Ansible's filters
            settings = (args.get("owner"), args.get("group"), str(args.get("mode")))
            yield resolved, settings, f"{path.relative_to(ROOT)}: {task['name']}"


def test_every_shared_directory_has_one_owner_and_one_mode():
    seen = defaultdict(dict)
    for resolved, settings, where in created_directories():
        seen[resolved][where] = settings
    shared = {path: by for path, by in seen.items() if len(by) > 1}
    assert "/etc/gb10-serving" in shared, sorted(seen)
    for path, by in shared.items():
        assert len(set(by.values())) == 1, f"{path} is created differently: {by}"
