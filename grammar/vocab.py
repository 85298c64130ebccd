"""The tokenizer's vocabulary as bytes, plus the flat sorted arrays the mask computation walks."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from grammar.ir import GrammarError
from grammar.masks.slices import TokenSlice, pack_bits, utf8_levels, utf8_states
from grammar.masks.trie import build_trie, flatten_trie


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


# Canonical slices, built with the vocabulary (largest first): the C walk only uses these, so a
# schema never pays for building one. JSON string text without escapes; ASCII letters and digits;
# lowercase letters (patterns such as `^[a-z ]*$` or `^[a-z0-9-]+$`: without a slice their
# states walk every path of such letters, ~3 ms on a 262k vocabulary).
_SLICE_BYTES = (((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)), ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)), ((0x61, 0x7A),))
MAX_SLICES = 256
MAX_CANONICAL_CACHE = 1 << 16  # byte sets remembered by canonical_slice
MIN_SLICE_BYTES = 8


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
        self._view: tuple[Any, np.ndarray] | None = None  # (bitmask tensor, its numpy view)
        self.walk_tables: Any = None  # grammar._walk.Tables, made by grammar/masks.py (prepare, or the first C mask)
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
        self.num_non_ascii = int((mat >= 0x80).any(axis=1).sum())  # tokens holding a non-ASCII byte
        self.max_len = int(max_len)
        same = np.zeros(n, dtype=bool)  # tokens whose bytes repeat the previous row's
        if n > 1:
            same[1:] = (self.lens[1:] == self.lens[:-1]) & (mat[1:] == mat[:-1]).all(axis=1)
        self.dup_rows = np.nonzero(same)[0]
        run_start = np.maximum.accumulate(np.where(same, 0, np.arange(n)))  # [n] first row of each run
        self.dup_first = run_start[self.dup_rows]  # the row each duplicate copies its answer from
        eos = np.zeros(self.num_words * 32, dtype=bool)
        eos[self.eos_token_ids] = True
        self.eos_words = pack_bits(eos)
        self._slices: dict[bytes, TokenSlice] = {}
        self._canonical_of: dict[bytes, int] = {}  # byte set (256 0/1 bytes) -> canonical slice id
        self.slice_list: list[TokenSlice] = []
        self._slice_lock = threading.Lock()
        for byte_ranges in _SLICE_BYTES:
            in_set = np.zeros(256, dtype=bool)
            for lo, hi in byte_ranges:
                in_set[lo : hi + 1] = True
            self.slice_for(in_set)
        self.num_canonical = len(self.slice_list)
        # their byte sets as 32-byte bitsets (bit c of byte c >> 3): canonical_slice in C (grammar/_dfa.c)
        self.canonical_sets = b"".join(np.packbits(sl.in_set, bitorder="little").tobytes() for sl in self.slice_list)
        # JSON string text including every complete UTF-8 character (for states that loop on it)
        self.utf8_levels = utf8_levels(self.trie)  # per depth: int8 [num_nodes] decoder state
        self.utf8_state = utf8_states(self.flat, self.utf8_levels)  # int8 [num_nodes], flat order
        with self._slice_lock:
            text = TokenSlice(len(self.slice_list), self.slice_list[0].in_set, self, utf8=True)
            self.slice_list.append(text)
        self.utf8_text_slice = text.id

    def bitmask_view(self, bitmask: Any) -> np.ndarray | None:
        """A numpy view of a CPU bitmask tensor (None on an accelerator); the last one is kept,
        since an engine fills the same tensor every step."""
        hit = self._view
        if hit is not None and hit[0] is bitmask:
            return hit[1]
        if bitmask.device.type != "cpu":
            return None
        view = bitmask.numpy()
        self._view = (bitmask, view)
        return view

    def canonical_slice(self, in_set: np.ndarray) -> int:
        """Id of the first canonical slice whose bytes all lie in `in_set` (bool [256]), or -1.

        Remembered per byte set for the vocabulary's lifetime: every new grammar asks again for
        the same few sets (string characters, digits, ...), ~15 us each when computed."""
        key = in_set.tobytes()
        hit = self._canonical_of.get(key)
        if hit is None:
            hit = -1
            for sl in self.slice_list[: self.num_canonical]:
                if not (sl.in_set & ~in_set).any():
                    hit = sl.id
                    break
            if len(self._canonical_of) < MAX_CANONICAL_CACHE:
                self._canonical_of[key] = hit
        return hit

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

    def subtree_max(self, at_tokens: list[np.ndarray]) -> np.ndarray:
        """int32 [flat nodes]: per node the most of a per-token value over the tokens below it (and
        its own), from per depth the value at each node that ends a token (0 elsewhere)."""
        most = [a.astype(np.int32) for a in at_tokens]
        for k in range(len(most) - 1, 0, -1):  # a node's most is its children's most, or its own token's
            np.maximum.at(most[k - 1], self.trie[k].parent, most[k])
        return np.concatenate(most)[self.flat.order] if most else np.zeros(0, np.int32)

    def prepare(self) -> None:
        """Build the C mask walk's tables now (its tries and the slices' short-token words: about
        half a second on a 262k vocabulary) instead of at the first compile."""
        from grammar.masks.walk import uses_c_walk, walk_tables  # (grammar.masks.walk imports this module)

        if uses_c_walk() and self.walk_tables is None:
            walk_tables(self)

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, vocab_size: int | None = None, extra_eos: list[int] = ()) -> "Vocabulary":
        """From a Hugging Face tokenizer; special and unknown tokens are never allowed. EOS is
        the tokenizer's, and `extra_eos` (a model's other end-of-turn ids). The mask walk's tables
        are built here (`prepare`), with the rest of the per-tokenizer setup."""
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
        vocab = cls(token_bytes, eos_ids, vocab_size)
        vocab.prepare()
        return vocab
