"""Builds tiny random-weight Hugging Face model folders (config, safetensors, tokenizer) for tests."""

from __future__ import annotations

import json
from pathlib import Path

CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n"
    "{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{% endif %}"
    "You may call tools. Tools:\n{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}"
    "Call one as <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call><|im_end|>\n"
    "{%- elif messages[0]['role'] == 'system' %}{{ '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}{%- if message['role'] != 'system' %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_TOKENS = ["<tool_call>", "</tool_call>", "<think>", "</think>"]

CORPUS = [
    "The quick brown fox jumps over the lazy dog. Hello world!",
    "Streaming servers send tokens as they are generated, one chunk at a time.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}',
    "Le café coûte 3 € à Zürich; naïve façade. 日本語のテキスト。 Emoji: 🙂🚀",
    "def add(a, b):\n    return a + b\n\nprint(add(1, 2))",
    "0123456789 +-*/=<>()[]{} ,.;:!? 'quotes' \"double\"",
]


def _train_tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 20, trainer=trainer)
    return tok


def _save_tokenizer(path: Path, vocab_size: int) -> int:
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(vocab_size),
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    fast.add_tokens(ADDED_TOKENS)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(path))
    return len(fast)


def _config(arch: str, vocab_size: int, eos_id: int, bos_id: int):
    import transformers

    common = dict(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        eos_token_id=eos_id,
        bos_token_id=bos_id,
    )
    if arch == "llama":
        return transformers.LlamaConfig(**common)
    if arch == "qwen2":
        return transformers.Qwen2Config(**common)
    if arch == "qwen3":
        return transformers.Qwen3Config(head_dim=16, **common)
    return _other_config(arch, common)


def _other_config(arch: str, common: dict):
    """Architectures served through the transformers backend; small sliding windows so tests cross them."""
    import transformers

    if arch == "mistral":
        return transformers.MistralConfig(**common)
    if arch == "phi3":
        return transformers.Phi3Config(pad_token_id=None, **common)
    if arch == "gemma3":  # one sliding, one global layer; query_pre_attn_scalar != head_dim; untied so output varies
        return transformers.Gemma3TextConfig(head_dim=16, sliding_window=16, query_pre_attn_scalar=24,
                                             layer_types=["sliding_attention", "full_attention"],
                                             pad_token_id=None, **{**common, "tie_word_embeddings": False})  # fmt: skip
    if arch == "starcoder2":
        return transformers.Starcoder2Config(sliding_window=16, **common)
    if arch == "gpt_bigcode":  # multi-query attention, learned absolute positions
        return transformers.GPTBigCodeConfig(vocab_size=common["vocab_size"], n_positions=1024, n_embd=64, n_layer=2,
                                             n_head=4, n_inner=128, multi_query=True, eos_token_id=common["eos_token_id"],
                                             bos_token_id=common["bos_token_id"])  # fmt: skip
    raise ValueError(f"unknown tiny architecture {arch!r}")


def make_tiny_model(path: Path, arch: str = "llama", seed: int = 0) -> Path:
    """Writes a random-weight `arch` model with a small byte-level BPE tokenizer into `path`."""
    import torch
    import transformers

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    num_tokens = _save_tokenizer(path, vocab_size=400)
    vocab = json.loads((path / "tokenizer.json").read_text())["model"]["vocab"]
    config = _config(arch, vocab_size=num_tokens + 8, eos_id=vocab["<|im_end|>"], bos_id=vocab["<|im_start|>"])
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():  # larger weights than the default init, so greedy output varies
        for param in model.parameters():
            if param.dim() == 2:
                param.normal_(0.0, 0.2)
    model.save_pretrained(str(path))
    return path
