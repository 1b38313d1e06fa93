"""The lab node image: Debian bookworm with systemd, built by mmdebstrap and docker-imported.

The image is tagged ``gb10-lab-node:<hash>`` where the hash covers every input that
decides its content (this file, ``packages.txt`` and the ``rootfs/`` overlay), so it is
rebuilt only when one of them changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from labdocker import apt_sources, docker, exists, log, prune_images

HERE = Path(__file__).resolve().parent
IMAGE_REPO = "gb10-lab-node"
LABEL = "gb10.lab"


def image_inputs() -> list[Path]:
    """Every file whose content decides the node image, in a stable order."""
    files = [HERE / "image.py", HERE / "packages.txt"]
    files += sorted(p for p in (HERE / "rootfs").rglob("*") if p.is_file())
    return files


def image_tag() -> str:
    digest = hashlib.sha256()
    for path in image_inputs():
        digest.update(str(path.relative_to(HERE)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
        digest.update(b"x" if os.access(path, os.X_OK) else b"-")
    return f"{IMAGE_REPO}:{digest.hexdigest()[:12]}"


def packages() -> list[str]:
    lines = (HERE / "packages.txt").read_text().splitlines()
    return [ln.split("#")[0].strip() for ln in lines if ln.split("#")[0].strip()]


def build_image() -> str:
    """Build the node image unless one of the same inputs exists; return its tag."""
    tag = image_tag()
    if exists("image", tag):
        log(f"node image {tag} is up to date")
        return tag
    prune_images(IMAGE_REPO, keep=set())
    log(f"building node image {tag} with mmdebstrap")
    with tempfile.TemporaryDirectory() as tmp:
        tarball = Path(tmp) / "rootfs.tar"
        cmd = [
            "mmdebstrap",
            "--variant=apt",
            "--include=" + ",".join(packages()),
            f"--customize-hook=sync-in {HERE / 'rootfs'} /",
            # systemd in a container: no consoles to log in on, no first-boot wizard
            '--customize-hook=chroot "$1" systemctl mask getty@tty1.service '
            "serial-getty@console.service systemd-firstboot.service",
            "bookworm",
            str(tarball),
            apt_sources(),
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        docker(
            "import",
            "--change",
            'CMD ["/lib/systemd/systemd"]',
            "--change",
            "ENV container=docker",
            "--change",
            f"LABEL {LABEL}=node",
            str(tarball),
            tag,
        )
    log(f"built {tag}")
    return tag
