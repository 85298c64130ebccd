"""Token masks for a set of pushdown configurations, from one walk per DFA state and the stack where it matters.

A DFA state's walk (the index's walk: grammar/masks/_walk.c, or grammar/masks/walk_ref.py) gives
the tokens consumed entirely in the DFA and the escapes: where tokens passed a call or a return
and then died, to be checked against the stack. A configuration whose state can neither call
nor return (nor end the output) has its state's words as its mask; any other is expanded
through calls and returns (grammar/automaton/pda.py) and its escapes resolved against each
stack (the walk's `resolve`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grammar.automaton.constants import FLAG_CALLS, FLAG_FINAL
from grammar.automaton.dfa import LazyDfa
from grammar.automaton.pda import States, expand
from grammar.masks.index import TokenIndex
from grammar.masks.words import SPARSE_SHARE, SparseWords, Words, kept, or_into, scratch, scratch_rows, write_row

STOP = FLAG_CALLS | FLAG_FINAL  # a call, a return or (empty stack) EOS: a configuration's general path
Key = tuple[int, bool]  # (DFA state, whether the stack is non-empty), as the state mask cache keys it


@dataclass(slots=True)
class StateMask:
    """What one DFA state allows without looking at the stack: tokens consumed entirely in the
    DFA (`words`), and the walk's escapes (None: none), below which tokens are to be checked
    against the stack by the same walk's `resolve`. Never changed once made (not frozen: a frozen
    dataclass costs a microsecond more per mask)."""

    words: Words  # int32 [num_words], or its words apart from a base (SparseWords)
    escapes: bytes | None = None

    def stack_free(self) -> bool:
        """True when the stack cannot change this state's mask (`words` is the whole answer)."""
        return not self.escapes


def slice_base(dfa: LazyDfa, index: TokenIndex, d: int) -> np.ndarray | None:
    """The words of the slice that state d absorbs (what its walk started from), if any; for a
    state closed on string text, the text slice's (its walk takes them whole: an open object's
    key, whose mask, all text tokens and a few more, was otherwise kept as a dense copy after two
    failed sparse scans). On every cold fill: the builder answers dfa.closed_known(d) without the
    LazyDfa method's call."""
    sl = dfa.slice_of.item(d)
    text = index.slices.utf8_text_slice
    if sl != text and dfa.builder.closed_known(d):
        return index.slice_list[text].words
    return index.slice_list[sl].words_upto(dfa.absorb.item(d)) if sl >= 0 else None


def kept_after_walk(dfa: LazyDfa, index: TokenIndex, d: int, words: np.ndarray, pairs: bytes | None, based: bool,
                    base: np.ndarray | None) -> Words:
    """The mask d's walk wrote into `words`, as it is kept: from the pairs the walk found apart from
    `base` (d's slice base asked before the walk) or from zero; where it found none, again from
    slice_base now: the walk may have prepared d's slice, widened it to UTF-8 text or found d closed
    on text (9 % of a benchmark's cold fills, whose masks were otherwise kept as dense copies)."""
    walk = index.walk
    if pairs is None:
        return kept(words, slice_base(dfa, index, d), walk.sparse, walk.put)
    return SparseWords(pairs, base if based else None, len(words), walk.put)


def keep_walked(dfa: LazyDfa, index: TokenIndex, d: int, words: np.ndarray, escapes: bytes | None) -> StateMask:
    """A StateMask from what the walk of state d wrote into `words` (reused) and returned."""
    walk = index.walk
    return StateMask(kept(words, slice_base(dfa, index, d), walk.sparse, walk.put), escapes)


def state_mask(dfa: LazyDfa, index: TokenIndex, d: int, nonempty: bool, cache: dict[Key, StateMask]) -> StateMask:
    """The state mask of (d, nonempty), walked on first use and kept in `cache`."""
    key = (d, nonempty)
    sm = cache.get(key)
    if sm is None:
        words = scratch(index.vocab.num_words)
        sm = cache[key] = keep_walked(dfa, index, d, words, index.walk.mask(index.tables, dfa, index, d, nonempty, words))
    return sm


def compute_mask(dfa: LazyDfa, index: TokenIndex, configs: States, cache: dict[Key, StateMask]) -> Words:
    """The mask of the tokens allowed after `configs` (EOS when complete); may be a cached state
    mask itself, so callers must not write into it."""
    if len(configs) == 1:
        ((stack, d),) = configs
        if not dfa.flags.item(d) & STOP:
            sm = cache.get((d, bool(stack))) or state_mask(dfa, index, d, bool(stack), cache)
            if sm.stack_free():
                return sm.words
    words, out = scratch(index.vocab.num_words, 1), scratch_rows(index.vocab.num_words, 1)
    walk = index.walk
    one = len(configs) == 1 and not dfa.flags.item(next(iter(configs))[1]) & STOP  # nothing to expand
    expanded = configs if one else expand(dfa, configs)
    items: list[tuple[tuple[int, ...], bytes]] = []  # (stack, escapes) for the walk's resolve
    base = None  # a dense state mask the result holds: kept as the words apart from it
    if len(expanded) == 1:
        ((stack, d),) = expanded
        sm = state_mask(dfa, index, d, bool(stack), cache)
        write_row(sm.words, out, 0)
        base = sm.words if type(sm.words) is np.ndarray else None
        items = [(stack, sm.escapes)] if sm.escapes else []
    else:
        walk.put(out, 0, b"", None)
        for stack, d in expanded:
            sm = state_mask(dfa, index, d, bool(stack), cache)
            or_into(out, 0, sm.words, walk.or_put)
            if sm.escapes:
                items.append((stack, sm.escapes))
    if items:
        walk.resolve(index.tables, dfa, items, words)
    if any(not stack and dfa.is_final.item(d) for stack, d in expanded):  # pda.is_complete
        walk.or_put(out, 0, index.eos_pairs, None)
    return kept(words, base, walk.sparse, walk.put)


def fill_single(dfa: LazyDfa, index: TokenIndex, configs: States, cache: dict[Key, StateMask],
                rows: np.ndarray, row: int) -> Words | None:
    """`compute_mask` of one configuration that can neither call nor return, also written into
    rows[row] (a new state's walk copies it there itself); None, writing nothing, for any other
    case. The common mask miss, kept to as few Python calls as possible: a new state's walk
    with escapes has them resolved against this configuration's stack in the walk's own buffer
    (its state mask is then not kept: another stack would walk it again, which is rare).
    A final state under an empty stack (the output may end: its state mask and EOS) takes this
    path too: every request's last mask, which the general path made in ~15 us cold (p50)."""
    if len(configs) != 1:
        return None
    ((stack, d),) = configs
    flags = dfa.flags.item(d)
    if flags & STOP:
        if flags != FLAG_FINAL or stack:  # a call, or a return: the general path
            return None
        sm = cache.get((d, False)) or state_mask(dfa, index, d, False, cache)
        return None if sm.escapes else _fill_final(index, sm, rows, row)  # (tokens through a call further on)
    key = (d, stack != ())
    sm = cache.get(key)
    if sm is None:
        walk = index.walk
        words = scratch(index.vocab.num_words)
        base = slice_base(dfa, index, d)
        # the walk, the row and the mask as it is kept in one call (three calls cost ~2 us more cold)
        raw, pairs, based = walk.mask_kept(index.tables, dfa, index, d, key[1], words, rows, row, base,
                                           len(words) // SPARSE_SHARE)
        if raw is None:
            sm = cache[key] = StateMask(kept_after_walk(dfa, index, d, words, pairs, based, base))
            return sm.words
        walk.resolve(index.tables, dfa, [(stack, raw)], words)
        walk.put(rows, row, b"", words)  # (rows[row] = words, in C: numpy's copy costs more on a cold path)
        return kept(words, slice_base(dfa, index, d), walk.sparse, walk.put)  # (resolve only adds tokens)
    if not sm.stack_free():
        return None
    write_row(sm.words, rows, row)
    return sm.words


def _fill_final(index: TokenIndex, sm: StateMask, rows: np.ndarray, row: int) -> Words:
    """The mask of a final state under an empty stack, from its stack-free state mask `sm`: those
    tokens and EOS, also written into rows[row] (by the walk's put and or_put: numpy's |= and copy
    cost ~10 us here cold, an ad-hoc timing of the benchmark's last fills)."""
    n, walk = index.vocab.num_words, index.walk
    words, out = scratch(n, 1), scratch_rows(n, 1)
    write_row(sm.words, out, 0)
    walk.or_put(out, 0, index.eos_pairs, None)
    walk.put(rows, row, b"", words)
    return kept(words, sm.words if type(sm.words) is np.ndarray else None, walk.sparse, walk.put)
