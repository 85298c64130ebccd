"""Tiny models for the speculative-decoding tests: a second vocabulary for TLI (not a test module)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import tiny_model


def make_tiny_model_with_vocab(path: Path, vocab_size: int, seed: int = 0) -> Path:
    """A random tiny Llama like tests.helpers.tiny_model's, over a BPE vocabulary of another size."""
    import torch
    import transformers

    path.mkdir(parents=True, exist_ok=True)
    num_tokens = tiny_model._save_tokenizer(path, vocab_size=vocab_size)
    vocab = json.loads((path / "tokenizer.json").read_text())["model"]["vocab"]
    config = tiny_model._config("llama", vocab_size=num_tokens + 8, eos_id=vocab["<|im_end|>"], bos_id=vocab["<|im_start|>"])
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                param.normal_(0.0, 0.2)
    model.save_pretrained(str(path))
    return path
