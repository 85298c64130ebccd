"""The tokenizer's vocabulary as bytes, plus the flat sorted arrays the mask computation walks."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from grammar.ir import GrammarError
from grammar.trie import build_trie, flatten_trie


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


def _token_to_bytes(token: str, byte_level: bool, decoder: dict[str, int]) -> bytes | None:
    if byte_level:
        try:
            return bytes(decoder[c] for c in token)
        except KeyError:
            return None
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        return bytes([int(token[3:5], 16)])
    return token.replace("\u2581", " ").encode("utf-8")


# Byte sets whose all-in-set tokens are precomputed: plain JSON string text, digits.
_SLICE_BYTES = (((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)),)
MAX_SLICES = 128
MIN_SLICE_BYTES = 8


class TokenSlice:
    """Tokens grouped by whether they continue with bytes of `in_set` only: a DFA state that loops
    on every byte of the set allows such a trie subtree whole.  `words` has the tokens made of
    set bytes only (what a looping state allows without a walk); `pure_flat` marks flat-trie nodes
    whose descendants' bytes are all in the set; `pure` is the per-depth form (numpy walk)."""

    __slots__ = ("id", "in_set", "words", "pure_flat", "_pure", "_vocab")

    def __init__(self, slice_id: int, in_set: np.ndarray, vocab: "Vocabulary") -> None:
        self.id = slice_id
        self.in_set = in_set.copy()
        self._vocab = vocab
        self._pure: list[np.ndarray] | None = None
        flat = vocab.flat
        bad = np.concatenate([[0], np.cumsum(~in_set[flat.byte])])  # [num_nodes + 1]
        self.pure_flat = ((bad[flat.end] - bad[np.arange(1, len(flat.byte) + 1)]) == 0).astype(np.uint8)
        ok = np.ones(len(vocab.lens), dtype=bool)
        for j in range(vocab.mat.shape[1]):
            ok &= in_set[vocab.mat[:, j]] | (vocab.lens <= j)
        allowed = np.zeros(vocab.num_words * 32, dtype=bool)
        allowed[vocab.sorted_ids[ok]] = True
        self.words = pack_bits(allowed)

    @property
    def pure(self) -> list[np.ndarray]:
        """Per depth D: every token below the node continues with bytes of `in_set` only."""
        if self._pure is None:
            self._pure = self._vocab.suffix_pure(self.in_set)
        return self._pure


class Vocabulary:
    """Token id -> bytes (None = never allowed), EOS ids and the padded logits width.

    Built once per tokenizer (by the engine at start-up, by tests and benchmarks); shared
    read-only by every grammar compiled against it, and it owns their compile cache.
    """

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
        self.num_words = (vocab_size + 31) // 32
        self._build_arrays()
        self.cache: dict[tuple[Any, ...], Any] = {}
        self.cache_lock = threading.Lock()

    def _build_arrays(self) -> None:
        usable = [(b, i) for i, b in enumerate(self.token_bytes) if b]
        usable.sort()
        n = len(usable)
        max_len = max((len(b) for b, _ in usable), default=1)
        self.sorted_ids = np.array([i for _, i in usable], dtype=np.int64)  # [n] trie (DFS) order
        self.lens = np.array([len(b) for b, _ in usable], dtype=np.int32)  # [n]
        mat = np.zeros((n, max_len), dtype=np.uint8)  # [n, max_len]
        for row, (b, _) in enumerate(usable):
            mat[row, : len(b)] = np.frombuffer(b, dtype=np.uint8)
        self.mat = np.asfortranarray(mat)  # column j = byte j of every token
        self.first_byte = mat[:, 0].copy() if n else np.zeros(0, dtype=np.uint8)  # [n]
        self.trie = build_trie(mat, self.lens)
        self.flat = flatten_trie(self.trie, self.sorted_ids)
        self.trie_arrays = self.flat.arrays()
        same = np.zeros(n, dtype=bool)  # tokens whose bytes repeat the previous row's
        if n > 1:
            same[1:] = (self.lens[1:] == self.lens[:-1]) & (mat[1:] == mat[:-1]).all(axis=1)
        self.dup_rows = np.nonzero(same)[0]
        eos = np.zeros(self.num_words * 32, dtype=bool)
        eos[self.eos_token_ids] = True
        self.eos_words = pack_bits(eos)
        self._slices: dict[bytes, TokenSlice] = {}
        self.slice_list: list[TokenSlice] = []
        self.slice_pures: list[np.ndarray] = []  # uint8 [num_nodes] per slice id (read by the C walk)
        self._slice_lock = threading.Lock()
        for byte_ranges in _SLICE_BYTES:
            in_set = np.zeros(256, dtype=bool)
            for lo, hi in byte_ranges:
                in_set[lo : hi + 1] = True
            self.slice_for(in_set)

    def slice_for(self, in_set: np.ndarray) -> TokenSlice | None:
        """The slice of tokens over the byte set `in_set` (bool [256]); built once per set and
        kept for the vocabulary's lifetime (ids are stable); None past MAX_SLICES sets."""
        key = np.packbits(in_set).tobytes()
        sl = self._slices.get(key)
        if sl is not None:
            return sl
        with self._slice_lock:
            sl = self._slices.get(key)
            if sl is None and len(self.slice_list) < MAX_SLICES:
                sl = TokenSlice(len(self.slice_list), in_set, self)
                self.slice_pures.append(sl.pure_flat)
                self.slice_list.append(sl)
                self._slices[key] = sl
        return sl

    def suffix_pure(self, in_set: np.ndarray) -> list[np.ndarray]:
        """Per depth D: every token below the node continues with bytes of `in_set` only."""
        out: list[np.ndarray] = [np.zeros(0, dtype=bool)] * len(self.trie)
        below: np.ndarray | None = None
        for depth in range(len(self.trie) - 1, -1, -1):
            lv = self.trie[depth]
            if below is None:
                out[depth] = np.ones(len(lv.byte), dtype=bool)
            else:
                child = self.trie[depth + 1]
                good = in_set[child.byte] & below
                bad = np.concatenate([[0], np.cumsum(~good)])
                out[depth] = (bad[lv.child_hi] - bad[lv.child_lo]) == 0
            below = out[depth]
        return out

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, vocab_size: int | None = None) -> "Vocabulary":
        """From a Hugging Face tokenizer; special and unknown tokens are never allowed."""
        vocab: dict[str, int] = tokenizer.get_vocab()
        size = max(len(tokenizer), max(vocab.values()) + 1)
        if vocab_size is None:
            vocab_size = size
        byte_level = "\u0120" in vocab or "\u010a" in vocab
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
        eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
        return cls(token_bytes, eos_ids, vocab_size)


def pack_bits(allowed: np.ndarray) -> np.ndarray:
    """bool [num_words * 32] -> int32 [num_words], bit i of word w = token 32 * w + i."""
    return np.packbits(allowed, bitorder="little").view("<i4").astype(np.int32)
