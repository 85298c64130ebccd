"""The lazily determinized automaton: DFA states are epsilon-closed sets of NFA states of one rule."""

from __future__ import annotations

import numpy as np

from grammar.automaton import dfa_ref
from grammar.automaton.constants import DEAD, SLICE_UNKNOWN, UNKNOWN, UTF8_SEQUENCES
from grammar.automaton.nfa import Nfa

try:
    from grammar.automaton._dfa import Builder as CBuilder
except ImportError:  # built by setup.py; without a C compiler the reference builder builds the rows
    CBuilder = None

DEFAULT_BUILDER = CBuilder or dfa_ref.Builder
# First table size: the NFA's state count rounded up to a power of two, capped here (64 MiB of address
# space for the transitions, faulted in as rows are made): a doubling copies every row inside the fill
# that made the state (16k -> 32k rows: 8-18 ms, in sp_409 of the dev data, whose 65k-state NFA makes
# 28k DFA states); at 1 << 14 it did, and its fills' mean was 24-26 us against 21-23 (SmolLM2, idle).
MAX_FIRST_ROWS = 1 << 16


class LazyDfa:
    """Transition table grown on demand; rows are filled the first time a state is stepped from.

    Owned by one compiled grammar; read by its matchers and its mask computation under the
    grammar's lock. The tables live here; the states, rows, slices and absorb lengths are made by
    a row builder (`builder`: the C one of grammar/automaton/_dfa.c, or its Python reference
    grammar/automaton/dfa_ref.py, which makes the same automaton), which writes into the tables
    and calls `_grow` when a new state does not fit. With `slice_sets` (the canonical slices'
    byte sets, grammar/masks/slices.py) each state also gets the slice of the bytes that lead to
    its dominant target and how many of them it surely absorbs (read by the C mask walk).
    """

    def __init__(self, nfa: Nfa, max_absorb: int = 64, slice_sets: bytes | None = None,
                 builder: type = DEFAULT_BUILDER) -> None:
        self.nfa = nfa
        self.max_absorb = max_absorb  # longest token: absorb lengths are only needed up to it
        cap = 64
        while cap < min(nfa.num_states, MAX_FIRST_ROWS):
            cap *= 2
        # [cap, 256]: uninitialized memory (pages are touched only when used); a row is set to
        # UNKNOWN when its state is made, so growing copies the old rows and fills nothing.
        self.trans = np.empty((cap, 256), dtype=np.int32)
        self.is_final = np.zeros(cap, dtype=bool)  # [cap]
        self.has_calls = np.zeros(cap, dtype=bool)  # [cap]
        self.flags = np.zeros(cap, dtype=np.uint8)  # [cap] FLAG_CALLS | FLAG_FINAL (read by the C walk)
        self.slice_of = np.full(cap, SLICE_UNKNOWN, dtype=np.int16)  # [cap] slice id (NO_SLICE: none)
        self.absorb = np.zeros(cap, dtype=np.int32)  # [cap] slice bytes surely absorbed (UNBOUNDED: a loop)
        self.dominant = np.full(cap, DEAD, dtype=np.int32)  # [cap] target of at least MIN_DOMINANT_BYTES bytes
        self.has_loop = np.full(cap, -1, dtype=np.int8)  # [cap]: -1 unknown, 0 / 1 (loop_set)
        self.loops: dict[int, np.ndarray | None] = {}  # dstate -> bytes looping back to it
        self._calls: dict[int, tuple[tuple[int, int], ...]] = {}  # dstate -> (rule, return dstate) pairs
        self._utf8_pairs: dict[tuple[int, int], bool] = {}  # (state, next) -> characters step there
        if nfa.packed is not None and CBuilder is not None and issubclass(builder, CBuilder):
            # the C walk's packed tables, read as they are (no per-state lists made)
            self.builder = builder(nfa.packed, None, None, nfa.rule_final, slice_sets is not None, max_absorb)
        else:
            self.builder = builder(nfa.byte_edges, nfa.eps, nfa.calls, nfa.rule_final, slice_sets is not None, max_absorb)
        self.builder.bind(self)
        self.set_utf8(-1, -1, False)
        if slice_sets is not None:
            self.builder.set_slices(slice_sets)
        self.rule_start = [self.builder.intern_closure(self, (s,)) for s in nfa.rule_start]

    def set_utf8(self, ascii_slice: int, text_slice: int, runs: bool) -> None:
        """`upgrade_to_utf8` widens `ascii_slice` to `text_slice` (-1: never); with `runs` also
        for bounded runs (set when the vocabulary has many non-ASCII tokens)."""
        self.utf8 = (ascii_slice, text_slice, runs)
        self.builder.set_utf8(ascii_slice, text_slice, runs, UTF8_SEQUENCES)

    @property
    def num_states(self) -> int:
        return self.builder.num_states()

    def nfa_states(self, d: int) -> tuple[int, ...]:
        """The sorted NFA states of DFA state d."""
        return self.builder.nfa_states(d)

    def calls(self, d: int) -> tuple[tuple[int, int], ...]:
        """(rule, return dstate) pairs of d; return states are built on first use (a long chain
        of calls, e.g. a hoisted repeat, would otherwise be determinized all at once)."""
        out = self._calls.get(d)
        if out is None:
            if not self.has_calls[d]:
                return ()
            out = tuple((r, self.builder.intern_closure(self, rets)) for r, rets in self.builder.call_groups(d))
            self._calls[d] = out
        return out

    def _grow(self) -> None:
        """Double the tables (called by the builder when a new state does not fit)."""
        cap = len(self.is_final) * 2
        trans = np.empty((cap, 256), dtype=np.int32)
        trans[: len(self.trans)] = self.trans
        self.trans = trans

        def grown(a: np.ndarray, fill: int) -> np.ndarray:
            return np.concatenate([a, np.full(cap - len(a), fill, dtype=a.dtype)])

        self.is_final, self.has_calls, self.flags = grown(self.is_final, 0), grown(self.has_calls, 0), grown(self.flags, 0)
        self.has_loop, self.slice_of = grown(self.has_loop, -1), grown(self.slice_of, SLICE_UNKNOWN)
        self.absorb, self.dominant = grown(self.absorb, 0), grown(self.dominant, DEAD)

    def compute_row(self, d: int) -> None:
        """Fill trans[d, :] for all 256 bytes, and dominant[d] (called by the walks when unknown)."""
        self.builder.row(self, d)

    def prepare(self, d: int) -> None:
        """Fill row d, its slice id and absorb length (called by the C walk when unknown)."""
        self.builder.prepare(self, d)

    def slice_step(self, d: int) -> tuple[int, int]:
        """(slice id, target): the slice whose bytes all lead from d to one target, if any."""
        return self.builder.slice_step(self, d)

    def slice_id(self, d: int) -> int:
        """The slice of d (computed on first use)."""
        if self.slice_of[d] == SLICE_UNKNOWN:
            self.prepare(d)
        return int(self.slice_of[d])

    def upgrade_to_utf8(self, d: int) -> int:
        """The slice of d, first widened to string text with UTF-8 characters when every complete
        character takes d where a text byte does (a loop, or each step of a bounded run with
        `runs`). Only worth its rows for a state a mask starts from (called by the C walk)."""
        return self.builder.upgrade_to_utf8(self, d)

    def utf8_to(self, d: int, target: int) -> bool:
        """True when every complete multi-byte UTF-8 character leads from d to `target` (cached)."""
        ok = self._utf8_pairs.get((d, target))
        if ok is None:
            ok = self._utf8_pairs[(d, target)] = bool(self.builder.utf8_to(self, d, target, UTF8_SEQUENCES))
        return ok

    def text_closed(self, d: int) -> bool:
        """True when every token made only of string text (ASCII text bytes, whole UTF-8
        characters) is consumed from d without dying, whatever states it passes (remembered; the
        C walk takes such a state's text tokens whole and walks only the others)."""
        return bool(self.builder.text_closed(self, d))

    def closed_known(self, d: int) -> bool:
        """text_closed(d) when a search already said yes, else False without searching (after a
        walk of d: the walk asks it of every state outside a string)."""
        return self.builder.closed_known(d)

    def close_text(self, budget_s: float) -> int:
        """text_closed of every state in state order, within about `budget_s` seconds (at compile,
        after `warm`: a first walk of a key start then finds it known instead of searching its key
        trie, 15-80 us); returns how many states are closed."""
        return self.builder.close_text(self, budget_s)

    def upgrade_text(self, budget_s: float) -> int:
        """upgrade_to_utf8 of the states of strings (those whose built row takes a few ASCII text
        bytes to one live state: a string's body, a step of a bounded run), in state order, within
        about `budget_s` seconds (at compile, after `warm`: their UTF-8 rows, ~10-25 states each,
        are then not made by the first walk that starts there); returns how many were widened."""
        return self.builder.upgrade_text(self, budget_s)

    def dominant_target(self, d: int) -> int | None:
        """The state that at least MIN_DOMINANT_BYTES bytes lead to from d, if any."""
        if self.trans[d, 0] == UNKNOWN:
            self.compute_row(d)
        t = int(self.dominant[d])
        return t if t >= 0 else None

    def warm(self, max_rows: int, budget_s: float) -> int:
        """Build up to `max_rows` unknown rows in the order their states were made (outward from
        the start states), stopping after about `budget_s` seconds; returns how many. Rows built
        at compile time are rows the first masks' walks need not build."""
        return self.builder.warm(self, max_rows, budget_s)

    def loop_set(self, d: int, min_bytes: int) -> np.ndarray | None:
        """bool [256] of the bytes that lead from `d` back to `d`, if at least `min_bytes`."""
        if d in self.loops:
            return self.loops[d]
        if self.trans[d, 0] == UNKNOWN:
            self.compute_row(d)
        in_set = self.trans[d] == d
        out = in_set if int(in_set.sum()) >= min_bytes else None
        self.loops[d] = out
        self.has_loop[d] = out is not None
        return out

    def step(self, d: int, b: int) -> int:
        t = int(self.trans[d, b])
        if t == UNKNOWN:
            self.compute_row(d)
            t = int(self.trans[d, b])
        return t
