"""Small helpers the lab scripts share: logging and running the docker CLI."""

from __future__ import annotations

import subprocess
import sys


def log(msg: str) -> None:
    print(f"== lab: {msg}", file=sys.stderr, flush=True)


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``docker ARGS``; on failure (with check) exit with docker's own message."""
    proc = subprocess.run(["docker", *args], text=True, capture_output=True, check=False)
    if check and proc.returncode != 0:
        reason = proc.stderr.strip()
        raise SystemExit(f"docker {' '.join(args)} failed ({proc.returncode}): {reason}")
    return proc


def exists(kind: str, name: str) -> bool:
    """Whether a docker object (``image``, ``network``, ``container``) of that name exists."""
    return docker(kind, "inspect", name, check=False).returncode == 0
