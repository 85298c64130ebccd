"""Token masks for a set of pushdown configurations: the C trie walk (grammar/_walk.c) per DFA
state, or without the extension a level-by-level numpy walk; candidates (tokens that go on past a
call or a return) walked again below where they branch (C), or stepped token by token (numpy)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from grammar.automaton.dfa import FLAG_CALLS, FLAG_FINAL, UNKNOWN, LazyDfa
from grammar.automaton.pda import States, advance, expand, is_complete
from grammar.masks.rest_trie import rest_tries, run_prefix_max, run_rests
from grammar.masks.trie import TrieLevel
from grammar.masks.slices import pack_bits
from grammar.vocab import MIN_SLICE_BYTES, Vocabulary

try:
    from grammar.masks import _walk
except ImportError:  # built by setup.py; without a C compiler the numpy walk below is used
    _walk = None


_NO_CANDS = np.zeros(0, dtype=np.int32)
_STOP = FLAG_CALLS | FLAG_FINAL  # a call, a return or (empty stack) EOS: a configuration's general path
ASCII_TEXT_SLICE = 0  # the first canonical slice (JSON string text), widened to UTF-8 by LazyDfa.upgrade_to_utf8


def uses_c_walk() -> bool:
    """True when the C extension is built (masks come from `state_mask_c`)."""
    return _walk is not None

# The longest bounded run a DFA state's absorb length counts (grammar/compiled.py MAX_ABSORB):
# each slice's tokens of up to this many characters are packed with its walk tables, not at the
# first mask of such a run (~1-3 ms each on a 262k vocabulary).
MAX_RUN = 16

MAX_SLICED_STATES = 32
SMALL_NODES = 24      # below this many trie nodes and...
SMALL_TOKENS = 96     # ...this many tokens under them, finish in Python


@dataclass(slots=True)
class StateMask:
    """What one DFA state allows without looking at the stack: tokens consumed entirely in the
    DFA (`words`), and where the others could go on past a call or a return: from the numpy walk
    the candidate tokens (`cand_*`: token id, byte position, DFA state there), from the C walk the
    escapes (byte position, DFA state, trie node) below which every token is to be checked
    against the stack (grammar/_walk.c `resolve`). Never changed once made (not frozen: a frozen
    dataclass costs a microsecond more per mask)."""

    words: Words  # int32 [num_words], or its words apart from a base (SparseWords)
    cand_ids: np.ndarray  # int [num_cand]
    cand_pos: np.ndarray  # int [num_cand]
    cand_state: np.ndarray  # int [num_cand]
    escapes: bytes | None = None  # int32 (position, state, node) triples, as _walk.mask returns them

    def stack_free(self) -> bool:
        """True when the stack cannot change this state's mask (`words` is the whole answer)."""
        return not self.escapes and not len(self.cand_ids)


# A mask with at most this share of its words apart from its base (zero, its slice's words, or the
# dense mask of the one state it was resolved from) is kept as those words (SparseWords): a string
# state on a 262k vocabulary differs from its slice in some hundreds of words (the tokens that
# close the string), out of 8,192.
SPARSE_SHARE = 4


class SparseWords:
    """A mask kept as the words where it differs from a shared base it holds whole (none: all zero;
    a slice's words: a string state; a state's dense mask: that state's mask with the tokens its
    escapes add, compute_mask). Most masks are such: a structural state
    allows a handful of tokens, a string state its slice's tokens and a few more; and a new dense
    row per mask costs more in page faults (fresh memory: ~20 us for the 32 KB of a 262k
    vocabulary) than its walk. A bitmask row is written from this in a microsecond or two."""

    __slots__ = ("pairs", "index", "value", "base", "num_words")

    def __init__(self, pairs: bytes, base: np.ndarray | None, num_words: int) -> None:
        self.pairs = pairs  # int32 (word position, the mask's word there) pairs, positions increasing
        both = np.frombuffer(pairs, dtype=np.int32).reshape(-1, 2)
        self.index, self.value = both[:, 0], both[:, 1]
        self.base = base  # int32 [num_words] every other word (a subset of the mask), or None: zero
        self.num_words = num_words

    def write(self, rows: np.ndarray, row: int) -> None:
        """rows[row] = the mask (one C call)."""
        _walk.put(rows, row, self.pairs, self.base)


Words = np.ndarray | SparseWords  # a mask, int32 [num_words] or its words apart from a base


def kept(scratch: np.ndarray, base: np.ndarray | None = None) -> Words:
    """The mask just walked into `scratch` (reused by the next walk) as it is kept: its words
    apart from `base` (if it holds base whole) or from zero when few, else a dense copy."""
    limit = len(scratch) // SPARSE_SHARE
    raw = None if base is None else _walk.sparse(scratch, limit, base)
    if raw is None:
        base = None
        raw = _walk.sparse(scratch, limit)
        if raw is None:
            return scratch.copy()
    return SparseWords(raw, base, len(scratch))


def slice_base(dfa: LazyDfa, vocab: Vocabulary, d: int) -> np.ndarray | None:
    """The words of the slice that state d absorbs (what its walk started from), if any."""
    sl = dfa.slice_of.item(d)
    return vocab.slice_list[sl].words_upto(dfa.absorb.item(d)) if sl >= 0 else None


def dense(words: Words) -> np.ndarray:
    """int32 [num_words] of a kept mask (a new array for SparseWords)."""
    if type(words) is SparseWords:
        out = np.zeros(words.num_words, dtype=np.int32) if words.base is None else words.base.copy()
        out[words.index] = words.value
        return out
    return words


def write_row(words: Words, rows: np.ndarray, row: int) -> None:
    """rows[row] = the mask."""
    if type(words) is SparseWords:
        words.write(rows, row)
    else:
        rows[row] = words


def or_into(out: np.ndarray, words: Words) -> None:
    """out |= the mask."""
    if type(words) is SparseWords:
        if words.base is not None:
            out |= words.base
        out[words.index] |= words.value
    else:
        out |= words


_local = threading.local()


def scratch(num_words: int, slot: int = 0) -> np.ndarray:
    """This thread's reused int32 [num_words] buffer for walks (its pages faulted in once);
    slot 1 for the general mask path, whose state masks' walks use slot 0 meanwhile."""
    by_size = getattr(_local, "by_size", None)
    if by_size is None:
        by_size = _local.by_size = {}
    buf = by_size.get((num_words, slot))
    if buf is None:
        buf = by_size[(num_words, slot)] = np.zeros(num_words, dtype=np.int32)
    return buf


def walk_tables(vocab: Vocabulary) -> object:
    """The vocabulary's arrays as held by the C walk (made once per vocabulary)."""
    tables = vocab.walk_tables
    if tables is None:
        slices = tuple((sl.set_bytes, sl.pure_flat, sl.root_pure_flat, sl.words)
                       + ((sl.char_max, sl.char_depth) if sl.char_max is not None else ()) for sl in vocab.slice_list)
        text = vocab.slice_list[vocab.utf8_text_slice]
        first = text.in_set[:128].astype(np.uint8).tobytes()
        rests = []  # (slice id, rest tries or None, run rests or None) of the walk's slices
        for sl in vocab.slice_list[: vocab.num_canonical] + [text]:
            for k in range(1, min(MAX_RUN, vocab.max_len) + 1):
                sl.words_upto(k)
            rest = rest_tries(vocab, text) if sl is text else None
            run = run_rests(vocab, sl)
            if rest is not None or run is not None:
                rests.append((sl.id, *(rest or (None, None, None)), run,
                              run_prefix_max(vocab, sl) if run is not None else None))
        tables = vocab.walk_tables = _walk.Tables(vocab.num_words, vocab.trie_arrays, slices, (
            ASCII_TEXT_SLICE, text.id, first, text.first_ids, text.first_off, text.rest_words, text.multi_first_words),
            tuple(rests))
    return tables


def state_mask_c(dfa: LazyDfa, vocab: Vocabulary, d: int, nonempty_stack: bool) -> StateMask:
    """The C walk of the flat trie (grammar/_walk.c); same result as `state_mask`."""
    words = scratch(vocab.num_words)
    raw = _walk.mask(vocab.walk_tables or walk_tables(vocab), dfa, vocab, d, nonempty_stack, words)
    return _state_mask(kept(words, slice_base(dfa, vocab, d)), raw)


def _state_mask(words: Words, raw: bytes | None) -> StateMask:
    """A StateMask from what `_walk.mask` wrote (kept) and returned."""
    return StateMask(words, _NO_CANDS, _NO_CANDS, _NO_CANDS, raw)


def _step(dfa: LazyDfa, states: np.ndarray, cols: np.ndarray) -> np.ndarray:
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


def state_mask(dfa: LazyDfa, vocab: Vocabulary, d: int, nonempty_stack: bool) -> StateMask:
    """Walk the token trie from DFA state `d`, depth by depth, keeping only live prefixes;
    a subtree whose continuations all lie in a slice that loops on the current state is
    taken whole without walking it."""
    if dfa.trans[d, 0] == UNKNOWN:
        dfa.compute_row(d)
    levels = vocab.trie
    allowed: list[np.ndarray] = []
    ranges: list[tuple[np.ndarray, np.ndarray]] = []
    cands: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
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
        whole = _absorbed(dfa, vocab, depth, nodes, st)
        if whole is not None:
            ranges.append((lv.lo[nodes[whole]], lv.hi[nodes[whole]]))
            keep = ~whole
            nodes, st, esc_pos, esc_st = nodes[keep], st[keep], esc_pos[keep], esc_st[keep]
        flag = dfa.has_calls[st] | dfa.is_final[st] if nonempty_stack else dfa.has_calls[st]
        new = flag & (esc_pos < 0)
        esc_pos = np.where(new, depth, esc_pos)
        esc_st = np.where(new, st, esc_st)
        if depth == len(levels):
            break
        if len(nodes) <= SMALL_NODES and int((lv.hi[nodes] - lv.lo[nodes]).sum()) <= SMALL_TOKENS:
            _walk_small(dfa, vocab, depth, lv, nodes, st, esc_pos, esc_st, nonempty_stack, allowed, cands)
            break
        nodes, owner = _children(lv.child_lo[nodes], lv.child_hi[nodes])
        parent_state, esc_pos, esc_st = st[owner], esc_pos[owner], esc_st[owner]
    return _finish(vocab, allowed, ranges, cands)


def _walk_small(dfa: LazyDfa, vocab: Vocabulary, depth: int, lv: TrieLevel, nodes: np.ndarray, st: np.ndarray,
                esc_pos: np.ndarray, esc_st: np.ndarray, nonempty: bool, allowed: list[np.ndarray],
                cands: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Finish a few remaining subtrees token by token in Python (cheaper than numpy calls)."""
    ok: list[int] = []
    c_rows: list[int] = []
    c_pos: list[int] = []
    c_st: list[int] = []
    for k in range(len(nodes)):
        node = int(nodes[k])
        for row in range(int(lv.lo[node]), int(lv.hi[node])):
            data = vocab.token_bytes[int(vocab.sorted_ids[row])] or b""
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
    allowed.append(np.array(ok, dtype=np.int64))
    if c_rows:
        one = np.ones(len(c_rows), dtype=np.int64)
        rows = np.array(c_rows, dtype=np.int64)
        cands.append((rows, rows + one, np.array(c_pos, dtype=np.int64), np.array(c_st, dtype=np.int64)))


def _absorbed(dfa: LazyDfa, vocab: Vocabulary, depth: int, nodes: np.ndarray, st: np.ndarray) -> np.ndarray | None:
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
        sl = vocab.slice_for(in_set)
        if sl is None:
            continue
        hit = (st == s) & sl.pure[depth - 1][nodes]
        whole = hit if whole is None else whole | hit
    return whole if whole is not None and whole.any() else None


def _finish(vocab: Vocabulary, allowed: list[np.ndarray], ranges: list[tuple[np.ndarray, np.ndarray]],
            cands: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> StateMask:
    n = len(vocab.lens)
    if ranges:
        lo = np.concatenate([r[0] for r in ranges])
        hi = np.concatenate([r[1] for r in ranges])
        flag = np.bincount(lo, minlength=n + 1) - np.bincount(hi, minlength=n + 1)
        row_ok = np.cumsum(flag[:n]) > 0
    else:
        row_ok = np.zeros(n, dtype=bool)
    if allowed:
        row_ok[np.concatenate(allowed)] = True
    if len(vocab.dup_rows):
        row_ok[vocab.dup_rows] = row_ok[vocab.dup_first]
    ok = np.zeros(vocab.num_words * 32, dtype=bool)
    ok[vocab.sorted_ids[row_ok]] = True
    if cands:
        lo, hi, pos, st = (np.concatenate(x) for x in zip(*cands))
        c_rows, owner = _children(lo, hi)
        c_pos, c_st = pos[owner], st[owner]
    else:
        c_rows = c_pos = c_st = np.zeros(0, dtype=np.int64)
    return StateMask(pack_bits(ok), vocab.sorted_ids[c_rows], c_pos, c_st)


def compute_mask(dfa: LazyDfa, vocab: Vocabulary, configs: States, cache: dict[tuple[int, bool], StateMask]) -> Words:
    """The mask of the tokens allowed after `configs` (EOS when complete); may be a cached state
    mask itself, so callers must not write into it."""
    if len(configs) == 1:
        ((stack, d),) = configs
        if not dfa.flags.item(d) & _STOP:
            sm = cache.get((d, bool(stack))) or _cached_state_mask(dfa, vocab, d, bool(stack), cache)
            if sm.stack_free():
                return sm.words
    if _walk is None:
        words = np.zeros(vocab.num_words, dtype=np.int32)
        _numpy_general(dfa, vocab, configs, cache, words)
        if is_complete(dfa, configs):
            words |= vocab.eos_words
        return words
    words = scratch(vocab.num_words, 1)
    one = len(configs) == 1 and not dfa.flags.item(next(iter(configs))[1]) & _STOP  # nothing to expand
    expanded = configs if one else expand(dfa, configs)
    items: list[tuple[tuple[int, ...], bytes]] = []  # (stack, escapes) for _walk.resolve
    base = None  # a dense state mask the result holds: kept as the words apart from it
    if len(expanded) == 1:
        ((stack, d),) = expanded
        sm = _cached_state_mask(dfa, vocab, d, bool(stack), cache)
        write_row(sm.words, words[None], 0)
        base = sm.words if type(sm.words) is np.ndarray else None
        items = [(stack, sm.escapes)] if sm.escapes else []
    else:
        words.fill(0)
        for stack, d in expanded:
            sm = _cached_state_mask(dfa, vocab, d, bool(stack), cache)
            or_into(words, sm.words)
            if sm.escapes:
                items.append((stack, sm.escapes))
    if items:
        _walk.resolve(vocab.walk_tables or walk_tables(vocab), dfa, items, words)
    if any(not stack and dfa.is_final.item(d) for stack, d in expanded):  # pda.is_complete
        words |= vocab.eos_words
    return kept(words, base)


def fill_single(dfa: LazyDfa, vocab: Vocabulary, configs: States, cache: dict[tuple[int, bool], StateMask],
                rows: np.ndarray, row: int) -> Words | None:
    """`compute_mask` of one configuration that can neither call nor return, also written into
    rows[row] (a new state's walk copies it there in C); None, writing nothing, for any other
    case. The common mask miss, kept to as few Python calls as possible."""
    if len(configs) != 1 or _walk is None:
        return None
    ((stack, d),) = configs
    if dfa.flags.item(d) & _STOP:
        return None
    key = (d, stack != ())
    sm = cache.get(key)
    if sm is None:
        words = scratch(vocab.num_words)
        raw = _walk.mask(vocab.walk_tables or walk_tables(vocab), dfa, vocab, d, key[1], words, rows, row)
        sm = cache[key] = _state_mask(kept(words, slice_base(dfa, vocab, d)), raw)
        return sm.words if raw is None else None  # (with escapes the C walk wrote no row)
    if not sm.stack_free():
        return None
    write_row(sm.words, rows, row)
    return sm.words


def _numpy_general(dfa: LazyDfa, vocab: Vocabulary, configs: States, cache: dict[tuple[int, bool], StateMask],
                   words: np.ndarray) -> None:
    """The general path without the C walk: state masks OR-ed, candidates stepped token by token."""
    slow: list[tuple[int, tuple[int, ...], int, int]] = []
    for stack, d in expand(dfa, configs):
        sm = _cached_state_mask(dfa, vocab, d, bool(stack), cache)
        or_into(words, sm.words)
        for tid, pos, s in zip(sm.cand_ids.tolist(), sm.cand_pos.tolist(), sm.cand_state.tolist()):
            slow.append((tid, stack, pos, s))
    ok = _candidates_allowed(dfa, vocab, slow, words)
    if ok:
        ids = np.array(ok, dtype=np.int64)
        np.bitwise_or.at(words, ids >> 5, (np.int64(1) << (ids & 31)).astype(np.int32))


def _candidates_allowed(dfa: LazyDfa, vocab: Vocabulary, slow: list[tuple[int, tuple[int, ...], int, int]],
                        words: np.ndarray) -> list[int]:
    """Ids of the candidate tokens (token id, stack, byte position, DFA state) whose remaining
    bytes the pushdown automaton accepts; a step (configurations, byte) is taken once for all
    the tokens that share it."""
    ok: set[int] = set()
    memo: dict[tuple[States, int], States] = {}
    for tid, stack, pos, s in slow:
        if tid in ok or (int(words[tid >> 5]) >> (tid & 31)) & 1:
            continue
        cur: States = frozenset(((stack, s),))
        for b in (vocab.token_bytes[tid] or b"")[pos:]:
            key = (cur, b)
            nxt = memo.get(key)
            if nxt is None:
                nxt = memo[key] = advance(dfa, cur, bytes((b,)))
            if not nxt:
                break
            cur = nxt
        else:
            ok.add(tid)
    return sorted(ok)


def _cached_state_mask(dfa: LazyDfa, vocab: Vocabulary, d: int, nonempty: bool,
                       cache: dict[tuple[int, bool], StateMask]) -> StateMask:
    key = (d, nonempty)
    sm = cache.get(key)
    if sm is None:
        sm = state_mask_c(dfa, vocab, d, nonempty) if _walk is not None else state_mask(dfa, vocab, d, nonempty)
        cache[key] = sm
    return sm
