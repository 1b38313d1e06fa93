"""docs/ is what scripts/gen_docs.py writes now: a changed argument spec, default, playbook
or error kind without `make docs` fails here."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(
    p.name for p in (ROOT / "roles").iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
)


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_docs", module)
    spec.loader.exec_module(module)
    return module


gen_docs = _load_generator()


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return gen_docs.render_all(ROOT)


def test_committed_docs_are_current(pages):
    assert gen_docs.differences(ROOT, pages) == [], "docs/ is out of date: run `make docs`"


def test_generator_is_deterministic(pages):
    assert gen_docs.render_all(ROOT) == pages


@pytest.mark.parametrize("role", ROLES)
def test_every_role_has_a_page(pages, role):
    assert f"docs/roles/{role}.md" in pages
    assert (ROOT / "docs" / "roles" / f"{role}.md").is_file()
    assert f"(roles/{role}.md)" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("role", ROLES)
def test_every_entry_point_and_option_is_on_its_page(role):
    specs, _source = gen_docs.argument_specs(ROOT / "roles" / role)
    page = (ROOT / "docs" / "roles" / f"{role}.md").read_text(encoding="utf-8")
    for name, spec in specs.items():
        assert f"## Entry point `{name}`" in page
        for option in (spec or {}).get("options") or {}:
            assert f"`{option}`" in page


def test_every_error_kind_is_in_troubleshooting():
    parser = gen_docs.load_parser(ROOT)
    page = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (\S+)$", page, flags=re.MULTILINE)
    assert headings == list(parser.ERROR_KINDS)
    for kind in parser.ERROR_KINDS:
        meaning, fix = parser.ERROR_KIND_HELP[kind]
        assert gen_docs.markup(meaning) in page
        assert gen_docs.markup(fix) in page
    for _kind, hint in parser.ERROR_HINTS:
        assert gen_docs.markup(hint) in page


def test_every_kind_has_a_sample_line():
    parser = gen_docs.load_parser(ROOT)
    sampled = {kind for kind, _hint, _line, _source in gen_docs.error_samples(ROOT, parser)}
    assert sampled == set(parser.ERROR_KINDS)


@pytest.mark.parametrize(
    "page", sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
)
def test_relative_links_resolve(page):
    path = ROOT / page
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
        if "://" not in target:
            assert (path.parent / target).exists(), f"{page} links {target}"


DEMO_SPEC = """\
---
argument_specs:
  main:
    short_description: Demo
    options:
      demo_port: {type: int, default: 1, description: A port.}
      demo_users:
        type: list
        elements: dict
        description: Users.
        options:
          name: {type: str, required: true, description: Who.}
          key: {type: str, no_log: true, default: s3cret, description: Key.}
"""


def test_check_mode_reports_a_stale_page(tmp_path):
    (tmp_path / "roles" / "demo" / "meta").mkdir(parents=True)
    (tmp_path / "roles" / "demo" / "meta" / "argument_specs.yml").write_text(
        DEMO_SPEC, encoding="utf-8"
    )
    (tmp_path / "roles" / "demo" / "defaults").mkdir()
    (tmp_path / "roles" / "demo" / "defaults" / "main.yml").write_text(
        "---\ndemo_port: 2\ndemo_extra: x\n", encoding="utf-8"
    )
    for path in (gen_docs.PARSER, gen_docs.ERROR_LINES):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((ROOT / path).read_text(encoding="utf-8"), encoding="utf-8")
    assert gen_docs.main(["--root", str(tmp_path)]) == 0
    assert gen_docs.main(["--root", str(tmp_path), "--check"]) == 0
    page = (tmp_path / "docs" / "roles" / "demo.md").read_text(encoding="utf-8")
    # The spec and defaults/main.yml disagree, and one variable has no spec: both are shown.
    assert "spec: `1`; defaults: `2` *(they differ)*" in page
    assert "| `demo_extra` | `x` *(defaults only)* |" in page
    # Nested options are rows of their own under their parent; a secret default is hidden.
    assert "| `demo_users[].name` | str | yes |  |  | Who. |" in page
    assert "| `demo_users[].key` | str | no | (secret, not shown) |" in page
    spec = tmp_path / "roles" / "demo" / "meta" / "argument_specs.yml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("A port.", "The port."))
    (tmp_path / "docs" / "roles" / "gone.md").write_text("old\n", encoding="utf-8")
    assert gen_docs.main(["--root", str(tmp_path), "--check"]) == 1
    assert gen_docs.differences(tmp_path, gen_docs.render_all(tmp_path)) == [
        "docs/roles/demo.md",
        "docs/roles/gone.md",
    ]
