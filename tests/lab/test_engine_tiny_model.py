"""The tiny lab model, generated inside the engine image into a real Hugging Face cache layout.

Needs docker and the engine image of the current inputs (``python3 lab/engine/image.py
build``); skipped otherwise. The generator in the tree is mounted over the image's copy, and
the container runs with no network, as an unprivileged UID, the way the vllm role runs it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ENGINE_DIR = Path(__file__).resolve().parents[2] / "lab" / "engine"
REPO = "gb10-lab/tiny-llama"
EOS = "<|im_end|>"
FILES = {
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
}
# Loads the model repository the way vLLM does with HF_HUB_OFFLINE=1 and prints what it saw.
HUB_PROBE = """
import json, sys
from huggingface_hub import snapshot_download
from transformers import AutoConfig, AutoTokenizer
rev = sys.argv[1]
path = snapshot_download("gb10-lab/tiny-llama", revision=rev)
config = AutoConfig.from_pretrained("gb10-lab/tiny-llama", revision=rev)
tok = AutoTokenizer.from_pretrained("gb10-lab/tiny-llama", revision=rev)
chat = tok.apply_chat_template(
    [{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=False
)
print(json.dumps({"path": path, "layers": config.num_hidden_layers, "vocab": len(tok),
                  "eos": tok.eos_token, "chat": chat}))
"""


def _engine_tag() -> str:
    spec = importlib.util.spec_from_file_location("lab_engine_image_tm", ENGINE_DIR / "image.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.image_tag()


@pytest.fixture(scope="module")
def engine_image() -> str:
    if shutil.which("docker") is None:
        pytest.skip("docker is not installed")
    tag = _engine_tag()
    probe = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"engine image {tag} is not built here (python3 lab/engine/image.py build)")
    return tag


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hf-cache")
    if os.getuid() == 0:
        os.chown(root, 1000, 1000)
    return root


def _user() -> str:
    return "1000:1000" if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}"


def run_in_engine(image: str, cache: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [
        "docker",
        "run",
        "--rm",
        "--network=none",
        f"--user={_user()}",
        "-v",
        f"{cache}:/cache/huggingface",
        "-v",
        f"{ENGINE_DIR / 'tiny_model.py'}:/opt/lab/tiny_model.py:ro",
        "-e",
        "HF_HOME=/cache/huggingface",
        "-e",
        "HF_HUB_OFFLINE=1",
        image,
        *args,
    ]
    return subprocess.run(cmd, text=True, capture_output=True, check=False, timeout=300)


def generate(image: str, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_in_engine(
        image, cache, "python", "/opt/lab/tiny_model.py", "--cache", "/cache/huggingface", *extra
    )


@pytest.fixture(scope="module")
def runs(engine_image, cache):
    """The generator run twice over the same cache (default repo, then named explicitly)."""
    first = generate(engine_image, cache)
    second = generate(engine_image, cache, "--repo", REPO, "--revision", "auto")
    for proc in (first, second):
        assert proc.returncode == 0, proc.stderr
    return first.stdout.split(), second.stdout.split()


@pytest.fixture(scope="module")
def repo_dir(runs, cache) -> Path:
    return cache / "hub" / "models--gb10-lab--tiny-llama"


@pytest.fixture(scope="module")
def revision(runs) -> str:
    return runs[0][0]


def test_first_run_creates_and_second_changes_nothing(runs):
    (rev1, status1), (rev2, status2) = runs
    assert re.fullmatch(r"[0-9a-f]{40}", rev1)
    assert (rev1, status1) == (rev1, "created")
    assert (rev2, status2) == (rev1, "unchanged")


def test_print_revision_matches_and_writes_nothing(engine_image, revision, tmp_path):
    proc = run_in_engine(engine_image, tmp_path, "python", "/opt/lab/tiny_model.py", "-h")
    assert proc.returncode == 0
    proc = run_in_engine(
        engine_image, tmp_path, "python", "/opt/lab/tiny_model.py", "--print-revision"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [revision]
    assert list(tmp_path.iterdir()) == []


def test_a_revision_the_content_does_not_give_is_refused(engine_image, tmp_path):
    if os.getuid() == 0:
        os.chown(tmp_path, 1000, 1000)
    proc = generate(engine_image, tmp_path, "--revision", "0" * 40)
    assert proc.returncode == 1
    assert "the content gives revision" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_refs_main_names_the_revision(repo_dir, revision):
    assert (repo_dir / "refs" / "main").read_text() == revision
    assert [p.name for p in (repo_dir / "snapshots").iterdir()] == [revision]


def test_snapshot_files_are_relative_links_to_blobs_named_by_sha256(repo_dir, revision):
    snapshot = repo_dir / "snapshots" / revision
    assert {p.name for p in snapshot.iterdir()} == FILES
    blobs = set()
    for link in snapshot.iterdir():
        assert link.is_symlink()
        target = os.readlink(link)
        assert target.startswith("../../blobs/")
        blob = link.resolve()
        assert blob.parent == (repo_dir / "blobs").resolve()
        assert blob.name == hashlib.sha256(blob.read_bytes()).hexdigest()
        blobs.add(blob.name)
    assert {p.name for p in (repo_dir / "blobs").iterdir()} == blobs


def test_any_uid_can_read_the_cache(repo_dir):
    for path in [repo_dir, *repo_dir.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode & 0o777
        assert mode == (0o755 if path.is_dir() else 0o644), path


def test_the_revision_is_derived_from_the_content(repo_dir, revision):
    snapshot = repo_dir / "snapshots" / revision
    digest = hashlib.sha1(usedforsecurity=False)
    for name in sorted(FILES):
        digest.update(f"{name}\0{(snapshot / name).resolve().name}\n".encode())
    assert digest.hexdigest() == revision


def test_config_is_the_tiny_llama(repo_dir, revision):
    snapshot = repo_dir / "snapshots" / revision
    config = json.loads((snapshot / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["hidden_size"] == 64
    assert config["num_hidden_layers"] == 2
    assert config["head_dim"] == 32
    assert config["num_attention_heads"] * config["head_dim"] == config["hidden_size"]
    assert config["num_key_value_heads"] in (1, 2)
    tokenizer = json.loads((snapshot / "tokenizer.json").read_text())
    vocab = len(tokenizer["model"]["vocab"]) + sum(
        1 for t in tokenizer["added_tokens"] if t["content"] not in tokenizer["model"]["vocab"]
    )
    assert config["vocab_size"] == vocab
    assert 300 <= vocab <= 1100
    assert tokenizer["model"]["type"] == "BPE"
    assert tokenizer["pre_tokenizer"]["type"] == "ByteLevel"


def test_tokenizer_config_carries_a_chat_template(repo_dir, revision):
    snapshot = repo_dir / "snapshots" / revision
    tokenizer_config = json.loads((snapshot / "tokenizer_config.json").read_text())
    assert "<|im_start|>" in tokenizer_config["chat_template"]
    assert "<tool_call>" in tokenizer_config["chat_template"]
    assert tokenizer_config["eos_token"] == EOS


def test_huggingface_hub_finds_it_offline_by_revision(engine_image, cache, revision):
    proc = run_in_engine(engine_image, cache, "python", "-c", HUB_PROBE, revision)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["path"] == (
        f"/cache/huggingface/hub/models--gb10-lab--tiny-llama/snapshots/{revision}"
    )
    assert seen["layers"] == 2
    assert seen["eos"] == EOS
    assert seen["chat"] == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
