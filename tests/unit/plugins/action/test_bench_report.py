# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action gb10.serving.bench_report, run as the task executor runs it, on a real ActionBase.

The inputs are the real lab captures (module_utils/fixtures/bench); the files are written
into pytest's temporary directory and read back.
"""

from __future__ import annotations

import json
import os
import re
import stat
import struct
import sys

import pytest
from ansible.errors import AnsibleActionFail
from ansible_collections.gb10.serving.plugins.action.bench_report import ActionModule
from ansible_collections.gb10.serving.plugins.module_utils._bench_common import LAB_NOTE
from ansible_collections.gb10.serving.plugins.module_utils._bench_reference import (
    FIELD_REPORT_REFERENCE,
)
from ansible_collections.gb10.serving.plugins.module_utils._bench_report import build_report
from ansible_collections.gb10.serving.plugins.module_utils._bench_serve import normalize_bench_json
from ansible_collections.gb10.serving.plugins.module_utils._bench_tool_calls import score_tool_calls
from ansible_collections.gb10.serving.tests.unit.plugins.action.utils import (
    run_action as run_plugin,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.captures import load_raw

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STAMP = "2026-12-02T17:10:00Z"


def run_action(args, check_mode=False, basedir=None):
    return run_plugin(ActionModule, "gb10.serving.bench_report", args, check_mode, basedir)


def saved(name):
    return normalize_bench_json(
        json.loads(load_raw("bench", f"vllm_bench_serve_{name}_cpu_tiny_v0.32.json"))
    )


def tool_calls():
    cases = json.loads(load_raw("bench", "chat_completions_tool_calls_cpu_tiny_hermes_v0.32.json"))
    responses = {case["case"]: case["response"] for case in cases}
    return score_tool_calls(
        [responses["named-get_weather"], responses["named-read_file"], responses["auto"]],
        ["get_weather", "read_file", "get_weather"],
    )


def inputs(**changes):
    """The report's parts as the bench role hands them over (lab captures)."""
    parts = {
        "runs": [
            {**saved("c1_goodput_detailed"), "concurrency": 1},
            {**saved("c4"), "concurrency": 4},
        ],
        "deep": saved("deep"),
        "tool_calls": tool_calls(),
        "warmup": {"requests": 4, "seconds": 1.5},
        "spec_decode": None,
        "throughput": {
            "prompt_tokens_per_s": 49.4,
            "generation_tokens_per_s": 13.0,
            "running": 0,
            "waiting": 0,
        },
        "deployment": {
            "image": "gb10-lab-engine:lab",
            "model": "gb10-lab/tiny-llama",
            "node_count": 2,
        },
        "lab": True,
        "generated_at": STAMP,
    }
    parts.update(changes)
    return parts


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def png_size(data):
    """Width and height from a PNG's IHDR chunk."""
    assert data[:8] == PNG_MAGIC
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def umask_077():
    """A strict umask: the action must set the modes itself."""
    old = os.umask(0o077)
    yield
    os.umask(old)


def test_writes_json_markdown_and_chart(tmp_path, umask_077):
    pytest.importorskip("matplotlib")
    dest = tmp_path / "reports" / "20261202T171000Z"
    result = run_action({"dest": str(dest), "report": inputs()})

    assert result["changed"] is True
    assert "failed" not in result
    assert "warnings" not in result
    assert result["dest"] == str(dest)
    assert result["files"] == [str(dest / name) for name in ("bench.json", "bench.md", "bench.png")]
    assert mode(tmp_path / "reports") == 0o755
    assert mode(dest) == 0o755
    for name in ("bench.json", "bench.md", "bench.png"):
        assert mode(dest / name) == 0o644
    assert sorted(os.listdir(dest)) == ["bench.json", "bench.md", "bench.png"]  # no temp files

    report = json.loads((dest / "bench.json").read_text(encoding="utf-8"))
    assert report["schema_version"] == 1
    assert report["generated_at"] == STAMP
    assert report["lab"] is True
    assert report["reference"] == FIELD_REPORT_REFERENCE  # the default reference row
    assert report["summary"]["single_stream"] == 366.0699446302817
    assert report["summary"]["conc_4"] == 780.9115493883487
    assert report["summary"]["tool_calls"] == "0/3"
    assert report["warmup"] == {"requests": 4, "seconds": 1.5}
    assert report["deployment"]["node_count"] == 2
    assert [run["concurrency"] for run in report["runs"]] == [1, 4]
    assert result["summary"] == report["summary"]

    markdown = (dest / "bench.md").read_text(encoding="utf-8")
    assert "| this run | 366.1 | 780.9 | n/a | n/a | 436.6 @456 | 0/3 |" in markdown
    assert (
        "| hybrid-v3 (field report) | ~43\u201348 | 111 | 153 | 242 | 43 @108K | 3/3 |" in markdown
    )
    assert LAB_NOTE in markdown
    assert "Warm-up: 4 requests in 1.5 s" in markdown

    assert png_size((dest / "bench.png").read_bytes()) == (800, 500)


def test_same_report_twice_changes_nothing_the_second_time(tmp_path):
    pytest.importorskip("matplotlib")
    dest = tmp_path / "report"
    assert run_action({"dest": str(dest), "report": inputs()})["changed"] is True
    before = {name: (dest / name).read_bytes() for name in os.listdir(dest)}
    second = run_action({"dest": str(dest), "report": inputs()})
    assert second["changed"] is False
    assert {name: (dest / name).read_bytes() for name in os.listdir(dest)} == before
    # A different figure rewrites the report.
    changed = run_action(
        {"dest": str(dest), "report": inputs(warmup={"requests": 30, "seconds": 9.0})}
    )
    assert changed["changed"] is True
    assert "Warm-up: 30 requests in 9.0 s" in (dest / "bench.md").read_text(encoding="utf-8")


def test_a_built_report_is_written_as_it_is(tmp_path):
    parts = inputs()
    built = build_report(reference=FIELD_REPORT_REFERENCE, **parts)
    run_action({"dest": str(tmp_path / "from-parts"), "report": parts})
    run_action({"dest": str(tmp_path / "built"), "report": built})
    for name in ("bench.json", "bench.md"):
        assert (tmp_path / "built" / name).read_bytes() == (
            tmp_path / "from-parts" / name
        ).read_bytes()


def test_defaults_stamp_and_no_reference(tmp_path):
    parts = inputs(reference=None, lab=None)
    del parts["generated_at"]
    del parts["lab"]
    run_action({"dest": str(tmp_path), "report": parts})
    report = json.loads((tmp_path / "bench.json").read_text(encoding="utf-8"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", report["generated_at"])
    assert report["reference"] is None
    assert report["lab"] is False
    markdown = (tmp_path / "bench.md").read_text(encoding="utf-8")
    assert "hybrid-v3" not in markdown
    assert LAB_NOTE not in markdown


def test_check_mode_writes_nothing(tmp_path):
    dest = tmp_path / "reports" / "new"
    result = run_action({"dest": str(dest), "report": inputs()}, check_mode=True)
    assert result["changed"] is True
    assert result["files"][0] == str(dest / "bench.json")
    assert not (tmp_path / "reports").exists()


def test_check_mode_after_a_write_reports_no_change(tmp_path):
    pytest.importorskip("matplotlib")
    run_action({"dest": str(tmp_path), "report": inputs()})
    assert (
        run_action({"dest": str(tmp_path), "report": inputs()}, check_mode=True)["changed"] is False
    )


def test_relative_dest_is_relative_to_the_playbook(tmp_path):
    result = run_action({"dest": "reports/one", "report": inputs()}, basedir=tmp_path)
    assert result["dest"] == str(tmp_path / "reports" / "one")
    assert (tmp_path / "reports" / "one" / "bench.json").is_file()


def test_without_matplotlib_writes_the_rest_and_warns(tmp_path, monkeypatch):
    # None in sys.modules makes `import matplotlib...` raise ImportError, cached or not.
    for name in [
        name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")
    ]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run_action({"dest": str(tmp_path), "report": inputs()})
    assert result["changed"] is True
    assert sorted(os.listdir(tmp_path)) == ["bench.json", "bench.md"]
    assert result["files"] == [str(tmp_path / "bench.json"), str(tmp_path / "bench.md")]
    assert len(result["warnings"]) == 1
    assert result["warnings"][0].startswith("bench.png not written: matplotlib cannot be imported")
    assert "pip install matplotlib" in result["warnings"][0]


def sweep_input():
    one = build_report(reference=FIELD_REPORT_REFERENCE, **inputs())
    two = build_report(
        reference=FIELD_REPORT_REFERENCE,
        **inputs(
            runs=[
                {**saved("c1_goodput_detailed"), "concurrency": 1},
                {**saved("failed"), "concurrency": 2},
            ],
            deep=None,
        ),
    )
    return [
        {
            "name": "tp1",
            "overrides": {"tensor_parallel": 1},
            "boot": {"kv_cache_tokens": 2097152, "max_concurrency": 4096.0},
            "report": one,
        },
        {
            "name": "tp2",
            "overrides": {"tensor_parallel": 2},
            "boot": {"kv_cache_tokens": 4194304, "max_concurrency": 8192.0},
            "report": two,
        },
    ]


def test_sweep_writes_the_comparison(tmp_path):
    pytest.importorskip("matplotlib")
    result = run_action({"dest": str(tmp_path / "sweep"), "report": sweep_input(), "sweep": True})
    assert result["changed"] is True
    assert result["files"] == [
        str(tmp_path / "sweep" / name) for name in ("sweep.json", "sweep.md", "sweep.png")
    ]
    comparison = json.loads((tmp_path / "sweep" / "sweep.json").read_text(encoding="utf-8"))
    assert comparison["best"]["kv_cache_tokens"] == ["tp2"]
    assert comparison["best"]["conc_4"] == ["tp1"]
    assert result["best"] == comparison["best"]
    markdown = (tmp_path / "sweep" / "sweep.md").read_text(encoding="utf-8")
    assert "| tp2 | **4,194,304** | **8192.0** |" in markdown
    assert png_size((tmp_path / "sweep" / "sweep.png").read_bytes()) == (800, 500)
    # The comparison itself, written again, changes nothing but the stamp-free files.
    again = run_action({"dest": str(tmp_path / "sweep"), "report": comparison, "sweep": True})
    assert again["changed"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param({"report": {}}, "missing required arguments: dest", id="no-dest"),
        pytest.param({"dest": "x"}, "missing required arguments: report", id="no-report"),
        pytest.param({"dest": "x", "report": "bench.json"}, "report is str", id="report-text"),
        pytest.param({"dest": "x", "report": {"deployment": {}}}, "missing runs", id="no-runs"),
        pytest.param(
            {"dest": "x", "report": {**inputs(), "colour": "red"}},
            "unknown colour",
            id="unknown-key",
        ),
        pytest.param(
            {"dest": "x", "report": {"schema_version": 2}}, "schema_version 2", id="schema-2"
        ),
        pytest.param(
            {"dest": "x", "report": {"schema_version": 1}}, "not a report", id="schema-only"
        ),
        pytest.param(
            {"dest": "x", "report": inputs(runs=[saved("c4")])},
            "needs the concurrency",
            id="run-without-concurrency",
        ),
        pytest.param(
            {"dest": "x", "report": inputs(), "sweep": True}, "with sweep=true", id="sweep-mapping"
        ),
        pytest.param(
            {"dest": "x", "report": [], "sweep": True}, "non-empty list", id="sweep-empty"
        ),
        pytest.param(
            {"dest": "x", "report": {"runs": [], "deployment": {"when": object()}}},
            "report.deployment.when is object",
            id="odd-value",
        ),
        pytest.param(
            {"dest": "x", "report": inputs(), "mode": "0600"},
            "Unsupported parameters.*mode",
            id="unknown-option",
        ),
    ],
)
def test_bad_arguments_fail_the_task(tmp_path, args, message):
    with pytest.raises(AnsibleActionFail, match=message):
        run_action(args, basedir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_dest_that_is_a_file_fails(tmp_path):
    target = tmp_path / "bench.json"
    target.write_text("{}", encoding="utf-8")
    with pytest.raises(AnsibleActionFail, match="exists and is not a directory"):
        run_action({"dest": str(target), "report": inputs()})
