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
