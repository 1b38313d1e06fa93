"""The node image tag is a hash of exactly the inputs that decide the image."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).resolve().parents[2] / "lab" / "node"


@pytest.fixture
def node_copy(tmp_path, monkeypatch):
    """A private copy of lab/node, with its image module imported from the copy."""
    copy = tmp_path / "node"
    shutil.copytree(NODE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(copy))
    spec = importlib.util.spec_from_file_location("lab_image_under_test", copy / "image.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield copy, module
    sys.modules.pop("labdocker", None)


def test_tag_is_stable_and_names_the_repository(node_copy):
    _skip, image = node_copy
    tag = image.image_tag()
    assert tag == image.image_tag()
    repo, _skip, digest = tag.partition(":")
    assert repo == "gb10-lab-node"
    assert len(digest) == 12
    assert int(digest, 16) >= 0


def test_tag_ignores_files_that_are_not_inputs(node_copy):
    copy, image = node_copy
    before = image.image_tag()
    (copy / "labdocker.py").write_text("# not an image input\n")
    assert image.image_tag() == before


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: (d / "packages.txt").write_text("systemd\nvim\n"), id="packages"),
        pytest.param(
            lambda d: (
                (d / "rootfs" / "etc").mkdir(parents=True)
                or (d / "rootfs" / "etc" / "motd").write_text("lab\n")
            ),
            id="new-rootfs-file",
        ),
        pytest.param(
            lambda d: (d / "rootfs" / "usr" / "local" / "sbin" / "show_gids").chmod(0o644),
            id="rootfs-mode",
        ),
        pytest.param(
            lambda d: (d / "image.py").write_text((d / "image.py").read_text() + "\n# v2\n"),
            id="recipe",
        ),
    ],
)
def test_tag_changes_with_every_input(node_copy, change):
    copy, image = node_copy
    before = image.image_tag()
    change(copy)
    assert image.image_tag() != before


def test_packages_list_drops_comments_and_blanks(node_copy):
    copy, image = node_copy
    (copy / "packages.txt").write_text("# header\n\nsystemd\nudev   # why\n")
    assert image.packages() == ["systemd", "udev"]
