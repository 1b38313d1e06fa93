"""Print the slowest tests of a `scripts/test.sh` run, from the JUnit XML files it wrote.

    python3 scripts/slowest_tests.py [--count N] FILE.xml...

Each file is one stage's report (pytest's --junitxml, ansible-test's own junit output); the
stage is the file's name without .xml. A test's time is its own call plus its setup (a
module fixture that ran a playbook counts for the first test that asked for it).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def cases(path: Path):
    """(seconds, stage, test id) of every test case in one JUnit file."""
    try:
        root = ET.parse(path).getroot()  # noqa: S314 (our own test runner's report)
    except (ET.ParseError, OSError) as exc:
        print(f"slowest_tests: skipped {path}: {exc}", file=sys.stderr)
        return
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".strip(":")
        yield float(case.get("time") or 0), path.stem, name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args(argv)
    found = sorted(
        (case for path in args.files if path.is_file() for case in cases(path)), reverse=True
    )
    if not found:
        print("no test timings were recorded")
        return 0
    print(f"{'seconds':>8}  {'stage':<12} test")
    for seconds, stage, name in found[: args.count]:
        print(f"{seconds:8.1f}  {stage:<12} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
