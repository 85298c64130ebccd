"""Loads the Hugging Face tokenizer that belongs to a resolved model folder."""

from __future__ import annotations

from pathlib import Path

# Imported here, not lazily inside the function: transformers' lazy module import is not
# thread-safe, and data-parallel starts load several tokenizers on worker threads at once.
from transformers import AutoTokenizer


def load_tokenizer(folder: Path):
    try:
        return AutoTokenizer.from_pretrained(str(folder))
    except Exception as exc:  # transformers raises many types for a broken tokenizer
        raise ValueError(f"model: cannot load the tokenizer in {folder} ({type(exc).__name__}: {exc})") from None
