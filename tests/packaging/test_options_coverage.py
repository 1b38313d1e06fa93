"""tests/options_coverage.yml has a row for every role option, and its rows name real tests.

Fails when an option of a role's argument specs (any entry point, nested options as
``<parent>[].<name>``) has no row, when a row names an option no role has any more, when a
row holds not exactly one of ``tests``, ``none`` and ``gap``, when a named test's file does
not exist or does not define the named test (read with ``ast``; a parametrized id ``[...]``
must be written in the file), and when a test's file never mentions the option: a cheap
guard against a row that names the wrong test. A row whose tests rely on an inventory's
value says so with ``via``, and then the inventory file must mention the option instead.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TABLE = Path("tests/options_coverage.yml")
# Test files a row may name before they exist (work in progress, by path from the root).
# Only an absent file is let through, and only while it is listed here; the checks apply
# as soon as it exists. Take each entry out once its file has landed.
PENDING_TEST_FILES: frozenset[str] = frozenset()
KINDS = ("tests", "none", "gap")
KEYS = frozenset((*KINDS, "via", "note"))
# Where a named test may live: the pytest suites and the Molecule scenario's verifier.
TEST_DIRS = ("tests/", "molecule/")
NODE_ID = re.compile(r"(?P<path>[^:\s]+\.py)::(?P<names>[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)")
PARAM_ID = re.compile(r"\[(?P<id>[^\]]+)\]")


def _options(prefix: str, options) -> set[str]:
    names = set()
    for name, spec in (options or {}).items():
        names.add(f"{prefix}{name}")
        names |= _options(f"{prefix}{name}[].", (spec or {}).get("options"))
    return names


def spec_options(root: Path = ROOT) -> dict[str, set[str]]:
    """Every role's options, over all its entry points: role -> option names."""
    found = {}
    for path in sorted((root / "roles").glob("*/meta/argument_specs.yml")):
        specs = yaml.safe_load(path.read_text(encoding="utf-8"))["argument_specs"]
        found[path.parts[-3]] = set().union(
            *(_options("", (spec or {}).get("options")) for spec in specs.values())
        )
    return found


def load_table(root: Path = ROOT) -> dict[str, dict[str, dict]]:
    return yaml.safe_load((root / TABLE).read_text(encoding="utf-8")) or {}


@functools.cache
def _module(path: Path) -> tuple[str, ast.Module]:
    source = path.read_text(encoding="utf-8")
    return source, ast.parse(source)


def _defines(tree: ast.Module, names: list[str]) -> bool:
    """Whether the module defines ``names``: a function, or a class and its method."""
    body = tree.body
    for index, name in enumerate(names):
        last = index == len(names) - 1
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
        found = [node for node in body if isinstance(node, kinds) and node.name == name]
        if not found:
            return False
        body = found[0].body
    return True


def _mentions(text: str, option: str) -> bool:
    name = option.split("[]", 1)[0]  # a nested option: its top-level option's name
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def named_test_problems(option, node_ids, via, root=ROOT, pending=None) -> list[str]:
    """What is wrong with a row's ``tests`` (and ``via``) for ``option``."""
    pending = PENDING_TEST_FILES if pending is None else pending
    if not isinstance(node_ids, list) or not node_ids:
        return ["tests must be a non-empty list of pytest node ids"]
    problems = []
    for node_id in node_ids:
        head, _bracket, rest = str(node_id).partition("[")
        match = NODE_ID.fullmatch(head)
        param = PARAM_ID.fullmatch("[" + rest) if rest else None
        if match is None or (rest and param is None):
            problems.append(f"{node_id!r} is not a node id (<file>.py::<test>[<param id>])")
            continue
        path = match["path"]
        if not path.startswith(TEST_DIRS) or not Path(path).name.startswith("test_"):
            problems.append(f"{node_id}: a test file is a test_*.py under tests/ or molecule/")
            continue
        if not (root / path).is_file():
            if path not in pending:
                problems.append(f"{node_id}: there is no {path}")
            continue
        source, tree = _module(root / path)
        names = match["names"].split("::")
        if not _defines(tree, names):
            problems.append(f"{node_id}: {path} defines no {'.'.join(names)}")
        if param and param["id"] not in source:
            problems.append(f"{node_id}: the id {param['id']!r} is not written in {path}")
        if not via and not _mentions(source, option):
            problems.append(
                f"{node_id}: {path} never mentions {option}; name a test that sets it, or "
                "the inventory file it relies on with via"
            )
    for path in via:
        if not (root / path).is_file():
            problems.append(f"via: there is no {path}")
        elif not _mentions((root / path).read_text(encoding="utf-8"), option):
            problems.append(f"via: {path} never mentions {option}")
    return problems


def row_problems(option, row, root=ROOT, pending=None) -> list[str]:
    """What is wrong with one row of the table; empty when it holds."""
    if not isinstance(row, dict):
        return [f"the row is {type(row).__name__}, not a mapping"]
    problems = [
        f"unknown key {key!r} (the keys: {', '.join(sorted(KEYS))})"
        for key in row
        if key not in KEYS
    ]
    kinds = [kind for kind in KINDS if kind in row]
    if len(kinds) != 1:
        problems.append(
            f"the row must hold exactly one of tests, none, gap; it holds {kinds or 'none of them'}"
        )
    for key in ("none", "gap", "note"):
        if key in row and not (isinstance(row[key], str) and row[key].strip()):
            problems.append(f"{key} must be a sentence")
    via = row.get("via", [])
    via = [via] if isinstance(via, str) else via
    if not isinstance(via, list) or not all(isinstance(path, str) for path in via):
        problems.append("via must be a file, or a list of files")
        via = []
    elif via and "tests" not in row:
        problems.append("via goes with tests only")
    if "tests" in row:
        problems += named_test_problems(option, row["tests"], via, root, pending)
    return problems


SPEC = spec_options()
TABLE_ROWS = {
    f"{role}.{option}": (option, row)
    for role, rows in load_table().items()
    for option, row in (rows or {}).items()
}


@pytest.mark.parametrize(
    "option", sorted(f"{role}.{name}" for role, names in SPEC.items() for name in names)
)
def test_every_option_has_a_row(option):
    assert option in TABLE_ROWS, f"{TABLE} has no row for {option}"


@pytest.mark.parametrize("row", sorted(TABLE_ROWS))
def test_every_row_is_an_option(row):
    role, _dot, option = row.partition(".")
    assert role in SPEC, f"{TABLE}: {role} is not a role"
    assert option in SPEC[role], f"{TABLE}: {role} has no option {option} any more"


@pytest.mark.parametrize("row", sorted(TABLE_ROWS))
def test_the_row_holds(row):
    option, entry = TABLE_ROWS[row]
    assert row_problems(option, entry) == []


# --- the checks themselves, over a made-up tree --------------------------------------------

DEMO_TEST = """
import pytest

@pytest.mark.parametrize("port", [8100], ids=["moved-port"])
def test_the_port_moves(port):
    vllm_port = port
    assert vllm_port == 8100

class TestGroup:
    def test_in_a_class(self):
        assert "vllm_port"
"""
DEMO = "tests/unit/test_demo.py"


@pytest.fixture
def demo(tmp_path):
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / DEMO).write_text(DEMO_TEST, encoding="utf-8")
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "lab.yml").write_text("vllm_api_key: x\n", encoding="utf-8")
    return tmp_path


GOOD_ROWS = [
    pytest.param({"tests": [f"{DEMO}::test_the_port_moves"]}, id="function"),
    pytest.param({"tests": [f"{DEMO}::test_the_port_moves[moved-port]"]}, id="param-id"),
    pytest.param({"tests": [f"{DEMO}::TestGroup::test_in_a_class"]}, id="method"),
    pytest.param({"none": "Needs a GB10's GPU.", "note": "Real hardware only."}, id="none"),
    pytest.param({"gap": "A lab run with the port moved."}, id="gap"),
]


@pytest.mark.parametrize("row", GOOD_ROWS)
def test_a_good_row_holds(demo, row):
    assert row_problems("vllm_port", row, demo) == []


BAD_ROWS = {
    "nothing": ({"note": "covered"}, "exactly one of tests, none, gap; it holds none of them"),
    "two-kinds": ({"gap": "x", "none": "y"}, "it holds ['none', 'gap']"),
    "empty-none": ({"none": " "}, "none must be a sentence"),
    "typo": ({"gap": "x", "test": ["a"]}, "unknown key 'test'"),
    "no-tests": ({"tests": []}, "non-empty list"),
    "no-function": ({"tests": [DEMO]}, "is not a node id"),
    "no-file": (
        {"tests": ["tests/unit/test_gone.py::test_the_port_moves"]},
        "there is no tests/unit/test_gone.py",
    ),
    "no-such-test": ({"tests": [f"{DEMO}::test_port_moves"]}, "defines no test_port_moves"),
    "no-such-method": (
        {"tests": [f"{DEMO}::TestGroup::test_elsewhere"]},
        "defines no TestGroup.test_elsewhere",
    ),
    "no-such-param-id": (
        {"tests": [f"{DEMO}::test_the_port_moves[default-port]"]},
        "the id 'default-port' is not written",
    ),
    "not-a-test-file": (
        {"tests": ["plugins/module_utils/test_demo.py::test_the_port_moves"]},
        "a test file is a test_*.py",
    ),
    "via-without-the-option": (
        {"tests": [f"{DEMO}::test_the_port_moves"], "via": "inventory/lab.yml"},
        "via: inventory/lab.yml never mentions vllm_port",
    ),
    "via-missing": (
        {"tests": [f"{DEMO}::test_the_port_moves"], "via": ["inventory/gone.yml"]},
        "via: there is no inventory/gone.yml",
    ),
    "via-without-tests": ({"gap": "x", "via": "inventory/lab.yml"}, "via goes with tests only"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_a_bad_row_is_named(demo, case):
    row, problem = BAD_ROWS[case]
    problems = row_problems("vllm_port", row, demo)
    assert any(problem in text for text in problems), problems


def test_a_test_that_never_mentions_the_option_is_a_bogus_row(demo):
    row = {"tests": [f"{DEMO}::test_the_port_moves"]}
    assert row_problems("vllm_port", row, demo) == []
    (problem,) = row_problems("vllm_master_port", row, demo)
    assert "never mentions vllm_master_port" in problem
    # Through the inventory the test relies on, the inventory must mention it instead.
    assert row_problems("vllm_api_key", {**row, "via": "inventory/lab.yml"}, demo) == []


def test_a_pending_test_file_passes_only_while_it_is_absent_and_listed(demo):
    row = {"tests": ["tests/integration/test_new.py::test_it"]}
    pending = frozenset({"tests/integration/test_new.py"})
    assert "there is no tests/integration/test_new.py" in row_problems("x", row, demo)[0]
    assert row_problems("x", row, demo, pending) == []
    (demo / "tests" / "integration").mkdir()
    (demo / "tests" / "integration" / "test_new.py").write_text("def test_other():\n    x = 1\n")
    assert "defines no test_it" in row_problems("x", row, demo, pending)[0]


def test_every_entry_point_and_nested_option_counts(tmp_path):
    (tmp_path / "roles" / "demo" / "meta").mkdir(parents=True)
    (tmp_path / "roles" / "demo" / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n"
        "  main:\n"
        "    options:\n"
        "      demo_users:\n"
        "        type: list\n"
        "        options:\n"
        "          name: {type: str}\n"
        "  preflight:\n"
        "    options:\n"
        "      demo_port: {type: int}\n",
        encoding="utf-8",
    )
    assert spec_options(tmp_path) == {"demo": {"demo_users", "demo_users[].name", "demo_port"}}
