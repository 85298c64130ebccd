"""A mask as it is kept: dense int32 words, or the few words where it differs from a base (SparseWords)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

# A mask with at most this share of its words apart from its base (zero, its slice's words, or the
# dense mask of the one state it was resolved from) is kept as those words (SparseWords): a string
# state on a 262k vocabulary differs from its slice in some hundreds of words (the tokens that
# close the string), out of 8,192.
SPARSE_SHARE = 4

Put = Callable[[np.ndarray, int, bytes, "np.ndarray | None"], None]  # a walk's put(rows, row, pairs, base)
Sparse = Callable[..., "bytes | None"]  # a walk's sparse(words, limit[, base])


class SparseWords:
    """A mask kept as the words where it differs from a shared base it holds whole (none: all zero;
    a slice's words: a string state; a state's dense mask: that state's mask with the tokens its
    escapes add, grammar/masks/state_masks.py compute_mask). Most masks are such: a structural
    state allows a handful of tokens, a string state its slice's tokens and a few more; and a new
    dense row per mask costs more in page faults (fresh memory: ~20 us for the 32 KB of a 262k
    vocabulary) than its walk. A bitmask row is written from this in a microsecond or two, by the
    `put` of the walk that made it (grammar/masks/_walk.c, or its reference)."""

    __slots__ = ("pairs", "base", "num_words", "put")

    def __init__(self, pairs: bytes, base: np.ndarray | None, num_words: int, put: Put) -> None:
        self.pairs = pairs  # int32 (word position, the mask's word there) pairs, positions increasing
        self.base = base  # int32 [num_words] every other word (a subset of the mask), or None: zero
        self.num_words = num_words
        self.put = put

    def write(self, rows: np.ndarray, row: int) -> None:
        """rows[row] = the mask (one C call)."""
        self.put(rows, row, self.pairs, self.base)

    @property
    def index(self) -> np.ndarray:
        """The word positions (made on use: most masks are only ever written by `put`)."""
        return np.frombuffer(self.pairs, dtype=np.int32)[0::2]

    @property
    def value(self) -> np.ndarray:
        """The mask's words at `index`."""
        return np.frombuffer(self.pairs, dtype=np.int32)[1::2]


Words = np.ndarray | SparseWords  # a mask, int32 [num_words] or its words apart from a base


def kept(scratch: np.ndarray, base: np.ndarray | None, sparse: Sparse, put: Put) -> Words:
    """The mask just walked into `scratch` (reused by the next walk) as it is kept: its words
    apart from `base` (if it holds base whole) or from zero when few, else a dense copy; `sparse`
    and `put` are the walk's. (A walk's mask_kept / mask_ends find the same pairs in their own
    call: grammar/masks/state_masks.py kept_after_walk.)"""
    limit = len(scratch) // SPARSE_SHARE
    raw = None if base is None else sparse(scratch, limit, base)
    if raw is None:
        base = None
        raw = sparse(scratch, limit)
    return scratch.copy() if raw is None else SparseWords(raw, base, len(scratch), put)


def is_empty(words: Words) -> bool:
    """Whether the mask allows no token, without a numpy call (a compile's check of its start mask:
    `dense(words).any()` cost ~60 us there, numpy's machinery out of cache). A SparseWords' base is
    a subset of its mask, and with an empty base the mask is its pairs' words."""
    if type(words) is SparseWords:
        if words.base is not None and not is_empty(words.base):
            return False
        return not any(memoryview(words.pairs).cast("i")[1::2])
    return not words.tobytes().strip(b"\0")


def dense(words: Words) -> np.ndarray:
    """int32 [num_words] of a kept mask (a new array for SparseWords)."""
    if type(words) is SparseWords:
        out = np.empty((1, words.num_words), dtype=np.int32)
        words.write(out, 0)
        return out[0]
    return words


def write_row(words: Words, rows: np.ndarray, row: int) -> None:
    """rows[row] = the mask."""
    if type(words) is SparseWords:
        words.write(rows, row)
    else:
        rows[row] = words


def or_into(rows: np.ndarray, row: int, words: Words, or_put: Put) -> None:
    """rows[row] |= the mask, by the walk's `or_put` (one C call: numpy's |= cost several times
    as much on a mask path's first use, its machinery out of cache)."""
    if type(words) is SparseWords:
        or_put(rows, row, words.pairs, words.base)
    else:
        or_put(rows, row, b"", words)


_local = threading.local()  # per thread: reused walk buffers


def scratch(num_words: int, slot: int = 0) -> np.ndarray:
    """This thread's reused int32 [num_words] buffer for walks (its pages faulted in once);
    slot 1 for the general mask path, whose state masks' walks use slot 0 meanwhile. (Every cold
    fill asks: the found buffer is looked up here at once, without `_buffers`' call.)"""
    try:
        return _local.by_size[num_words, slot][0]
    except (AttributeError, KeyError):
        return _buffers(num_words, slot)[0]


def scratch_rows(num_words: int, slot: int = 0) -> np.ndarray:
    """scratch(num_words, slot) as int32 [1, num_words] (the same memory), for the walk's `put`
    and `or_put`, which write rows."""
    return _buffers(num_words, slot)[1]


def _buffers(num_words: int, slot: int) -> tuple[np.ndarray, np.ndarray]:
    by_size = getattr(_local, "by_size", None)
    if by_size is None:
        by_size = _local.by_size = {}
    bufs = by_size.get((num_words, slot))
    if bufs is None:
        rows = np.zeros((1, num_words), dtype=np.int32)
        bufs = by_size[(num_words, slot)] = (rows[0], rows)
    return bufs
