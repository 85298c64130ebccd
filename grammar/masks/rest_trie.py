"""A slice's rest tries: the tokens not made wholly of the slice, keyed by what follows their
longest prefix of slice characters (their rest).

From a DFA state whose slice characters all lead to one state that loops on them (the inside of
a JSON string, or its start), such a prefix ends in that state, so a token is allowed exactly
when its rest is: the C walk (grammar/masks/_walk.c `rest_walk`) walks these tries of rests — a few
thousand tokens that hold a quote, a backslash, a control byte or a cut UTF-8 character — instead
of every path of the whole trie that leads to one (a string state's walk on a 262k vocabulary
went from ~70-100 us to a few). A bounded run of the slice (each character to the next state,
a fixed number of them) keys the rests by the length of that prefix instead (`run_rests`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from grammar.masks.slices import TokenSlice
from grammar.masks.trie import UTF8_BAD, TokenTrie, build_trie, flatten_trie

# Above this share of the vocabulary outside the slice, the rest trie is nearly the whole trie.
MAX_REST_SHARE = 0.25


def rest_tries(trie: TokenTrie, sl: TokenSlice) -> tuple[tuple[np.ndarray, ...], ...] | None:
    """The FlatTrie arrays (grammar/masks/trie.py) of the slice's rests, each row one token (ids: the
    tokens): of the tokens whose first character is outside the slice (the rest is the whole
    token); of those with a prefix in it; and of the latter that start with an ASCII byte, keyed
    by that byte and then the rest (for a state whose first character decides: the first
    character of a key that may be a declared one or any other); and all of them by their whole
    bytes (from a state closed on the slice's text, grammar/automaton/dfa.py `text_closed`, every
    token of the slice is consumed whatever states it passes, and only these are walked:
    grammar/masks/_walk.c `closed_walk`). None when too many tokens lie outside the slice."""
    row, split = _outside(trie, sl)
    if len(row) > MAX_REST_SHARE * len(trie.lens):
        return None
    ids = trie.sorted_ids[row].tolist()
    starts = [(trie.token_bytes[t], t) for t, s in zip(ids, split.tolist()) if s == 0]
    rests = [(trie.token_bytes[t][s:], t) for t, s in zip(ids, split.tolist()) if s > 0]
    keyed = [(trie.token_bytes[t][:1] + trie.token_bytes[t][s:], t) for t, s in zip(ids, split.tolist())
             if s > 0 and trie.token_bytes[t][0] < 0x80]
    return _flat(starts), _flat(rests), _flat(keyed), _flat([(trie.token_bytes[t], t) for t in ids])


def long_trie(trie: TokenTrie, sl: TokenSlice, min_chars: int) -> tuple[np.ndarray, ...] | None:
    """The FlatTrie arrays of the tokens, made of the slice or not, whose longest prefix of whole slice
    characters has more than `min_chars` characters, by their whole bytes: from a bounded run of
    the slice at least `min_chars` long, whose words and run rests have every shorter one, only
    these are left to walk (grammar/masks/_walk.c `run_walk`). None when there are none."""
    rows = [lv.token_row[(lv.token_row >= 0) & (cut > min_chars)] for lv, cut in _prefix_chars(trie, sl)]
    row = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    if len(trie.dup_rows):  # rows repeating an earlier row's bytes
        row = np.concatenate([row, trie.dup_rows[np.isin(trie.dup_first, row)]])
    return _flat([(trie.token_bytes[t], t) for t in trie.sorted_ids[row].tolist()]) if len(row) else None


def run_rests(trie: TokenTrie, sl: TokenSlice) -> tuple[np.ndarray, ...] | None:
    """The FlatTrie arrays of the rests of the tokens with a prefix of slice characters, keyed by
    the number of those characters (one byte, at most 255) and then the rest: from a bounded run
    of the slice (a maxLength string, `[0-9A-Za-z]{8}`) such a token is allowed when its rest is
    from the state that many characters into the run (grammar/masks/_walk.c `run_walk`). None when they
    are too many."""
    row, split = _outside(trie, sl)
    some = split > 0
    if int(some.sum()) > MAX_REST_SHARE * len(trie.lens):
        return None
    pairs = []
    for t, s in zip(trie.sorted_ids[row[some]].tolist(), split[some].tolist()):
        data = trie.token_bytes[t]
        chars = len(data[:s].decode("utf-8")) if sl.utf8 else s
        pairs.append((bytes((min(chars, 255),)) + data[s:], t))
    return _flat(pairs) if pairs else None


def run_prefix_max(trie: TokenTrie, sl: TokenSlice) -> np.ndarray:
    """uint8 [flat nodes]: the most characters of a prefix of whole slice characters among the
    tokens below each node (a token of the slice: all of its characters; at most 255). Where it
    is at most a bounded run's length, run_walk has every token below (the slice's words, its run
    rests) and the main walk skips the node."""
    at_tokens = [np.where(lv.token_row >= 0, cut, 0) for lv, cut in _prefix_chars(trie, sl)]
    return np.minimum(trie.subtree_max(at_tokens), 255).astype(np.uint8)


def _prefix_chars(trie: TokenTrie, sl: TokenSlice) -> Iterator[tuple[Any, np.ndarray]]:
    """Per trie level: the level and, per node, the characters of its path's longest prefix of
    whole slice characters (a cut character at the end does not count)."""
    member = np.frombuffer(sl.set_bytes, dtype=np.uint8).astype(bool)
    ok = np.ones(1, dtype=bool)  # the path is slice characters (maybe a cut one at its end)
    chars = np.zeros(1, dtype=np.int32)  # characters begun on the path
    cut = np.zeros(1, dtype=np.int32)
    for depth, lv in enumerate(trie.levels, start=1):
        chars = chars[lv.parent] + (((lv.byte & 0xC0) != 0x80) if sl.utf8 else 1)
        ok = ok[lv.parent] & member[lv.byte]
        whole = ok
        if sl.utf8:
            u8 = trie.utf8_levels[depth - 1]
            ok &= u8 != UTF8_BAD
            whole = ok & (u8 == 0)
        cut = np.where(whole, chars, cut[lv.parent]).astype(np.int32)
        yield lv, cut


def _outside(trie: TokenTrie, sl: TokenSlice) -> tuple[np.ndarray, np.ndarray]:
    """The sorted rows of the tokens not made wholly of the slice's characters, and the bytes of
    each one's longest prefix of whole slice characters."""
    member = np.frombuffer(sl.set_bytes, dtype=np.uint8).astype(bool)
    rows: list[np.ndarray] = []
    splits: list[np.ndarray] = []
    ok = np.ones(1, dtype=bool)  # the prefix is slice characters (maybe a cut one at its end)
    cut = np.zeros(1, dtype=np.int64)  # the longest prefix of whole slice characters
    for depth, lv in enumerate(trie.levels, start=1):
        ok = ok[lv.parent] & member[lv.byte]
        if sl.utf8:
            u8 = trie.utf8_levels[depth - 1]
            ok &= u8 != UTF8_BAD
            whole = ok & (u8 == 0)
        else:
            whole = ok
        cut = np.where(whole, depth, cut[lv.parent])
        outside = (lv.token_row >= 0) & ~whole
        rows.append(lv.token_row[outside])
        splits.append(cut[outside])
    row = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    split = np.concatenate(splits) if splits else np.zeros(0, dtype=np.int64)
    if len(trie.dup_rows):  # rows repeating an earlier row's bytes share its split
        at = dict(zip(row.tolist(), split.tolist()))
        extra = [(d, at[f]) for d, f in zip(trie.dup_rows.tolist(), trie.dup_first.tolist()) if f in at]
        if extra:
            row = np.concatenate([row, np.array([r for r, _ in extra], dtype=np.int64)])
            split = np.concatenate([split, np.array([s for _, s in extra], dtype=np.int64)])
    return row, split


def _flat(pairs: list[tuple[bytes, int]]) -> tuple[np.ndarray, ...]:
    """FlatTrie arrays of (bytes, token id) pairs (any order; none empty)."""
    pairs.sort()
    max_len = max((len(r) for r, _ in pairs), default=1)
    mat = np.zeros((len(pairs), max_len), dtype=np.uint8)
    for k, (rest, _) in enumerate(pairs):
        mat[k, : len(rest)] = np.frombuffer(rest, dtype=np.uint8)
    lens = np.array([len(r) for r, _ in pairs], dtype=np.int32)
    return flatten_trie(build_trie(mat, lens), np.array([t for _, t in pairs], dtype=np.int64)).arrays()
