"""The doctor on the owner's cluster: playbooks/doctor.yml with the production-shaped
inventory (the service key in the vault, the served name team-coder, the API on 8100), as an
owner runs it after site.yml. Read only, one report, nothing failing, no secret shown.

The integration stage proves each fault the doctor names on the lab inventory; this run
proves that its reads follow the owner's choices: the canary and /v1/models ask with the
vaulted key for the served name on the moved port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[3] / "lab"))
from production import read_vault  # noqa: E402 (lab/production.py)

PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3]))
SERVED = "team-coder"  # the served name in inventory/lab-production's recipe


@pytest.fixture(scope="module")
def doctor():
    """One doctor run: its output and the JSON report it wrote."""
    with tempfile.TemporaryDirectory(prefix="gb10-doctor-") as out:
        proc = subprocess.run(
            [
                "ansible-playbook",
                f"--inventory={PROJECT / 'inventory' / 'lab-production'}",
                f"--vault-password-file={PROJECT / 'lab' / 'vault-pass'}",
                str(PROJECT / "playbooks" / "doctor.yml"),
                "--extra-vars",
                json.dumps({"doctor_report_dir": out}),
            ],
            capture_output=True,
            text=True,
            check=False,
            cwd=PROJECT,
            # The project's settings, and not the scenario's log of its own runs.
            env={
                **{k: v for k, v in os.environ.items() if k != "ANSIBLE_LOG_PATH"},
                "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
            },
        )
        (page,) = Path(out).glob("doctor/*/doctor.json")
        yield proc, json.loads(page.read_text())


def check(report, name):
    return next(c for c in report["checks"] if c["check"] == name)


def test_the_doctor_finds_the_owner_s_cluster_healthy_and_changes_nothing(doctor):
    proc, report = doctor
    assert proc.returncode == 0, proc.stdout[-3000:]
    failing = [c for c in report["checks"] if c["status"] == "fail"]
    assert not failing, failing
    recap = proc.stdout[proc.stdout.index("PLAY RECAP") :]
    assert "changed=0" in recap
    assert "changed=1" not in recap


def test_the_api_checks_ask_with_the_vaulted_key_for_the_served_name_on_its_port(doctor):
    report = doctor[1]
    assert check(report, "/v1/models")["evidence"] == f"/v1/models answered 200, serving {SERVED}"
    assert check(report, "canary completion")["status"] == "ok"
    # Nothing answers on the default port any more (test_vllm.py): /health answered on 8100.
    assert check(report, "/health")["status"] == "ok"


def test_no_secret_in_the_doctor_s_output_or_report(doctor):
    proc, report = doctor
    text = proc.stdout + proc.stderr + json.dumps(report)
    for name, secret in read_vault().items():
        assert secret not in text, name
