"""Verify what the check, converge and idempotence runs printed (their log, ANSIBLE_LOG_PATH)
and what the lab hub served: the download followed for hundreds of polls, no secret shown."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[3] / "lab"))
from production import read_vault  # noqa: E402 (lab/production.py)

EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
# Far more rounds than a self-including task file (one include a round) survives: ansible-core
# dies with RecursionError at about 245.
MIN_POLLS = 200
DONE = re.compile(
    r"\[(node\d)\] gb10-lab/tiny-coder: [\d.]+ GB on disk after \d+ s, (\d+) polls \(done\)"
)


def log() -> str:
    return (EPHEMERAL / "ansible.log").read_text()


def test_each_node_followed_its_download_for_hundreds_of_polls():
    done = {node: int(polls) for node, polls in DONE.findall(log())}
    assert set(done) == {"node0", "node1"}, done
    assert all(polls >= MIN_POLLS for polls in done.values()), done
    assert "(downloading)" in log()


def test_both_nodes_fetched_the_checkpoint_from_the_hub_once():
    entries = [json.loads(line) for line in (EPHEMERAL / "hub.log").read_text().splitlines()]
    weights = [
        entry
        for entry in entries
        if entry["method"] == "GET" and entry["path"].endswith("/model.safetensors")
    ]
    assert len(weights) == 2, weights
    assert all(entry["complete"] for entry in weights), weights


def test_no_secret_in_any_run_s_output():
    text = log()
    assert "PLAY RECAP" in text
    for name, secret in read_vault().items():
        assert secret not in text, name
