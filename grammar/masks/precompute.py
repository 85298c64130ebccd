"""Masks made ahead of use, so that decoding's first steps find them made.

A mask made lazily costs its step 5-30 us of trie walk plus the Python around it; made ahead it
costs a dictionary hit (~2 us). Which states to make: first those a text the model is likely to
write reaches at its token boundaries (grammar/masks/likely_path.py, when the front end guessed
one), then the token boundaries nearest the start, breadth-first, those the longest tokens reach
first — the walk of a state reports the states its allowed tokens end in (the walk's
`mask_ends`), and those are the states the next step's mask starts from. Bounded by a count and a
time budget; whatever is not made here is made on first use. `Frontier` walks one state per
`step`, so that the caller can run it under its grammar's lock a state at a time
(grammar/precompute_worker.py, after the compile returned).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator

from grammar.automaton.constants import FLAG_CALLS
from grammar.automaton.dfa import LazyDfa
from grammar.automaton.pda import States
from grammar.masks.index import TokenIndex
from grammar.masks.state_masks import STOP, Key, StateMask, compute_mask, kept_after_walk, slice_base
from grammar.masks.words import SPARSE_SHARE, Words, scratch

LIKELY_ENDS = 2  # a walk's end states (longest tokens first) taken ahead of the others


class Frontier:
    """The states still to walk, likeliest first, of one grammar's DFA; `step` walks the next one
    not walked yet, filling `state_masks` and, for the state's configuration on the empty stack,
    the whole-configuration cache `masks` (through the pushdown step when the state calls, may end
    the output or has escapes: most of the masks that cost a fill 30-50 us after their walk was
    made; the grammar's caches, shared with its matchers:
    the caller holds the grammar's lock around each step; a state a matcher made meanwhile is
    walked again for the states its tokens end in, and its mask kept as it is). The states the longest tokens end in
    go first (a tokenizer's merges make long tokens: `{"` + `name`, not `n` + `am`)."""

    __slots__ = ("dfa", "index", "state_masks", "masks", "path", "pending", "likely", "other", "in_likely", "in_other",
                 "walked", "done")

    def __init__(self, dfa: LazyDfa, index: TokenIndex, state_masks: dict[Key, StateMask],
                 masks: dict[States, Words], path: Iterator[Key] | None = None) -> None:
        self.dfa, self.index, self.state_masks, self.masks = dfa, index, state_masks, masks
        # Before all of them, the states of a text the model is likely to write, in its order
        # (grammar/masks/likely_path.py), each walked when reached like any other.
        self.path = path
        self.pending: list[tuple[int, bool, list[int], int]] = []  # the path's walks: (state, stack, ends, flags)
        # The start, then outward from it; the other rules' starts among the others, each taken
        # among the likely ones when a walk meets a call of it (see `step`). All of them first took
        # the first steps of a grammar of many rules (about 30 states fit the first masks' budget then) away
        # from the document's path: on 400 dev schemas, alternating per schema in one process, the
        # fills right after the compile found 47.8 -> 48.6 % (seed 11) and 52.4 -> 53.0 % (seed 7)
        # of their masks made, at the same budget (flexible whitespace).
        start = (dfa.rule_start[0], False)
        rules = [(s, True) for s in dfa.rule_start[1:]]
        self.likely: deque[Key] = deque([start])  # breadth-first over the likeliest boundaries...
        self.other: deque[Key] = deque(rules)  # ...then over the others
        self.in_likely: set[Key] = {start}
        self.in_other: set[Key] = set(rules)
        self.walked: set[Key] = set()
        self.done = 0  # states walked here

    def _next(self) -> Key | None:
        """The next state not walked here yet, or None when none is left."""
        while True:
            if self.path is not None:
                try:
                    key = next(self.path, None)
                except Exception:  # noqa: BLE001 - a guess must never fail a compile: its path ends there
                    key = None
                if key is None:  # the path is over: outward from its states, in their order
                    self.path = None
                    for walked in self.pending:
                        self._queue(*walked)
                    self.pending.clear()
                    continue
                self.in_likely.add(key)  # (not queued again when a walk meets it)
            elif self.likely:
                key = self.likely.popleft()
            elif self.other:
                key = self.other.popleft()
            else:
                return None
            if key not in self.walked:  # (queued among the others, then among the likely ones)
                return key

    def step(self) -> bool:
        """Walk the next state; False when none is left."""
        key = self._next()
        if key is None:
            return False
        dfa, index = self.dfa, self.index
        d, nonempty = key
        words = scratch(index.vocab.num_words)
        base = slice_base(dfa, index, d)
        # the walk, its end states and the mask as it is kept, in one call
        raw, ends, pairs, based = index.walk.mask_ends(index.tables, dfa, index, d, nonempty, words, base,
                                                       len(words) // SPARSE_SHARE)
        sm = self.state_masks.get(key)  # made meanwhile by a matcher (deferred): walked again for its ends
        if sm is None:
            sm = self.state_masks[key] = StateMask(kept_after_walk(dfa, index, d, words, pairs, based, base), raw)
        self.walked.add(key)
        self.done += 1
        flags = dfa.flags.item(d)
        if not nonempty:  # the configuration on the empty stack: its mask too
            configs = frozenset((((), d),))
            if configs not in self.masks:  # the state's words when stack-free, else through calls, returns, escapes
                stack_free = not flags & STOP and not sm.escapes  # (compute_mask's own first answer)
                self.masks[configs] = sm.words if stack_free else compute_mask(dfa, index, configs, self.state_masks)
        if self.path is not None:  # queued once the path is over (not needed before, and a step's ~3 us)
            self.pending.append((d, nonempty, ends, flags))
        else:
            self._queue(d, nonempty, ends, flags)
        return True

    def _queue(self, d: int, nonempty: bool, ends: list[int], flags: int) -> None:
        """Queue the states state d's walk leads to: the likely ones, then the others."""
        dfa = self.dfa
        first = [(t, nonempty) for t in ends[:LIKELY_ENDS]]
        dom = dfa.dominant.item(d)
        if dom >= 0:  # the next state of a run a slice absorbs (tokens ending inside it)
            first.append((dom, nonempty))
        if flags & FLAG_CALLS:  # tokens that enter a called rule, and the states returned to
            for rule, ret in dfa.calls(d):
                first += [(dfa.rule_start[rule], True), (ret, nonempty)]
        for k in first:
            if k not in self.in_likely and k not in self.walked:
                self.in_likely.add(k)
                self.likely.append(k)
        for t in ends[LIKELY_ENDS:]:
            k = (t, nonempty)
            if k not in self.in_likely and k not in self.in_other:
                self.in_other.add(k)
                self.other.append(k)

    def run(self, max_states: int, budget_s: float) -> int:
        """Step until `max_states` states are walked here, none is left or about `budget_s` seconds
        passed (at once: an eager compile); returns how many states were walked. The clock is read
        after every step (a step through the pushdown path can take a few hundred us)."""
        end = time.perf_counter() + budget_s
        while self.done < max_states and self.step():
            if time.perf_counter() > end:
                break
        return self.done
