"""The vocabulary's token trie: per-depth levels and one flat DFS order, with the facts the mask walks read per node."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grammar.vocab import Vocabulary

UTF8_BAD = 8
# UTF-8 decoder states: 0 at a character boundary; 1-3 continuation bytes still due; 4 after E0,
# 5 after ED, 6 after F0, 7 after F4 (restricted second byte); 8 broken (absorbing).
_UTF8 = np.full((9, 256), UTF8_BAD, dtype=np.int8)
_UTF8[0, :0x80] = 0
_UTF8[0, 0xC2:0xE0] = 1
_UTF8[0, 0xE1:0xF0] = 2
_UTF8[0, 0xE0] = 4
_UTF8[0, 0xED] = 5
_UTF8[0, 0xF1:0xF4] = 3
_UTF8[0, 0xF0] = 6
_UTF8[0, 0xF4] = 7
_UTF8[1, 0x80:0xC0] = 0
_UTF8[2, 0x80:0xC0] = 1
_UTF8[3, 0x80:0xC0] = 2
_UTF8[4, 0xA0:0xC0] = 1
_UTF8[5, 0x80:0xA0] = 1
_UTF8[6, 0x90:0xC0] = 2
_UTF8[7, 0x80:0x90] = 2


@dataclass(frozen=True, slots=True)
class TrieLevel:
    """Trie nodes at one depth (prefix length); arrays indexed by node, in DFS order."""

    byte: np.ndarray  # int64 [num_nodes] last byte of the prefix
    parent: np.ndarray  # int64 [num_nodes] node index at the previous depth
    lo: np.ndarray  # int64 [num_nodes] first sorted-token row of the subtree
    hi: np.ndarray  # int64 [num_nodes] one past the last row of the subtree
    token_row: np.ndarray  # int64 [num_nodes] sorted row of the token equal to the prefix, or -1
    child_lo: np.ndarray  # int64 [num_nodes] first child at the next depth
    child_hi: np.ndarray  # int64 [num_nodes]


def build_trie(mat: np.ndarray, lens: np.ndarray) -> list[TrieLevel]:
    """Levels 1..max_len of the trie over the sorted token byte matrix [n, max_len]."""
    n, max_len = mat.shape
    if n == 0:
        return []
    eq = np.cumprod(mat[1:] == mat[:-1], axis=1).sum(axis=1)  # [n - 1]
    lcp = np.zeros(n, dtype=np.int64)
    lcp[1:] = np.minimum(eq, np.minimum(lens[1:], lens[:-1]))
    raw: list[tuple[np.ndarray, ...]] = []
    prev_starts: np.ndarray | None = None
    for depth in range(1, max_len + 1):
        starts = np.nonzero((lens >= depth) & (lcp < depth))[0]
        if len(starts) == 0:
            break
        bounds = np.nonzero((lens < depth) | (lcp < depth))[0]
        pos = np.searchsorted(bounds, starts, side="right")
        ends = np.where(pos < len(bounds), bounds[np.minimum(pos, len(bounds) - 1)], n)
        byte = mat[starts, depth - 1].astype(np.int64)
        token_row = np.where(lens[starts] == depth, starts, -1)
        if prev_starts is None:
            parent = np.zeros(len(starts), dtype=np.int64)
        else:
            parent = np.searchsorted(prev_starts, starts, side="right") - 1
        raw.append((byte, parent, starts, ends, token_row))
        prev_starts = starts
    levels: list[TrieLevel] = []
    for i, (byte, parent, lo, hi, token_row) in enumerate(raw):
        if i + 1 < len(raw):
            child_parent = raw[i + 1][1]
            ids = np.arange(len(byte))
            child_lo = np.searchsorted(child_parent, ids, side="left")
            child_hi = np.searchsorted(child_parent, ids, side="right")
        else:
            child_lo = child_hi = np.zeros(len(byte), dtype=np.int64)
        levels.append(TrieLevel(byte, parent, lo, hi, token_row, child_lo, child_hi))
    return levels


@dataclass(frozen=True, slots=True)
class FlatTrie:
    """The same trie as one array per field in DFS order (a node's subtree is the index range
    [i + 1, end[i]) after it); walked node by node by the C extension."""

    byte: np.ndarray  # uint8 [num_nodes] last byte of the prefix
    depth: np.ndarray  # int32 [num_nodes] prefix length (1..)
    end: np.ndarray  # int32 [num_nodes] one past the last node of the subtree
    lo: np.ndarray  # int32 [num_nodes + 1] first sorted-token row of the subtree; lo[end[i]] ends it
    ids: np.ndarray  # int32 [num_rows] token id of each sorted row
    height: np.ndarray  # int32 [num_nodes] most bytes any token of the subtree has past the node
    order: np.ndarray  # int64 [num_nodes] index into the levels concatenated, per flat node

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (self.byte, self.depth, self.end, self.lo, self.ids, self.height)


def flatten_trie(levels: list[TrieLevel], sorted_ids: np.ndarray) -> FlatTrie:
    """DFS order = sort by (first row of the subtree, depth): a prefix comes before its extensions."""
    num_rows = len(sorted_ids)
    if not levels:
        empty = np.zeros(0, dtype=np.int32)
        return FlatTrie(np.zeros(0, dtype=np.uint8), empty, empty, np.array([num_rows], dtype=np.int32),
                        sorted_ids.astype(np.int32), empty, np.zeros(0, dtype=np.int64))
    heights = [np.zeros(len(lv.lo), dtype=np.int64) for lv in levels]
    for k in range(len(levels) - 1, 0, -1):  # a parent is one byte above its highest child
        np.maximum.at(heights[k - 1], levels[k].parent, heights[k] + 1)
    lo = np.concatenate([lv.lo for lv in levels])
    hi = np.concatenate([lv.hi for lv in levels])
    depth = np.concatenate([np.full(len(lv.lo), d, dtype=np.int64) for d, lv in enumerate(levels, start=1)])
    byte = np.concatenate([lv.byte for lv in levels])
    height = np.concatenate(heights)
    order = np.lexsort((depth, lo))
    lo, hi, depth, byte, height = lo[order], hi[order], depth[order], byte[order], height[order]
    end = np.searchsorted(lo, hi, side="left")
    return FlatTrie(byte.astype(np.uint8), depth.astype(np.int32), end.astype(np.int32),
                    np.append(lo, num_rows).astype(np.int32), sorted_ids.astype(np.int32), height.astype(np.int32),
                    order)


def utf8_levels(levels: list[TrieLevel]) -> list[np.ndarray]:
    """Per trie depth: the UTF-8 decoder state after each node's prefix (int8 [num_nodes])."""
    out: list[np.ndarray] = []
    prev = np.zeros(1, dtype=np.int8)
    for lv in levels:
        prev = _UTF8[prev[lv.parent], lv.byte]
        out.append(prev)
    return out


class TokenTrie:
    """The usable tokens of a vocabulary sorted by their bytes (rows), as a trie in per-depth
    levels (the numpy walk) and in one flat DFS order (the C walk), with per-node facts. Built
    once per vocabulary by grammar/masks/index.py; read-only after."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.token_bytes = vocab.token_bytes  # token id -> bytes (the vocabulary's list, read only)
        usable = sorted((b, i) for i, b in enumerate(vocab.token_bytes) if b)
        n = len(usable)
        max_len = max((len(b) for b, _ in usable), default=1)
        self.sorted_ids = np.array([i for _, i in usable], dtype=np.int64)  # [n] token id per row
        self.lens = np.array([len(b) for b, _ in usable], dtype=np.int32)  # [n]
        mat = np.zeros((n, max_len), dtype=np.uint8)  # [n, max_len]
        for row, (b, _) in enumerate(usable):
            mat[row, : len(b)] = np.frombuffer(b, dtype=np.uint8)
        self.first_byte = mat[:, 0].copy() if n else np.zeros(0, dtype=np.uint8)  # [n]
        self.levels = build_trie(mat, self.lens)
        self.flat = flatten_trie(self.levels, self.sorted_ids)
        self.num_non_ascii = int((mat >= 0x80).any(axis=1).sum())  # tokens holding a non-ASCII byte
        self.max_len = int(max_len)
        same = np.zeros(n, dtype=bool)  # rows whose bytes repeat the previous row's (another id)
        if n > 1:
            same[1:] = (self.lens[1:] == self.lens[:-1]) & (mat[1:] == mat[:-1]).all(axis=1)
        self.dup_rows = np.nonzero(same)[0]
        run_start = np.maximum.accumulate(np.where(same, 0, np.arange(n)))  # [n] first row of each run
        self.dup_first = run_start[self.dup_rows]  # the row each duplicate copies its answer from
        self.utf8_levels = utf8_levels(self.levels)  # per depth: int8 [num_nodes] decoder state
        self.utf8_state = (np.concatenate(self.utf8_levels)[self.flat.order] if self.utf8_levels
                           else np.zeros(0, dtype=np.int8))  # int8 [num_nodes], flat order  # fmt: skip

    def suffix_pure(self, in_set: np.ndarray) -> list[np.ndarray]:
        """Per depth D: every token below the node continues with bytes of `in_set` only."""
        out: list[np.ndarray] = [np.zeros(0, dtype=bool)] * len(self.levels)
        below: np.ndarray | None = None
        for depth in range(len(self.levels) - 1, -1, -1):
            lv = self.levels[depth]
            if below is None:
                out[depth] = np.ones(len(lv.byte), dtype=bool)
            else:
                child = self.levels[depth + 1]
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
            np.maximum.at(most[k - 1], self.levels[k].parent, most[k])
        return np.concatenate(most)[self.flat.order] if most else np.zeros(0, np.int32)
