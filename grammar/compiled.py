"""The compiled grammar: an immutable NFA over one vocabulary plus its memoized DFA and masks."""

from __future__ import annotations

import threading

import numpy as np

from grammar.automaton.dfa import DEFAULT_BUILDER, LazyDfa
from grammar.automaton.nfa import build_nfa
from grammar.automaton.pda import States, advance, is_complete
from grammar.bitmask import BitmaskViews
from grammar.ir import Grammar
from grammar.masks.index import MAX_RUN, TokenIndex
from grammar.masks.precompute import precompute_masks
from grammar.masks.slices import ASCII_TEXT_SLICE
from grammar.masks.state_masks import Key, StateMask, compute_mask, fill_single
from grammar.masks.words import Words, dense, write_row
from grammar.matcher import Matcher

MAX_CACHED_MASKS = 20_000
# A bounded run (e.g. a string with maxLength) is followed this many bytes ahead to size its
# slice: each byte costs a DFA row, and longer tokens are few (the walk checks them one by one).
MAX_ABSORB = MAX_RUN
# With this many tokens holding non-ASCII bytes, checking that a bounded run (maxLength string)
# takes any UTF-8 character (a few DFA rows per step) costs less than walking those tokens.
UTF8_RUN_TOKENS = 50_000
# DFA rows built at compile time, outward from the start states (LazyDfa.warm), so that the
# first masks' walks find most of their rows (1-2 us each) built: some 500 rows in the budget.
WARM_ROWS = 2000
WARM_BUDGET_S = 0.0015
# State masks made at compile time, likeliest first outward from the start (grammar/masks/precompute.py):
# the first steps' masks are then cache hits; about 100-150 states (~15 us each) fit the budget:
# on the dev schemas 100 states leave 40% of the masks to be made on use, none 60% (mask p50 ~3x).
PRECOMPUTE_STATES = 1000
PRECOMPUTE_BUDGET_S = 0.002


class CompiledGrammar:
    """One grammar compiled against one vocabulary; built by grammar/compiler.py's `compile_*`.

    Immutable from the outside: the lazily built DFA rows and the per-state mask cache are
    memoization shared by all matchers of this grammar (guarded by a lock, so matchers may
    live on different threads). Call `matcher()` once per request.
    """

    def __init__(self, grammar: Grammar, index: TokenIndex, views: BitmaskViews | None = None,
                 builder: type = DEFAULT_BUILDER) -> None:
        self.index = index
        self.vocab = index.vocab
        self.views = views or BitmaskViews()
        self.nfa = build_nfa(grammar)
        slices = index.slices
        self.dfa = LazyDfa(self.nfa, min(index.trie.max_len, MAX_ABSORB), slices.canonical_sets, builder)
        self.dfa.set_utf8(ASCII_TEXT_SLICE, slices.utf8_text_slice, index.trie.num_non_ascii >= UTF8_RUN_TOKENS)
        self.warmed = self.dfa.warm(WARM_ROWS, WARM_BUDGET_S)
        self.initial: States = frozenset((((), self.dfa.rule_start[0]),))
        self.lock = threading.RLock()
        self._state_masks: dict[Key, StateMask] = {}
        self.masks: dict[States, Words] = {}  # by configurations; read by matchers, written under the lock
        self._complete: dict[States, bool] = {}
        self.precomputed = precompute_masks(self.dfa, index, self._state_masks, self.masks,
                                            PRECOMPUTE_STATES, PRECOMPUTE_BUDGET_S)

    def matcher(self) -> Matcher:
        return Matcher(self)

    def mask(self, configs: States) -> np.ndarray:
        """int32 [num_words] allowed-token bits for `configs` (a cached array is read-only)."""
        cached = self.masks.get(configs)
        if cached is None:
            with self.lock:
                cached = self._store(configs, compute_mask(self.dfa, self.index, configs, self._state_masks))
        return dense(cached)

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
            if len(configs) == 1:  # one configuration: run the DFA in the walk (C) up to a call or return
                ((stack, d),) = configs
                s, pos = self.index.walk.run(self.dfa, d, data, 0, bool(stack))
                if s < 0:
                    return frozenset()
                configs = frozenset(((stack, s),))
                if pos == len(data):
                    return configs
                data = data[pos:]  # stopped before a call or a return: the pushdown step below
            return advance(self.dfa, configs, data)

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
