"""Offline stand-in for get-pip.py (gb10-serving-get-pip-stand-in, version 1).

Written by gb10.serving's scripts/ansible-test.sh to the path where ansible-test
caches get-pip.py, so that ansible-test does not download it. Delete this file to
let ansible-test download the real one instead.

ansible-test bootstraps pip into each empty virtual environment it creates by
running this file through its quiet_pip.py wrapper (GET_PIP=<this file>) as

    python quiet_pip.py --disable-pip-version-check pip==24.2 --no-setuptools --no-wheel

Like get-pip.py it takes pip install options and requirements, and the flags
--no-pip, --no-setuptools and --no-wheel, which only matter when no requirement
is given: then it installs pip, setuptools and wheel, less those turned off.
Instead of an embedded copy of pip it runs the pip wheel that CPython ships for
ensurepip, which installs the requested packages from the configured index
(pip.conf and PIP_* settings apply).
"""

from __future__ import annotations

import glob
import os
import re
import sys
import sysconfig

DEFAULT_FLAGS = ("--no-pip", "--no-setuptools", "--no-wheel")


def version_key(wheel: str) -> tuple[int, ...]:
    """Sort key for pip-<version>-*.whl file names."""
    match = re.match(r"pip-([0-9.]+)", os.path.basename(wheel))
    if not match:
        return ()
    return tuple(int(part) for part in match.group(1).strip(".").split(".") if part)


def bundled_pip_wheel() -> str:
    """Return the newest pip wheel that this Python carries for ensurepip."""
    directories = []
    try:
        import ensurepip
    except ImportError:
        pass
    else:
        directories.append(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled"))
    # Debian and others move the wheels out of the standard library.
    directories.append(sysconfig.get_config_var("WHEEL_PKG_DIR") or "")
    directories.append("/usr/share/python-wheels")
    wheels = [
        wheel
        for directory in directories
        if directory
        for wheel in glob.glob(os.path.join(directory, "pip-*.whl"))
    ]
    if not wheels:
        sys.exit(
            f"get-pip stand-in: {sys.executable} has no bundled pip wheel (is ensurepip installed?)"
        )
    return max(wheels, key=version_key)


def main() -> None:
    """Install the requested packages with the bundled pip."""
    args = [arg for arg in sys.argv[1:] if arg not in DEFAULT_FLAGS]
    defaults = [
        name for name in ("pip", "setuptools", "wheel") if "--no-" + name not in sys.argv[1:]
    ]

    # pip runs from a wheel on sys.path, as the pip documentation describes.
    sys.path.insert(0, bundled_pip_wheel())

    from pip._internal.cli.main import main as pip_main
    from pip._internal.commands import create_command

    _options, requirements = create_command("install").parse_args(list(args))
    if not requirements:
        args.extend(defaults)

    sys.exit(pip_main(["install"] + args))


if __name__ == "__main__":
    main()
