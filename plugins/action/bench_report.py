# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action gb10.serving.bench_report: write bench.json/.md/.png (or sweep.*) on the controller."""

from __future__ import annotations

import datetime
import json
import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gb10.serving.plugins.module_utils._bench_chart import (
    MatplotlibMissing,
    bench_png,
    sweep_png,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_common import (
    SCHEMA_VERSION,
    BenchReportError,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_markdown import render_markdown
from ansible_collections.gb10.serving.plugins.module_utils._bench_reference import (
    FIELD_REPORT_REFERENCE,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_report import build_report
from ansible_collections.gb10.serving.plugins.module_utils._bench_sweep import (
    compare_variants,
    render_sweep_markdown,
)

DIR_MODE = 0o755
FILE_MODE = 0o644
# build_report's inputs when `report` is given as its parts; the others are optional.
REQUIRED_INPUTS = ("runs", "deployment")
OPTIONAL_INPUTS = (
    "deep",
    "tool_calls",
    "warmup",
    "spec_decode",
    "throughput",
    "reference",
    "lab",
    "generated_at",
)
MATPLOTLIB_HINT = "pip install matplotlib"


def _plain(value, where="report"):
    """Templated data as plain dicts, lists and scalars, ready for json.dumps."""
    if isinstance(value, dict):
        return {str(key): _plain(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, str):
        return str(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    raise BenchReportError(f"{where} is {type(value).__name__}, which a report cannot hold")


def utc_now():
    """The current time as the report writes it (UTC, seconds)."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def bench_from_input(report):
    """bench.json's content: ``report`` itself when already built, else built from its parts."""
    if not isinstance(report, dict):
        raise BenchReportError(
            f"report is {type(report).__name__}: give build_report's result, or a mapping of "
            f"its inputs ({', '.join(REQUIRED_INPUTS + OPTIONAL_INPUTS)})"
        )
    if "schema_version" in report:
        if report["schema_version"] != SCHEMA_VERSION:
            raise BenchReportError(
                f"report has schema_version {report['schema_version']!r}; this collection "
                f"writes version {SCHEMA_VERSION}"
            )
        for key in ("summary", "runs", "generated_at"):
            if key not in report:
                raise BenchReportError(f"report has schema_version but no {key!r}: not a report")
        return report
    missing = [key for key in REQUIRED_INPUTS if key not in report]
    unknown = sorted(set(report) - set(REQUIRED_INPUTS) - set(OPTIONAL_INPUTS))
    if missing or unknown:
        raise BenchReportError(
            "report must be build_report's result or its inputs: "
            + "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unknown {', '.join(unknown)}" if unknown else "",
                )
                if part
            )
        )
    return build_report(
        runs=report["runs"],
        deployment=report["deployment"],
        deep=report.get("deep"),
        tool_calls=report.get("tool_calls"),
        warmup=report.get("warmup"),
        spec_decode=report.get("spec_decode"),
        throughput=report.get("throughput"),
        reference=report.get("reference", FIELD_REPORT_REFERENCE),
        lab=report.get("lab", False),
        generated_at=report.get("generated_at") or utc_now(),
    )


def sweep_from_input(report):
    """sweep.json's content: compare_variants' result, or computed from its input list."""
    if isinstance(report, list):
        return compare_variants(report, generated_at=utc_now())
    if isinstance(report, dict) and {"columns", "variants", "best"} <= set(report):
        return report
    raise BenchReportError(
        "with sweep=true, report must be the list of variants ({name, overrides, boot, "
        "report}) or compare_variants' result"
    )


def report_files(data, sweep):
    """(file name -> bytes, warnings) for a report or a sweep comparison."""
    stem = "sweep" if sweep else "bench"
    markdown = render_sweep_markdown(data) if sweep else render_markdown(data)
    try:
        text = json.dumps(data, indent=2, allow_nan=False)
    except ValueError as exc:
        raise BenchReportError(f"the report holds a number JSON cannot: {exc}") from None
    files = {
        f"{stem}.json": (text + "\n").encode("utf-8"),
        f"{stem}.md": markdown.encode("utf-8"),
    }
    warnings = []
    try:
        files[f"{stem}.png"] = sweep_png(data) if sweep else bench_png(data)
    except MatplotlibMissing as exc:
        warnings.append(
            f"{stem}.png not written: matplotlib cannot be imported on the controller "
            f"({exc}); {MATPLOTLIB_HINT} into the Python that runs Ansible to get the chart."
        )
    return files, warnings


def _differs(path, content):
    try:
        with open(path, "rb") as handle:
            return handle.read() != content
    except FileNotFoundError:
        return True


def _make_dirs(path):
    """Create ``path`` and any missing parents, each 0755; return how many were created."""
    missing = []
    while not os.path.exists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for directory in reversed(missing):
        os.mkdir(directory)
        os.chmod(directory, DIR_MODE)
    return len(missing)


def _write(path, content):
    """Replace ``path`` with ``content`` atomically, mode 0644."""
    handle, temporary = tempfile.mkstemp(prefix=".bench-report-", dir=os.path.dirname(path))
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


class ActionModule(ActionBase):
    """Build the report on the controller and write its files into dest."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # unused, as in every action plugin since ansible-core 2.x

        _validation, args = self.validate_argument_spec(
            argument_spec={
                "dest": {"type": "path", "required": True},
                "report": {"type": "raw", "required": True},
                "sweep": {"type": "bool", "default": False},
            },
        )
        dest = self._loader.path_dwim(args["dest"])
        if os.path.exists(dest) and not os.path.isdir(dest):
            raise AnsibleActionFail(
                f"dest {dest} exists and is not a directory: give the directory the report "
                "goes into"
            )
        try:
            data = _plain(args["report"])
            data = sweep_from_input(data) if args["sweep"] else bench_from_input(data)
            files, warnings = report_files(data, args["sweep"])
        except BenchReportError as exc:
            raise AnsibleActionFail(f"bench_report: {exc}") from exc

        paths = {name: os.path.join(dest, name) for name in files}
        stale = [name for name, content in files.items() if _differs(paths[name], content)]
        changed = bool(stale) or not os.path.isdir(dest)
        if not self._task.check_mode:
            try:
                _make_dirs(dest)
                for name in stale:
                    _write(paths[name], files[name])
            except OSError as exc:
                raise AnsibleActionFail(
                    f"bench_report: cannot write the report into {dest}: {exc}"
                ) from exc
        if warnings:
            result["warnings"] = list(result.get("warnings") or []) + warnings
        result["changed"] = changed
        result["dest"] = dest
        result["files"] = [paths[name] for name in sorted(files)]
        if args["sweep"]:
            result["best"] = data["best"]
        else:
            result["summary"] = data["summary"]
        # What bench.json / sweep.json hold, for a play that goes on with it (the sweep).
        result["report"] = data
        return result
