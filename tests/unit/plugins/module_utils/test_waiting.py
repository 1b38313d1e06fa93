# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The flat wait loop and the byte count the download wait reports."""

from __future__ import annotations

import os
import sys

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._waiting import (
    follow,
    read_tail,
    tree_bytes,
)
from ansible_collections.gb10.serving.tests.unit.plugins.module_utils.fake_time import FakeTime


def looks_until(done_at, fake):
    calls = []

    def look():
        calls.append(fake.now)
        fake.now += fake.look_takes
        return {"done": len(calls) >= done_at, "n": len(calls)}

    return look, calls


def test_a_thousand_rounds_stay_flat():
    """Far past the ~245 rounds that a self-including task file survives, at a low limit."""
    fake = FakeTime()
    look, calls = looks_until(1000, fake)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(120)  # pytest's own frames fit; any nesting per round would not
    try:
        last, rounds, elapsed = follow(look, 0.5, 10_000, fake.clock, fake.sleep)
    finally:
        sys.setrecursionlimit(limit)
    assert (rounds, last["n"], len(calls)) == (1000, 1000, 1000)
    assert fake.sleeps == [0.5] * 999
    assert elapsed == pytest.approx(499.5)


def test_the_budget_ends_the_wait_without_a_look_past_it():
    fake = FakeTime(look_takes=1.0)
    look, calls = looks_until(10**6, fake)
    last, rounds, elapsed = follow(look, 2, 10, fake.clock, fake.sleep)
    # Looks start at 0, 3, 6 and 9 s (each takes 1 s, then 2 s of sleep); after the one
    # that ends at 10 s, another sleep would pass the budget.
    assert [at - 100 for at in calls] == [0, 3, 6, 9]
    assert (rounds, last["done"], elapsed) == (4, False, 10)


@pytest.mark.parametrize("budget", [0, 0.1])
def test_a_short_budget_still_looks_once(budget):
    fake = FakeTime()
    look, calls = looks_until(10, fake)
    last, rounds, _elapsed = follow(look, 1, budget, fake.clock, fake.sleep)
    assert (rounds, len(calls), fake.sleeps, last["done"]) == (1, 1, [], False)


def test_done_at_the_first_look_never_sleeps():
    fake = FakeTime()
    look, _calls = looks_until(1, fake)
    assert follow(look, 30, 14400, fake.clock, fake.sleep)[1] == 1
    assert fake.sleeps == []


@pytest.mark.parametrize(("poll", "budget", "name"), [(-1, 10, "poll"), (1, -0.5, "budget")])
def test_negative_times_are_refused(poll, budget, name):
    with pytest.raises(ValueError, match=f"{name} must be 0 or more seconds"):
        follow(lambda: {"done": True}, poll, budget)


def test_tree_bytes_counts_files_and_never_follows_links(tmp_path):
    repo = tmp_path / "models--org--name"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / "abc").mkdir(parents=True)
    (repo / "blobs" / "a").write_bytes(b"x" * 1000)
    (repo / "blobs" / "b.incomplete").write_bytes(b"y" * 24)
    (repo / "snapshots" / "abc" / "model.safetensors").symlink_to(repo / "blobs" / "a")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"z" * 5000)
    # A link planted inside the cache to a directory elsewhere is not counted.
    (repo / "snapshots" / "escape").symlink_to(outside)
    assert tree_bytes(str(repo)) == 1024
    assert tree_bytes(str(tmp_path / "missing")) == 0
    link = tmp_path / "linked-repo"
    link.symlink_to(outside)
    assert tree_bytes(str(link)) == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_tree_bytes_skips_unreadable_directories(tmp_path):
    (tmp_path / "closed").mkdir()
    (tmp_path / "closed" / "f").write_bytes(b"1234")
    (tmp_path / "open").write_bytes(b"12")
    (tmp_path / "closed").chmod(0)
    try:
        assert tree_bytes(str(tmp_path)) == 2
    finally:
        (tmp_path / "closed").chmod(0o755)


# --- read_tail -----------------------------------------------------------------------------


def test_read_tail_gives_the_last_lines(tmp_path):
    log = tmp_path / "download.log"
    log.write_text("".join(f"line {n}\n" for n in range(100)))
    lines, problem = read_tail(str(log), 3)
    assert (lines, problem) == (["line 97", "line 98", "line 99"], None)


def test_read_tail_reads_only_the_end_of_a_big_file(tmp_path):
    log = tmp_path / "download.log"
    log.write_text("x" * 1000 + "\n" + "".join(f"line {n}\n" for n in range(10)))
    lines, _problem = read_tail(str(log), 100, max_bytes=40)
    # The first line of the window is cut, so it is dropped; the rest is whole.
    assert lines == [f"line {n}" for n in range(5, 10)]


def test_read_tail_of_a_missing_log_is_empty_without_a_problem(tmp_path):
    assert read_tail(str(tmp_path / "none.log")) == ([], None)


def test_read_tail_refuses_a_planted_link_and_names_it(tmp_path):
    secret = tmp_path / "root-only"
    secret.write_text("SECRET\n")
    log = tmp_path / "download.log"
    log.symlink_to(secret)
    lines, problem = read_tail(str(log))
    assert lines == []
    assert str(log) in problem
    assert "symlink" in problem
    assert "SECRET" not in problem
