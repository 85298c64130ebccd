"""The vocabulary's token trie as flat per-depth arrays (DFS order), built once per vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
