"""The Python reference of the C mask walk (grammar/masks/_walk.c): the same functions, the same masks.

Used where the C extension is not built, and by the tests that check the C walk against it
(tests/grammar/test_reference_impls.py, test_mask_paths.py). A state's mask is a walk of the token
trie level by level in numpy, keeping only live prefixes; a subtree whose continuations all lie
in a byte set the current state loops on is taken whole (a slice, grammar/masks/slices.py).
Escapes are this module's own: int32 quadruples (byte position, DFA state, first and one past the
last sorted row of the tokens to check against the stack), resolved by `resolve` here only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grammar.automaton.constants import FLAG_CALLS, FLAG_FINAL, UNKNOWN
from grammar.automaton.pda import States, advance
from grammar.masks.slices import MIN_SLICE_BYTES, pack_bits
from grammar.masks.trie import TrieLevel

MAX_SLICED_STATES = 32
SMALL_NODES = 24      # below this many trie nodes and...
SMALL_TOKENS = 96     # ...this many tokens under them, finish in Python
Cands = list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]  # (row lo, row hi, position, state) arrays
Ends = list[tuple[int, int]]  # (state an allowed token ends in, its length)


class Tables:
    """Tables(num_words, trie, slices, text[, rests]) as in C; this walk reads only the token
    rows (their ids and bytes, rebuilt from the flat trie) for `resolve`."""

    def __init__(self, num_words: int, trie: tuple[np.ndarray, ...], slices: tuple, text: tuple,
                 rests: tuple = ()) -> None:
        byte, depth, end, lo, ids = (np.asarray(a) for a in trie[:5])
        if len(end) != len(byte) or len(lo) != len(byte) + 1 or (len(end) and (end > len(byte)).any()):
            raise ValueError("walk table: the trie arrays do not agree")
        self.num_words = num_words
        self.ids = ids.astype(np.int64)  # [num_rows] token id per sorted row
        self.row_bytes: list[bytes] = [b""] * len(ids)  # [num_rows] each token's bytes
        path: list[int] = []
        for i in range(len(byte)):  # DFS order: node i's own tokens are rows lo[i] .. lo[i + 1]
            del path[int(depth[i]) - 1 :]
            path.append(int(byte[i]))
            for row in range(int(lo[i]), int(lo[i + 1])):
                self.row_bytes[row] = bytes(path)
        self.all_nodes = len(byte)


def mask(tables: Tables, dfa: Any, vocab: Any, state: int, nonempty: bool, out: np.ndarray,
         rows: np.ndarray | None = None, row: int = 0) -> bytes | None:
    """Writes into `out` (int32 [num_words]) the tokens allowed from DFA state `state` without
    looking at the stack, and into rows[row] too when given and that is the whole mask; returns
    the escapes (tokens that die in the DFA after passing a call, or a return with a non-empty
    stack), or None. `vocab` is the token index (grammar/masks/index.py)."""
    escapes = _walk_into(tables, dfa, vocab, state, nonempty, out, None)
    if rows is not None:
        if rows.ndim != 2 or rows.shape[1] != len(out):
            raise ValueError("rows must be a 2-d array of rows like out")
        if not 0 <= row < rows.shape[0]:
            raise IndexError("row out of range")
        if escapes is None:
            rows[row] = out
    return escapes


def mask_kept(tables: Tables, dfa: Any, vocab: Any, state: int, nonempty: bool, out: np.ndarray,
              rows: np.ndarray, row: int, base: np.ndarray | None,
              limit: int) -> tuple[bytes | None, bytes | None, bool]:
    """mask() with rows, and when the walk has no escapes the mask as grammar/masks/words.py keeps
    it: (None, pairs apart from base, True), else (None, pairs apart from zero, False), else
    (None, None, False): dense. With escapes: (escapes, None, False), rows not written."""
    escapes = mask(tables, dfa, vocab, state, nonempty, out, rows, row)
    if escapes is not None:
        return escapes, None, False
    return (None,) + _kept_pairs(out, base, limit)


def mask_ends(tables: Tables, dfa: Any, vocab: Any, state: int, nonempty: bool, out: np.ndarray,
              base: np.ndarray | None = None, limit: int | None = None) -> tuple:
    """mask() and the distinct states the allowed tokens end in, those of the longest tokens
    first (for a subtree a looping state takes whole: that state). With `limit`: also the pairs
    and `based` of mask_kept (escapes or not): (escapes, ends, pairs, based)."""
    ends: Ends = []
    escapes = _walk_into(tables, dfa, vocab, state, nonempty, out, ends)
    best: dict[int, int] = {}
    for s, n in ends:
        if n > best.get(s, -1):
            best[s] = n
    order = sorted(best, key=lambda s: (-best[s], s))
    if limit is None:
        return escapes, order
    return (escapes, order) + _kept_pairs(out, base, limit)


def _kept_pairs(out: np.ndarray, base: np.ndarray | None, limit: int) -> tuple[bytes | None, bool]:
    """(sparse(out, limit, base), True) when that is not None, else (sparse(out, limit), False)."""
    pairs = None if base is None else sparse(out, limit, base)
    return (pairs, True) if pairs is not None else (sparse(out, limit), False)


def _walk_into(tables: Tables, dfa: Any, vocab: Any, state: int, nonempty: bool, out: np.ndarray,
               ends: Ends | None) -> bytes | None:
    if len(out) != tables.num_words:
        raise ValueError("out must hold num_words int32")
    if not 0 <= state < dfa.num_states:
        raise IndexError("DFA state out of range")
    words, cands = _state_walk(dfa, vocab, state, bool(nonempty), ends)
    out[:] = words
    if not cands:
        return None
    quads = np.stack([np.concatenate(x) for x in zip(*cands)], axis=1)[:, [2, 3, 0, 1]].astype(np.int32)
    return quads.tobytes()


def resolve(tables: Tables, dfa: Any, items: list[tuple[tuple[int, ...], bytes]], out: np.ndarray) -> None:
    """ORs into `out` the tokens the pushdown automaton accepts among the escapes of `items`,
    (stack, escapes) pairs: a configuration's stack and what mask() returned for its state."""
    if len(out) != tables.num_words:
        raise ValueError("out must hold num_words int32")
    memo: dict[tuple[States, int], States] = {}
    for stack, escapes in items:
        quads = np.frombuffer(escapes, dtype=np.int32).reshape(-1, 4)
        for pos, st, lo, hi in quads.tolist():
            if not (0 <= st < dfa.num_states and 0 <= lo <= hi <= len(tables.ids)):
                raise IndexError("escape out of range")
            for r in range(lo, hi):
                tid = int(tables.ids[r])
                if (int(out[tid >> 5]) >> (tid & 31)) & 1:
                    continue
                cur: States = frozenset(((stack, st),))
                for b in tables.row_bytes[r][pos:]:
                    nxt = memo.get((cur, b))
                    if nxt is None:
                        nxt = memo[(cur, b)] = advance(dfa, cur, bytes((b,)))
                    if not nxt:
                        break
                    cur = nxt
                else:
                    out.view(np.uint32)[tid >> 5] |= np.uint32(1 << (tid & 31))


def run(dfa: Any, state: int, data: bytes, pos: int, stop_final: bool) -> tuple[int, int]:
    """Steps bytes while the state has no calls and (with stop_final) is not final, stopping
    before such a state's byte; state -1 when a byte is rejected."""
    if not 0 <= state < dfa.num_states or pos < 0:
        raise IndexError("DFA state or position out of range")
    stop = FLAG_CALLS | (FLAG_FINAL if stop_final else 0)
    data = bytes(data)
    while pos < len(data):
        if dfa.flags[state] & stop:
            break
        t = dfa.step(state, data[pos])
        if t < 0:
            return -1, pos
        state = t
        pos += 1
    return state, pos


def sparse(words: np.ndarray, limit: int, base: np.ndarray | None = None) -> bytes | None:
    """The (position, value) int32 pairs of the words that differ from base (zero), or None when
    more than `limit` do or base is not wholly inside words."""
    if limit < 0:
        raise ValueError("limit must be >= 0")
    if base is not None and (len(base) != len(words) or ((words & base) != base).any()):
        return None
    diff = np.nonzero(words if base is None else words != base)[0]
    if len(diff) > limit:
        return None
    return np.stack([diff, words[diff]], axis=1).astype(np.int32).tobytes()


def put(rows: np.ndarray, row: int, pairs: bytes, base: np.ndarray | None) -> None:
    """rows[row] = base (None: zero) with the (position, value) pairs written over it."""
    both = _put_pairs("put", rows, row, pairs, base)
    rows[row] = 0 if base is None else base
    rows[row, both[:, 0]] = both[:, 1]


def or_put(rows: np.ndarray, row: int, pairs: bytes, base: np.ndarray | None) -> None:
    """rows[row] |= base (None: nothing) and each (position, value) pair's value at its position."""
    both = _put_pairs("or_put", rows, row, pairs, base)
    if base is not None:
        rows[row] |= base
    np.bitwise_or.at(rows[row], both[:, 0], both[:, 1])


def _put_pairs(name: str, rows: np.ndarray, row: int, pairs: bytes, base: np.ndarray | None) -> np.ndarray:
    """The pairs of put / or_put as int32 [k, 2], after checking the arguments as the C walk does."""
    if rows.ndim != 2 or not 0 <= row < rows.shape[0] or len(pairs) % 8 or (base is not None and len(base) != rows.shape[1]):
        raise ValueError(f"{name}: rows must be int32 [n, num_words], row in range, base int32 [num_words]")
    both = np.frombuffer(pairs, dtype=np.int32).reshape(-1, 2)
    if len(both) and (both[:, 0].min() < 0 or both[:, 0].max() >= rows.shape[1]):
        raise IndexError(f"{name}: word out of range")
    return both


# ---- the numpy walk ----

def _step(dfa: Any, states: np.ndarray, cols: np.ndarray) -> np.ndarray:
    nxt = dfa.trans.reshape(-1)[states * 256 + cols]
    unknown = nxt == UNKNOWN
    if unknown.any():
        for d in np.unique(states[unknown]).tolist():
            dfa.compute_row(d)
        nxt = dfa.trans.reshape(-1)[states * 256 + cols]
    return nxt


def _children(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated child ranges and, for each child, the index of its parent in the input."""
    counts = hi - lo
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(lo)), counts)
    starts = np.cumsum(counts) - counts
    return lo[owner] + (np.arange(total) - starts[owner]), owner


def _state_walk(dfa: Any, index: Any, d: int, nonempty: bool, ends: Ends | None) -> tuple[np.ndarray, Cands]:
    """The words of the tokens consumed in the DFA from `d`, and the candidates (row ranges with
    the position and state of their first call or return) that died after one."""
    if dfa.trans[d, 0] == UNKNOWN:
        dfa.compute_row(d)
    levels = index.trie.levels
    allowed: list[np.ndarray] = []
    ranges: list[tuple[np.ndarray, np.ndarray]] = []
    cands: Cands = []
    nodes = np.arange(len(levels[0].byte)) if levels else np.zeros(0, dtype=np.int64)
    parent_state = np.full(len(nodes), d, dtype=np.int64)
    esc_pos = np.full(len(nodes), -1, dtype=np.int64)
    esc_st = np.zeros(len(nodes), dtype=np.int64)
    for depth, lv in enumerate(levels, start=1):
        if len(nodes) == 0:
            break
        st = _step(dfa, parent_state, lv.byte[nodes])
        dead = st < 0
        if dead.any():
            had = dead & (esc_pos >= 0)
            if had.any():
                cands.append((lv.lo[nodes[had]], lv.hi[nodes[had]], esc_pos[had], esc_st[had]))
            live = ~dead
            nodes, st, esc_pos, esc_st = nodes[live], st[live], esc_pos[live], esc_st[live]
        rows = lv.token_row[nodes]
        allowed.append(rows[rows >= 0])
        if ends is not None:
            ends += [(s, depth) for s in np.unique(st[rows >= 0]).tolist()]
        whole = _absorbed(dfa, index, depth, nodes, st)
        if whole is not None:
            ranges.append((lv.lo[nodes[whole]], lv.hi[nodes[whole]]))
            if ends is not None:
                ends += [(s, depth) for s in np.unique(st[whole]).tolist()]
            keep = ~whole
            nodes, st, esc_pos, esc_st = nodes[keep], st[keep], esc_pos[keep], esc_st[keep]
        flag = dfa.has_calls[st] | dfa.is_final[st] if nonempty else dfa.has_calls[st]
        new = flag & (esc_pos < 0)
        esc_pos = np.where(new, depth, esc_pos)
        esc_st = np.where(new, st, esc_st)
        if depth == len(levels):
            break
        if len(nodes) <= SMALL_NODES and int((lv.hi[nodes] - lv.lo[nodes]).sum()) <= SMALL_TOKENS:
            _walk_small(dfa, index, depth, lv, (nodes, st, esc_pos, esc_st), nonempty, allowed, cands, ends)
            break
        nodes, owner = _children(lv.child_lo[nodes], lv.child_hi[nodes])
        parent_state, esc_pos, esc_st = st[owner], esc_pos[owner], esc_st[owner]
    return _finish(index, allowed, ranges), cands


def _walk_small(dfa: Any, index: Any, depth: int, lv: TrieLevel, at: tuple[np.ndarray, ...], nonempty: bool,
                allowed: list[np.ndarray], cands: Cands, ends: Ends | None) -> None:
    """Finish a few remaining subtrees token by token in Python (cheaper than numpy calls);
    `at`: the nodes, their states and their first escape's position and state."""
    nodes, st, esc_pos, esc_st = at
    trie = index.trie
    ok: list[int] = []
    c_rows: list[int] = []
    c_pos: list[int] = []
    c_st: list[int] = []
    for k in range(len(nodes)):
        node = int(nodes[k])
        for row in range(int(lv.lo[node]), int(lv.hi[node])):
            data = trie.token_bytes[int(trie.sorted_ids[row])] or b""
            if len(data) == depth:
                continue
            s, ep, es = int(st[k]), int(esc_pos[k]), int(esc_st[k])
            for j in range(depth, len(data)):
                t = dfa.step(s, data[j])
                if t < 0:
                    if ep >= 0:
                        c_rows.append(row), c_pos.append(ep), c_st.append(es)
                    break
                s = t
                if ep < 0 and (dfa.has_calls[s] or (nonempty and dfa.is_final[s])):
                    ep, es = j + 1, s
            else:
                ok.append(row)
                if ends is not None:
                    ends.append((s, len(data)))
    allowed.append(np.array(ok, dtype=np.int64))
    if c_rows:
        rows = np.array(c_rows, dtype=np.int64)
        cands.append((rows, rows + 1, np.array(c_pos, dtype=np.int64), np.array(c_st, dtype=np.int64)))


def _absorbed(dfa: Any, index: Any, depth: int, nodes: np.ndarray, st: np.ndarray) -> np.ndarray | None:
    """Nodes whose state loops on every byte that any token below them continues with."""
    if len(nodes) == 0:
        return None
    flags = dfa.has_loop[st]
    if (flags < 0).any():
        for s in np.unique(st[flags < 0]).tolist():
            dfa.loop_set(s, MIN_SLICE_BYTES)
        flags = dfa.has_loop[st]
    if not flags.any():
        return None
    looping = st[flags == 1]
    states = [int(looping[0])] if (looping == looping[0]).all() else np.unique(looping).tolist()
    if len(states) > MAX_SLICED_STATES:
        return None
    whole: np.ndarray | None = None
    for s in states:
        in_set = dfa.loop_set(s, MIN_SLICE_BYTES)
        if in_set is None:
            continue
        sl = index.slices.slice_for(in_set)
        if sl is None:
            continue
        hit = (st == s) & sl.pure[depth - 1][nodes]
        whole = hit if whole is None else whole | hit
    return whole if whole is not None and whole.any() else None


def _finish(index: Any, allowed: list[np.ndarray], ranges: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    trie = index.trie
    n = len(trie.lens)
    if ranges:
        lo = np.concatenate([r[0] for r in ranges])
        hi = np.concatenate([r[1] for r in ranges])
        flag = np.bincount(lo, minlength=n + 1) - np.bincount(hi, minlength=n + 1)
        row_ok = np.cumsum(flag[:n]) > 0
    else:
        row_ok = np.zeros(n, dtype=bool)
    if allowed:
        row_ok[np.concatenate(allowed)] = True
    if len(trie.dup_rows):
        row_ok[trie.dup_rows] = row_ok[trie.dup_first]
    ok = np.zeros(index.vocab.num_words * 32, dtype=bool)
    ok[trie.sorted_ids[row_ok]] = True
    return pack_bits(ok)
