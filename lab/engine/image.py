"""The lab engine image: a real vLLM (the CPU build) in a venv, plus the tiny-model generator.

    python3 lab/engine/image.py build   build gb10-lab-engine:<hash> unless it exists; print it
    python3 lab/engine/image.py tag     print the tag the current inputs give

No container registry is reachable, so nothing starts FROM a pulled image:

1. on the host, ``pip download`` (with the machine's own pip configuration) fetches every
   wheel pinned in ``requirements.txt`` for CPython 3.11 on manylinux x86_64 into a temporary
   wheelhouse; ``torch==2.13.0+cpu`` is not on PyPI and comes from a directory named by pip's
   ``find-links`` setting, which is looked up here, never hard-coded;
2. ``mmdebstrap`` builds a Debian bookworm rootfs with ``packages.txt``, and its customize
   hook (``customize.sh``) copies the wheelhouse in, installs the venv ``/opt/vllm`` from it
   with ``--no-index --no-deps``, and deletes it again;
3. the rootfs tarball is ``docker import``-ed with the image's environment.

The tag is a hash of every file that decides the image (this file, ``customize.sh``,
``packages.txt``, ``requirements.txt`` and ``tiny_model.py``, which the image carries as
``/opt/lab/tiny_model.py``), so the image is rebuilt only when one of them changes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "node"))

from labdocker import apt_sources, docker, exists, log, prune_images  # noqa: E402

IMAGE_REPO = "gb10-lab-engine"
# The stable name the lab inventory uses; it follows the newest build.
ALIAS = f"{IMAGE_REPO}:lab"
LABEL = "gb10.lab"
VENV = "/opt/vllm"
TINY_MODEL_IN_IMAGE = "/opt/lab/tiny_model.py"
PYTHON_VERSION = "3.11"
# Debian bookworm ships glibc 2.36: wheels tagged for any manylinux up to that run on it.
GLIBC_MINOR = 36
ENV = {
    "PATH": f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "VIRTUAL_ENV": VENV,
    "VLLM_TARGET_DEVICE": "cpu",
    # The engine runs as an arbitrary UID (1000 in the vllm role) that has no home directory;
    # /tmp inside the image is the one place every UID may write.
    "HOME": "/tmp",  # noqa: S108
    # Nothing in the lab can reach the internet; do not try.
    "VLLM_NO_USAGE_STATS": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


def image_inputs() -> list[Path]:
    """Every file whose content decides the engine image, in a stable order."""
    names = ("image.py", "customize.sh", "packages.txt", "requirements.txt", "tiny_model.py")
    return [HERE / name for name in names]


def image_tag() -> str:
    digest = hashlib.sha256()
    for path in image_inputs():
        digest.update(str(path.relative_to(HERE)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
        digest.update(b"x" if os.access(path, os.X_OK) else b"-")
    return f"{IMAGE_REPO}:{digest.hexdigest()[:12]}"


def _list_file(name: str) -> list[str]:
    lines = (HERE / name).read_text().splitlines()
    return [ln.split("#")[0].strip() for ln in lines if ln.split("#")[0].strip()]


def packages() -> list[str]:
    return _list_file("packages.txt")


def requirements() -> dict[str, str]:
    """The pinned Python packages, ``{normalised name: exact version}``."""
    pins = {}
    for line in _list_file("requirements.txt"):
        name, sep, version = line.partition("==")
        if not sep or not version or any(c in version for c in "<>=!*,; "):
            raise SystemExit(f"requirements.txt: {line!r} is not pinned as NAME==VERSION")
        pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def parse_find_links(pip_config_list: str, environ: dict[str, str]) -> list[str]:
    """The directories pip searches as ``find-links``, from ``pip config list`` and env.

    ``pip config list`` prints ``scope.key='value'`` lines; a value may hold several
    locations separated by whitespace, as paths or ``file://`` URLs.
    """
    values = []
    for line in pip_config_list.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().endswith("find-links"):
            values.append(value.strip().strip("'\""))
    if environ.get("PIP_FIND_LINKS"):
        values.append(environ["PIP_FIND_LINKS"])
    dirs = []
    for value in values:
        for item in value.split():
            path = item.removeprefix("file://")
            if path not in dirs:
                dirs.append(path)
    return dirs


def find_torch_wheel(dirs: list[str], version: str) -> Path:
    """The local torch wheel of exactly ``version`` for CPython 3.11 x86_64, or exit."""
    tag = PYTHON_VERSION.replace(".", "")
    pattern = f"torch-{version}-cp{tag}-cp{tag}-*x86_64.whl"
    for directory in dirs:
        found = sorted(Path(directory).glob(pattern)) if Path(directory).is_dir() else []
        if found:
            return found[0]
    searched = ", ".join(dirs) or "none configured"
    raise SystemExit(
        f"torch {version} not found: no {pattern} in pip's find-links directories "
        f"({searched}). Put that wheel in a directory and name it in pip's configuration "
        "(`pip config set global.find-links DIR`), then build again."
    )


def local_torch_wheel(pins: dict[str, str]) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        text=True,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"pip config list failed: {proc.stderr.strip()}")
    return find_torch_wheel(parse_find_links(proc.stdout, dict(os.environ)), pins["torch"])


def platform_args() -> list[str]:
    args = []
    for minor in range(GLIBC_MINOR, 16, -1):
        args += ["--platform", f"manylinux_2_{minor}_x86_64"]
    for legacy in ("manylinux2014", "manylinux2010", "manylinux1"):
        args += ["--platform", f"{legacy}_x86_64"]
    return args


def download_wheels(wheelhouse: Path) -> None:
    """Fetch every pinned wheel for the image's Python into ``wheelhouse``."""
    pins = requirements()
    torch_wheel = local_torch_wheel(pins)
    log(f"torch wheel: {torch_wheel}")
    req_file = wheelhouse / "requirements.txt"
    req_file.write_text("".join(f"{name}=={ver}\n" for name, ver in sorted(pins.items())))
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
        "--abi",
        "cp" + PYTHON_VERSION.replace(".", ""),
        *platform_args(),
        "--find-links",
        str(torch_wheel.parent),
        "--dest",
        str(wheelhouse),
        "-r",
        str(req_file),
    ]
    # pip's own chatter (this machine's config names index directories that may not exist)
    # is only worth showing when the download fails.
    proc = subprocess.run(cmd, text=True, capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"pip download failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    wheels = list(wheelhouse.glob("*.whl"))
    if len(wheels) != len(pins):
        raise SystemExit(f"pip download gave {len(wheels)} wheels for {len(pins)} pins")


def build_image() -> str:
    """Build the engine image unless one of the same inputs exists; point ALIAS at it."""
    tag = image_tag()
    if exists("image", tag):
        log(f"engine image {tag} is up to date")
    else:
        _build(tag)
    docker("tag", tag, ALIAS)
    prune_images(IMAGE_REPO, keep={tag.split(":", 1)[1], ALIAS.split(":", 1)[1]})
    return tag


def _build(tag: str) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gb10-lab-engine-") as tmp:
        wheelhouse = Path(tmp) / "wheels"
        wheelhouse.mkdir()
        log(f"building engine image {tag}: downloading wheels")
        download_wheels(wheelhouse)
        log(f"wheels ready after {time.monotonic() - started:.0f} s; running mmdebstrap")
        tarball = Path(tmp) / "rootfs.tar"
        hook = " ".join(
            [
                "sh",
                shlex.quote(str(HERE / "customize.sh")),
                '"$1"',
                shlex.quote(str(wheelhouse)),
                shlex.quote(str(HERE / "tiny_model.py")),
            ]
        )
        cmd = [
            "mmdebstrap",
            "--variant=apt",
            "--include=" + ",".join(packages()),
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-exclude=/usr/share/man/*",
            "--dpkgopt=path-exclude=/usr/share/info/*",
            f"--customize-hook={hook}",
            "bookworm",
            str(tarball),
            apt_sources(),
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        log(f"rootfs ready after {time.monotonic() - started:.0f} s; importing")
        changes = [f"ENV {key}={value}" for key, value in ENV.items()]
        changes += ["WORKDIR /tmp", 'CMD ["vllm", "--version"]', f"LABEL {LABEL}=engine"]
        docker("import", *(arg for c in changes for arg in ("--change", c)), str(tarball), tag)
    size = docker("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip()
    log(f"built {tag} in {time.monotonic() - started:.0f} s, {int(size) / 1e9:.2f} GB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["build", "tag"])
    args = parser.parse_args(argv)
    print(build_image() if args.action == "build" else image_tag())
    return 0


if __name__ == "__main__":
    sys.exit(main())
