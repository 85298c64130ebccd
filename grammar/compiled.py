"""The compiled grammar: an immutable NFA over one vocabulary plus its memoized DFA and masks."""

from __future__ import annotations

import threading

import numpy as np

from grammar.automaton.dfa import DEFAULT_BUILDER, LazyDfa
from grammar.automaton.nfa import build_nfa
from grammar.automaton.pda import States, advance_by, is_complete
from grammar.bitmask import BitmaskViews
from grammar.ir import Grammar
from grammar.masks.index import MAX_RUN, TokenIndex
from grammar.masks.likely_path import path_keys
from grammar.masks.precompute import Frontier
from grammar.masks.slices import ASCII_TEXT_SLICE
from grammar.masks.state_masks import Key, StateMask, compute_mask, fill_single
from grammar.masks.words import Words, dense, is_empty, write_row
from grammar.matcher import Matcher

MAX_CACHED_MASKS = 20_000
# A bounded run (e.g. a string with maxLength) is followed this many bytes ahead to size its
# slice: each byte costs a DFA row, and longer tokens are few (the walk checks them one by one).
MAX_ABSORB = MAX_RUN
# DFA rows built at compile time, outward from the start states (LazyDfa.warm): the whole DFA of
# most schemas (dev sample: p50 ~360 rows, ~0.3 ms), so that first walks build no rows and find
# them in cache (benchmarks/grammar.py --limit 100 --engines ours, idle, A/B by a temporary switch:
# mask p99 64-65 -> 41-43 us back to back, compile p50 +0.3 ms); a larger DFA gets the rows nearest
# its start within the budget. The budget binds only on large schemas (1,000+ states), whose first
# fills otherwise built rows cold (most of the 100 slowest fills, an ad-hoc listing). 1.5 -> 3 ms,
# with CLOSE_BUDGET_S 0.3 -> 0.6 ms, in an ad-hoc in-process A/B (fresh compiles alternating per
# schema, 85 dev schemas x 3, 19,653 fills): fills over 21 us 165 -> 157 and mask p99 19.3 -> 19.0
# us on a quiet machine, 370 -> 291 and 29.3 -> 24.3 us on a loaded one (6 / 1 ms there; 3 / 0.6 ms
# measured the same as 6 / 1); compile p50 and p90 unchanged, p99 7 -> 11 ms.
WARM_ROWS = 1 << 16
WARM_BUDGET_S = 0.003
# Then which states are closed on string text (LazyDfa.close_text: dev sample p50 44 us, p90 0.23 ms),
# so that a key start's first walk does not search its key trie first (15-80 us); mask p99 back to
# back 1.01-1.08x -> 0.83-1.04x xgrammar's, three pairs of benchmarks/grammar.py --limit 100
# --engines ours,xgrammar runs (A/B by a temporary switch).
CLOSE_BUDGET_S = 0.0006
# Then the UTF-8 rows of strings' states (LazyDfa.upgrade_text: dev sample ~30 us a schema), which
# a string state's first walk otherwise made, 10-25 new states cold (a quarter of the 100 slowest
# fills). The same A/B: fills over 21 us 207 -> 138, mask p99 21.2 -> 18.8 us (a Python prototype
# of the loop); 379 -> 320, 27.6 -> 25.5 us, compile p50 +0.03 ms (this one, a loaded machine).
UTF8_BUDGET_S = 0.0003
# State masks made ahead of use, likeliest first outward from the start (grammar/masks/precompute.py):
# the first steps' masks are then cache hits; about 100-150 states (~15 us each) fit the budget:
# on the dev schemas 100 states leave 40% of the masks to be made on use, none 60% (mask p50 ~3x).
# An eager grammar makes them in its constructor (the budget in wall time); a deferred one after
# its compile returned, a state at a time (grammar/precompute_worker.py: the budget in its CPU time).
PRECOMPUTE_STATES = 1000
PRECOMPUTE_BUDGET_S = 0.002
# A cached compile makes the masks of its first FIRST_MASKS_STATES states (the likely document's,
# then outward from the start) on its own thread before it returns (`precompute_now`), the rest on
# the worker: a request's first steps, or fills right after the compile, then find them made. On the
# dev schemas back to back (benchmarks/grammar.py, idle): none, compile p50 0.76 ms and mask p50 /
# p99 7.4 / 127 us; 0.3 ms, 1.16 ms and 6.0 / 95; 0.6 ms, 1.47 ms and 2.4 / 91 (before the likely
# document led). Counted in states, not time (issue 39): the share of a document's fills that find
# their mask made follows the states made, and the time a state takes follows the machine; with
# 0.6 ms of time the states made ran from ~50 (quick spells: more than the hits need, compile p50
# 0.35-0.45 ms longer) down to ~30 (slow ones: hits 53 %, the p50 fill on the edge between a hit
# and a walk). Alternating per schema in one process (400 dev schemas, SmolLM2, an ad-hoc script),
# 0.6 ms against 24 states: hits 61.4 -> 54.9 % and compile p50 1.98 -> 1.63 ms (seed 11 flexible),
# 63.6 -> 57.9 % and 1.95 -> 1.55 ms (seed 7 flexible), 60.9 -> 54.9 % and 1.92 -> 1.56 ms (seed 11
# compact); fill p99 -2 to +8 % (the +8 on seed 11 compact); 16 states: 51.4 % on seed 11
# flexible, too near the edge.
# FIRST_MASKS_BUDGET_S caps the time (a grammar whose states' walks are slow).
FIRST_MASKS_STATES = 24
FIRST_MASKS_BUDGET_S = 0.0006


class CompiledGrammar:
    """One grammar compiled against one vocabulary; built by grammar/compiler.py's `compile_*`.

    Immutable from the outside: the lazily built DFA rows and the per-state mask cache are
    memoization shared by all matchers of this grammar (guarded by a lock, so matchers may
    live on different threads). Call `matcher()` once per request. With `deferred`, the masks
    made ahead of use are left to `precompute_step` (called by grammar/precompute_worker.py, on
    its thread, after the compile returned); `precompute_done` is set when they are over.
    """

    def __init__(self, grammar: Grammar, index: TokenIndex, views: BitmaskViews | None = None,
                 builder: type = DEFAULT_BUILDER, deferred: bool = False) -> None:
        self.index = index
        self.vocab = index.vocab
        self.views = views or BitmaskViews()
        self.nfa = build_nfa(grammar)
        slices = index.slices
        self.dfa = LazyDfa(self.nfa, min(index.trie.max_len, MAX_ABSORB), slices.canonical_sets, builder)
        # Bounded runs (maxLength strings) are widened to UTF-8 text too: a character of several bytes
        # is one step of the run, its rows built with the DFA's (walking the vocabulary's non-ASCII
        # tokens through the run instead cost 30-60 us a fill on SmolLM2's 49k tokens).
        self.dfa.set_utf8(ASCII_TEXT_SLICE, slices.utf8_text_slice, True)
        self.warmed = self.dfa.warm(WARM_ROWS, WARM_BUDGET_S)
        self.dfa.close_text(CLOSE_BUDGET_S)
        self.dfa.upgrade_text(UTF8_BUDGET_S)
        self.initial: States = frozenset((((), self.dfa.rule_start[0]),))
        self.lock = threading.RLock()
        self._state_masks: dict[Key, StateMask] = {}
        self.masks: dict[States, Words] = {}  # by configurations; read by matchers, written under the lock
        self._complete: dict[States, bool] = {}
        self._precomputed = 0
        path = path_keys(grammar.likely, self.vocab, self.dfa, index.walk, self.initial) if grammar.likely else None
        self._frontier: Frontier | None = Frontier(self.dfa, index, self._state_masks, self.masks, path)
        self.precompute_done = threading.Event()
        if not deferred:
            self._frontier.run(PRECOMPUTE_STATES, PRECOMPUTE_BUDGET_S)
            self.end_precompute()

    @property
    def precomputed(self) -> int:
        """How many states' masks were made ahead of use so far."""
        frontier = self._frontier
        return frontier.done if frontier is not None else self._precomputed

    def precompute_step(self) -> bool:
        """Make one more state's mask ahead of use, under the lock (a matcher's fill of the same
        state waits for it, then finds it made); False, ending the precompute, when it is over."""
        with self.lock:
            frontier = self._frontier
            if frontier is None:
                return False
            if frontier.done < PRECOMPUTE_STATES and frontier.step():
                return True
            self.end_precompute()
            return False

    def precompute_now(self, max_states: int, budget_s: float) -> None:
        """Make masks ahead of use on this thread until `max_states` states are walked or about
        `budget_s` passed (a cached compile's first share: see FIRST_MASKS_STATES); the worker's
        steps go on from where this stopped."""
        with self.lock:
            if self._frontier is not None:
                self._frontier.run(min(max_states, PRECOMPUTE_STATES), budget_s)

    def end_precompute(self) -> None:
        """No more masks ahead of use (the budget is spent); sets `precompute_done`."""
        with self.lock:
            if self._frontier is not None:
                self._precomputed = self._frontier.done
                self._frontier = None  # (its queues and sets are freed)
            self.precompute_done.set()

    def matcher(self) -> Matcher:
        return Matcher(self)

    def mask(self, configs: States) -> np.ndarray:
        """int32 [num_words] allowed-token bits for `configs` (a cached array is read-only)."""
        return dense(self._words(configs))

    def allows_nothing(self, configs: States) -> bool:
        """Whether no token at all is allowed after `configs` (`not self.mask(configs).any()`, cheaper)."""
        return is_empty(self._words(configs))

    def _words(self, configs: States) -> Words:
        """The kept mask of `configs`, made and cached on first use."""
        cached = self.masks.get(configs)
        if cached is None:
            with self.lock:
                cached = self._store(configs, compute_mask(self.dfa, self.index, configs, self._state_masks))
        return cached

    def fill(self, configs: States, rows: np.ndarray, row: int) -> None:
        """rows[row] = self.mask(configs), where one configuration's new walk writes the row itself."""
        with self.lock:
            words = self.masks.get(configs)
            if words is None:
                words = fill_single(self.dfa, self.index, configs, self._state_masks, rows, row)
                if words is not None:
                    self._store(configs, words)
                    return
                words = self._store(configs, compute_mask(self.dfa, self.index, configs, self._state_masks))
            write_row(words, rows, row)

    def _store(self, configs: States, words: Words) -> Words:
        if len(self.masks) >= MAX_CACHED_MASKS:
            self.masks.clear()
        self.masks[configs] = words
        return words

    def advance(self, configs: States, data: bytes) -> States:
        with self.lock:
            return advance_by(self.dfa, configs, data, self.index.walk.run)

    def is_complete(self, configs: States) -> bool:
        done = self._complete.get(configs)
        if done is None:
            with self.lock:
                done = is_complete(self.dfa, configs)
            self._complete[configs] = done
        return done

    def token_allowed(self, configs: States, token_id: int) -> bool | None:
        """From a cached dense mask only: True/False, or None (no mask cached, or one kept as
        SparseWords, whose look-up costs about what `advance` does)."""
        cached = self.masks.get(configs)
        if type(cached) is not np.ndarray:
            return None
        return bool((int(cached[token_id >> 5]) >> (token_id & 31)) & 1)
