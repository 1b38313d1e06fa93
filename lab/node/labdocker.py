"""Small helpers the lab scripts share: logging and running the docker CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


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


def apt_sources() -> str:
    """The machine's own apt sources, so images come from the mirror it already uses."""
    for candidate in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        path = Path(candidate)
        if path.is_file() and path.read_text().strip():
            return candidate
    raise SystemExit("no apt sources found on this machine; mmdebstrap needs one")


def prune_images(repo: str, keep: set[str]) -> None:
    """Remove the images of ``repo`` built from older inputs (tags other than ``keep``)."""
    tags = docker("images", repo, "--format", "{{.Tag}}").stdout.split()
    for tag in tags:
        if tag not in keep and tag != "<none>":
            docker("rmi", f"{repo}:{tag}", check=False)
