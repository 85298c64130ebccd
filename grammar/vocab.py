"""The tokenizer's vocabulary as token facts: token id -> bytes, EOS ids and the padded logits width."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from grammar.errors import GrammarError

T = TypeVar("T")


def _byte_decoder() -> dict[str, int]:
    """The inverse of GPT-2's printable byte-to-unicode mapping (byte-level BPE)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars = list(printable)
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}


def _is_byte_level(vocab: dict[str, int]) -> bool:
    """GPT-2 style byte-level BPE (space written "\u0120") rather than SentencePiece ("\u2581");
    some SentencePiece vocabularies (Gemma) also hold a few tokens with "\u0120", so count."""
    gpt2 = sum(1 for t in vocab if "\u0120" in t or "\u010a" in t)
    spm = sum(1 for t in vocab if "\u2581" in t)
    return gpt2 > spm


def _token_to_bytes(token: str, byte_level: bool, decoder: dict[str, int]) -> bytes | None:
    if byte_level:
        try:
            return bytes(decoder[c] for c in token)
        except KeyError:
            return None
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        return bytes([int(token[3:5], 16)])
    return token.replace("\u2581", " ").encode("utf-8")


class Vocabulary:
    """Token id -> bytes (None = never allowed), EOS ids and the padded logits width.

    Built once per tokenizer (by the engine at start-up, by tests and benchmarks) and never
    changed. What other modules derive from these facts for the whole vocabulary (the compiler of
    grammar/compiler.py: its token index and compile cache) is built on first use through
    `derived` and kept with it; the vocabulary itself never reads those.
    """

    __slots__ = ("vocab_size", "token_bytes", "eos_token_ids", "num_words", "eos_words", "_derived", "_lock")

    def __init__(self, token_bytes: list[bytes | None], eos_token_ids: list[int], vocab_size: int) -> None:
        if vocab_size < len(token_bytes):
            raise GrammarError(f"vocab_size {vocab_size} is smaller than the {len(token_bytes)} tokens")
        self.vocab_size = vocab_size
        self.token_bytes: list[bytes | None] = list(token_bytes) + [None] * (vocab_size - len(token_bytes))
        self.eos_token_ids = sorted(set(int(e) for e in eos_token_ids))
        for e in self.eos_token_ids:
            if not 0 <= e < vocab_size:
                raise GrammarError(f"EOS token id {e} outside the vocabulary")
            self.token_bytes[e] = None
        self.num_words = (vocab_size + 31) // 32  # int32 words of a bitmask row
        eos = np.zeros(self.num_words * 32, dtype=bool)
        eos[self.eos_token_ids] = True
        self.eos_words = np.packbits(eos, bitorder="little").view("<i4").astype(np.int32)  # int32 [num_words]
        self._derived: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def derived(self, key: Any, build: Callable[[], T]) -> T:
        """What `build()` returns the first time `key` is asked for on this vocabulary (built once,
        under a lock: concurrent first callers wait for the one build)."""
        hit = self._derived.get(key)
        if hit is None:
            with self._lock:
                hit = self._derived.get(key)
                if hit is None:
                    hit = self._derived[key] = build()
        return hit

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, vocab_size: int | None = None, extra_eos: list[int] = ()) -> "Vocabulary":
        """From a Hugging Face tokenizer; special and unknown tokens are never allowed. EOS is
        the tokenizer's, and `extra_eos` (a model's other end-of-turn ids). `grammar.prepare`
        then builds the per-vocabulary mask tables ahead of the first compile."""
        vocab: dict[str, int] = tokenizer.get_vocab()
        size = max(len(tokenizer), max(vocab.values()) + 1)
        if vocab_size is None:
            vocab_size = size
        byte_level = _is_byte_level(vocab)
        decoder = _byte_decoder()
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        for tid, added in getattr(tokenizer, "added_tokens_decoder", {}).items():
            if getattr(added, "special", True):
                special.add(tid)
        token_bytes: list[bytes | None] = [None] * size
        for token, tid in vocab.items():
            if tid not in special and tid < size:
                token_bytes[tid] = _token_to_bytes(token, byte_level, decoder)
        eos = tokenizer.eos_token_id
        eos_ids = ([eos] if isinstance(eos, int) else list(eos or [])) + list(extra_eos)
        return cls(token_bytes, eos_ids, vocab_size)
