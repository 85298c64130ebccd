"""Masks made at compile time, so that decoding's first steps find them made.

A mask made lazily costs its step 5-30 us of trie walk plus the Python around it; made here it
costs a dictionary hit (~2 us). Which states to make: the token boundaries nearest the start,
breadth-first, those the longest tokens reach first — the walk of a state reports the states its
allowed tokens end in (the walk's `mask_ends`), and those are the states the next step's
mask starts from. Bounded by a count and a time budget (the time to the first mask stays a few
milliseconds); whatever is not made here is made on first use.
"""

from __future__ import annotations

import time
from collections import deque

from grammar.automaton.constants import FLAG_CALLS
from grammar.automaton.dfa import LazyDfa
from grammar.automaton.pda import States
from grammar.masks.index import TokenIndex
from grammar.masks.state_masks import STOP, Key, StateMask, keep_walked
from grammar.masks.words import Words, scratch

LIKELY_ENDS = 2  # a walk's end states (longest tokens first) taken ahead of the others


def precompute_masks(dfa: LazyDfa, index: TokenIndex, state_masks: dict[Key, StateMask],
                     masks: dict[States, Words], max_states: int, budget_s: float) -> int:
    """Walk up to `max_states` states (about `budget_s` seconds) outward from the rule starts,
    filling `state_masks` and, for a state on the empty stack that needs no pushdown step, the
    whole-configuration cache `masks`; returns how many states were walked. The states the longest
    tokens end in go first (a tokenizer's merges make long tokens: `{"` + `name`, not `n` + `am`)."""
    if max_states <= 0 or budget_s <= 0:
        return 0
    words = scratch(index.vocab.num_words)
    end = time.perf_counter() + budget_s
    starts = [(dfa.rule_start[0], False)] + [(s, True) for s in dfa.rule_start[1:]]
    likely: deque[Key] = deque(starts)  # breadth-first over the likeliest boundaries...
    other: deque[Key] = deque()  # ...then over the others
    in_likely: set[Key] = set(starts)
    in_other: set[Key] = set()
    walk, tables = index.walk.mask_ends, index.tables  # (bound once: this loop is the compile's hottest)
    flags_of, dominant = dfa.flags.item, dfa.dominant.item
    done = 0
    while done < max_states:
        if likely:
            key = likely.popleft()
        elif other:
            key = other.popleft()
        else:
            break
        if key in state_masks:  # queued among the others, then among the likely ones
            continue
        d, nonempty = key
        raw, ends = walk(tables, dfa, index, d, nonempty, words)
        sm = state_masks[key] = keep_walked(dfa, index, d, words, raw)
        done += 1
        flags = flags_of(d)
        if not nonempty and not flags & STOP and not raw:  # stack-free: the configuration's mask too
            masks[frozenset((((), d),))] = sm.words
        first = [(t, nonempty) for t in ends[:LIKELY_ENDS]]
        dom = dominant(d)
        if dom >= 0:  # the next state of a run a slice absorbs (tokens ending inside it)
            first.append((dom, nonempty))
        if flags & FLAG_CALLS:  # tokens that enter a called rule, and the states returned to
            for rule, ret in dfa.calls(d):
                first += [(dfa.rule_start[rule], True), (ret, nonempty)]
        for k in first:
            if k not in in_likely and k not in state_masks:
                in_likely.add(k)
                likely.append(k)
        for t in ends[LIKELY_ENDS:]:
            k = (t, nonempty)
            if k not in in_likely and k not in in_other:
                in_other.add(k)
                other.append(k)
        if done % 8 == 0 and time.perf_counter() > end:
            break
    return done
