"""Lay a tiny random-weight Llama into a Hugging Face hub cache, the same bytes every run.

    python tiny_model.py --cache DIR [--repo gb10-lab/tiny-llama] [--revision auto|REV]
    python tiny_model.py --print-revision

The lab engine serves this model in place of the real checkpoint: a ``LlamaForCausalLM``
with hidden size 64, 2 layers, 2 attention heads of 32 and 2 KV heads (so tensor parallel 2
gives each rank one of each), random weights from a fixed seed, a byte-level BPE tokenizer
trained here on the built-in corpus below, and a ChatML chat template that knows tools in
the Hermes style (``<tool_call>{json}</tool_call>``).

The cache is laid out as huggingface_hub lays it (``HF_HOME=/cache/huggingface`` means
``DIR=/cache/huggingface``)::

    DIR/hub/models--gb10-lab--tiny-llama/blobs/<sha256 of the file>
    DIR/hub/models--gb10-lab--tiny-llama/snapshots/<revision>/<file> -> ../../blobs/<sha256>
    DIR/hub/models--gb10-lab--tiny-llama/refs/main                   (the revision)

The revision is 40 hex digits derived from the content (SHA-1 over the sorted file names and
their SHA-256), so ``vllm serve gb10-lab/tiny-llama --revision <rev>`` with
``HF_HUB_OFFLINE=1`` finds it. stdout is the revision, then ``created`` or ``unchanged``;
a second run over the same cache changes nothing. It runs inside the lab engine image
(``/opt/lab/tiny_model.py``), which has torch, tokenizers and safetensors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

DEFAULT_REPO = "gb10-lab/tiny-llama"
SEED = 1000
VOCAB_SIZE = 640
HIDDEN = 64
LAYERS = 2
HEAD_DIM = 32
HEADS = HIDDEN // HEAD_DIM
KV_HEADS = 2
INTERMEDIATE = 128
MAX_POSITIONS = 2048
INIT_STD = 0.02

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [ENDOFTEXT, IM_START, IM_END]
# Not "special": they must survive detokenisation so that a tool parser can see them.
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

CHAT_TEMPLATE = r"""
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages and messages[0].role == 'system' %}
        {{- (messages[0].content or '') + '\n\n' }}
    {%- endif %}
    {{- 'You may call one or more functions. Their signatures are inside <tools></tools>:' }}
    {{- '\n<tools>' }}
    {%- for tool in tools %}
        {{- '\n' + (tool | tojson) }}
    {%- endfor %}
    {{- '\n</tools>\n\nReturn each call as:\n<tool_call>\n' }}
    {{- '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' }}
{%- elif messages and messages[0].role == 'system' %}
    {{- '<|im_start|>system\n' + (messages[0].content or '') + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'system' and loop.first %}
    {%- elif message.role == 'tool' %}
        {{- '<|im_start|>user\n<tool_response>\n' + (message.content or '') }}
        {{- '\n</tool_response><|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant' }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for call in message.tool_calls or [] %}
            {%- set fn = call.function if call.function is defined else call %}
            {{- '\n<tool_call>\n{"name": "' + fn.name + '", "arguments": ' }}
            {%- if fn.arguments is string %}
                {{- fn.arguments }}
            {%- else %}
                {{- fn.arguments | tojson }}
            {%- endif %}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
""".strip()

# The tokenizer's training text: what the lab model will see (chat turns, tool calls, code,
# shell and JSON), so that common pieces become single tokens.
CORPUS = """\
<|im_start|>system
You are a helpful assistant for a small team of engineers.<|im_end|>
<|im_start|>user
What is the weather like in Paris today?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
{"temperature": 21, "condition": "sunny", "humidity": 40}
</tool_response><|im_end|>
<|im_start|>assistant
It is sunny in Paris, 21 degrees Celsius, with low humidity.<|im_end|>
<|im_start|>user
Write a Python function that adds two numbers and test it.<|im_end|>
<|im_start|>assistant
def add(a: int, b: int) -> int:
    \"\"\"Return the sum of a and b.\"\"\"
    return a + b


def test_add():
    assert add(2, 3) == 5
    assert add(-1, 1) == 0
<|im_end|>
<|im_start|>user
Read the file config.yaml and list the keys.<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "config.yaml"}}
</tool_call><|im_end|>
<|im_start|>user
Run the tests and tell me which ones fail.<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "run_command", "arguments": {"command": "pytest -q tests", "timeout": 600}}
</tool_call><|im_end|>
The quick brown fox jumps over the lazy dog. A small language model answers questions,
writes code, calls tools and explains what it did. Two nodes serve one model with tensor
parallel two; each node holds half of every layer, and the ranks talk over the fabric.
The server listens on port 8000 and answers the OpenAI chat completions API: a request
carries a model name, a list of messages, and optional tools; the response carries the
choices, each with a message whose content is text or whose tool_calls name a function and
give its arguments as a JSON object.
import json
import os
import subprocess
from pathlib import Path

for path in sorted(Path(".").rglob("*.py")):
    text = path.read_text()
    if "TODO" in text:
        print(f"{path}: {text.count('TODO')} to do")

class Cache:
    def __init__(self, root: str) -> None:
        self.root = Path(root)

    def get(self, key: str) -> bytes | None:
        target = self.root / key
        return target.read_bytes() if target.exists() else None

$ git status
$ ls -la /cache/huggingface/hub
$ curl -s http://127.0.0.1:8000/health
$ vllm serve gb10-lab/tiny-llama --tensor-parallel-size 2 --max-model-len 512
{"model": "gb10-lab/tiny-llama", "messages": [{"role": "user", "content": "Hello!"}],
 "max_tokens": 32, "temperature": 0.0, "stream": false}
{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message":
 {"role": "assistant", "content": "Hello! How can I help you today?"}, "finish_reason": "stop"}]}
Numbers: 0 1 2 3 4 5 6 7 8 9 10 16 32 64 100 128 256 512 1000 1024 2048 4096 8192.
Punctuation: , . ; : ! ? ( ) [ ] { } < > = + - * / % & | ^ ~ ' " ` @ # $ _ \\
"""


def build_tokenizer():
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from tokenizers.trainers import BpeTrainer

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        show_progress=False,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(CORPUS.splitlines(keepends=True), trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    return tokenizer


def build_files() -> dict[str, bytes]:
    """Every file of the model repository, name -> exact bytes."""
    import torch
    from safetensors.torch import save

    tokenizer = build_tokenizer()
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)
    ids = {token: tokenizer.token_to_id(token) for token in SPECIAL_TOKENS + TOOL_TOKENS}

    generator = torch.Generator().manual_seed(SEED)

    def normal(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=generator, dtype=torch.float32) * INIT_STD).clone()

    tensors = {"model.embed_tokens.weight": normal(vocab, HIDDEN)}
    for layer in range(LAYERS):
        prefix = f"model.layers.{layer}"
        tensors[f"{prefix}.self_attn.q_proj.weight"] = normal(HEADS * HEAD_DIM, HIDDEN)
        tensors[f"{prefix}.self_attn.k_proj.weight"] = normal(KV_HEADS * HEAD_DIM, HIDDEN)
        tensors[f"{prefix}.self_attn.v_proj.weight"] = normal(KV_HEADS * HEAD_DIM, HIDDEN)
        tensors[f"{prefix}.self_attn.o_proj.weight"] = normal(HIDDEN, HEADS * HEAD_DIM)
        tensors[f"{prefix}.mlp.gate_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        tensors[f"{prefix}.mlp.up_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        tensors[f"{prefix}.mlp.down_proj.weight"] = normal(HIDDEN, INTERMEDIATE)
        tensors[f"{prefix}.input_layernorm.weight"] = torch.ones(HIDDEN)
        tensors[f"{prefix}.post_attention_layernorm.weight"] = torch.ones(HIDDEN)
    tensors["model.norm.weight"] = torch.ones(HIDDEN)
    tensors["lm_head.weight"] = normal(vocab, HIDDEN)

    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": vocab,
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "max_position_embeddings": MAX_POSITIONS,
        "initializer_range": INIT_STD,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "bos_token_id": ids[ENDOFTEXT],
        "eos_token_id": ids[IM_END],
        "pad_token_id": ids[ENDOFTEXT],
        "dtype": "float32",
        "torch_dtype": "float32",
    }
    generation_config = {
        "bos_token_id": ids[ENDOFTEXT],
        "eos_token_id": [ids[IM_END], ids[ENDOFTEXT]],
        "pad_token_id": ids[ENDOFTEXT],
    }
    added = {
        str(ids[token]): {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": token in SPECIAL_TOKENS,
        }
        for token in SPECIAL_TOKENS + TOOL_TOKENS
    }
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": added,
        "bos_token": None,
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "unk_token": None,
        "additional_special_tokens": [IM_START, IM_END],
        "model_max_length": MAX_POSITIONS,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }
    special_tokens_map = {
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "additional_special_tokens": [IM_START, IM_END],
    }

    def as_json(obj: object) -> bytes:
        return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()

    return {
        "config.json": as_json(config),
        "generation_config.json": as_json(generation_config),
        "model.safetensors": save(tensors, metadata={"format": "pt"}),
        "special_tokens_map.json": as_json(special_tokens_map),
        "tokenizer.json": tokenizer.to_str(pretty=True).encode() + b"\n",
        "tokenizer_config.json": as_json(tokenizer_config),
    }


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def revision_of(files: dict[str, bytes]) -> str:
    """40 hex digits, like a git commit, derived from the names and content of the files."""
    digest = hashlib.sha1(usedforsecurity=False)
    for name in sorted(files):
        digest.update(f"{name}\0{sha256(files[name])}\n".encode())
    return digest.hexdigest()


def repo_dir(cache: Path, repo: str) -> Path:
    """Where huggingface_hub keeps ``repo`` for ``HF_HOME=cache``."""
    return cache / "hub" / ("models--" + repo.replace("/", "--"))


def _mkdir(path: Path) -> None:
    for parent in reversed([path, *path.parents]):
        if not parent.exists():
            parent.mkdir()
            parent.chmod(0o755)


def _write_file(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".incomplete")
    tmp.write_bytes(data)
    tmp.chmod(0o644)
    tmp.replace(path)


def lay_out(cache: Path, repo: str, files: dict[str, bytes], revision: str) -> bool:
    """Write the repository into the cache; return whether anything changed."""
    root = repo_dir(cache, repo)
    snapshot = root / "snapshots" / revision
    changed = False
    for sub in (root / "blobs", snapshot, root / "refs"):
        if not sub.is_dir():
            _mkdir(sub)
            changed = True
    for name, data in sorted(files.items()):
        blob = root / "blobs" / sha256(data)
        if not blob.is_file() or blob.read_bytes() != data:
            _write_file(blob, data)
            changed = True
        elif blob.stat().st_mode & 0o777 != 0o644:
            blob.chmod(0o644)
            changed = True
        link = snapshot / name
        target = f"../../blobs/{blob.name}"
        if not link.is_symlink() or os.readlink(link) != target:
            if link.exists() or link.is_symlink():
                link.unlink()
            link.symlink_to(target)
            changed = True
    ref = root / "refs" / "main"
    if not ref.is_file() or ref.read_text() != revision:
        _write_file(ref, revision.encode())
        changed = True
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, help="the HF_HOME to lay the model into")
    parser.add_argument("--repo", default=DEFAULT_REPO, help="repository id (owner/name)")
    parser.add_argument(
        "--revision",
        default="auto",
        help="auto (default) or the revision the content must give; a mismatch is an error",
    )
    parser.add_argument(
        "--print-revision", action="store_true", help="print the revision and write nothing"
    )
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", args.repo):
        parser.error(f"--repo {args.repo!r} is not OWNER/NAME")
    if args.cache is None and not args.print_revision:
        parser.error("--cache is required unless --print-revision is given")

    files = build_files()
    revision = revision_of(files)
    if args.revision not in ("auto", revision):
        print(
            f"tiny_model: the content gives revision {revision}, not {args.revision}; "
            "this tiny_model.py (or its torch/tokenizers) differs from the one that made it",
            file=sys.stderr,
        )
        return 1
    if args.print_revision:
        print(revision)
        return 0
    changed = lay_out(args.cache, args.repo, files, revision)
    print(revision)
    print("created" if changed else "unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
