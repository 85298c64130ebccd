"""The lazily determinized automaton: DFA states are epsilon-closed sets of NFA states of one rule."""

from __future__ import annotations

from typing import Callable

import numpy as np

from grammar.nfa import Nfa

UNKNOWN = -2
DEAD = -1
FLAG_CALLS = 1
FLAG_FINAL = 2
MIN_LOOP_BYTES = 8  # a state looping on fewer bytes gets no token slice


class LazyDfa:
    """Transition table grown on demand; rows are filled the first time a state is stepped from.

    Owned by one compiled grammar; read by its matchers and its mask computation under the
    grammar's lock.
    """

    def __init__(self, nfa: Nfa, slicer: Callable[[np.ndarray], int] | None = None) -> None:
        self.nfa = nfa
        self.slicer = slicer  # loop byte set -> vocabulary slice id (-1: none)
        self.sets: list[frozenset[int]] = []
        self.index: dict[frozenset[int], int] = {}
        self.trans = np.full((64, 256), UNKNOWN, dtype=np.int32)  # [cap, 256]
        self.is_final = np.zeros(64, dtype=bool)  # [cap]
        self.has_calls = np.zeros(64, dtype=bool)  # [cap]
        self.loops: dict[int, np.ndarray | None] = {}  # dstate -> bytes looping back to it
        self.has_loop = np.full(64, -1, dtype=np.int8)  # [cap]: -1 unknown, 0 / 1
        self.flags = np.zeros(64, dtype=np.uint8)  # [cap] FLAG_CALLS | FLAG_FINAL (read by the C walk)
        self.slice_of = np.full(64, -1, dtype=np.int16)  # [cap] slice id, valid once the row is filled
        self.calls: list[tuple[tuple[int, int], ...]] = []  # (rule, return dstate) per dstate
        self.final_states = frozenset(nfa.rule_final)
        self._closure: dict[int, frozenset[int]] = {}
        self._targets: dict[frozenset[int], int] = {}
        self.rule_start = [self.state_of(self.closure((s,))) for s in nfa.rule_start]

    def closure(self, states: tuple[int, ...] | frozenset[int]) -> frozenset[int]:
        out: set[int] = set()
        for s in states:
            c = self._closure.get(s)
            if c is None:
                c = self._single_closure(s)
            out |= c
        return frozenset(out)

    def _single_closure(self, s: int) -> frozenset[int]:
        seen = {s}
        todo = [s]
        eps = self.nfa.eps
        while todo:
            for t in eps[todo.pop()]:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        nfa = self.nfa
        c = frozenset(x for x in seen if nfa.byte_edges[x] or nfa.calls[x] or x in self.final_states)
        self._closure[s] = c
        return c

    def state_of(self, states: frozenset[int]) -> int:
        d = self.index.get(states)
        if d is not None:
            return d
        d = len(self.sets)
        if d >= len(self.is_final):
            self._grow()
        self.sets.append(states)
        self.index[states] = d
        self.is_final[d] = not states.isdisjoint(self.final_states)
        self.flags[d] = FLAG_FINAL if self.is_final[d] else 0
        groups: dict[int, list[int]] = {}
        for s in states:
            for rule, ret in self.nfa.calls[s]:
                groups.setdefault(rule, []).append(ret)
        self.calls.append(tuple((r, -1) for r in groups))
        if groups:
            self.has_calls[d] = True
            self.flags[d] |= FLAG_CALLS
            self.calls[d] = tuple((r, self.state_of(self.closure(tuple(rets)))) for r, rets in groups.items())
        return d

    def _grow(self) -> None:
        cap = len(self.is_final) * 2
        trans = np.full((cap, 256), UNKNOWN, dtype=np.int32)
        trans[: len(self.trans)] = self.trans
        self.trans = trans
        self.is_final = np.concatenate([self.is_final, np.zeros(cap - len(self.is_final), dtype=bool)])
        self.has_calls = np.concatenate([self.has_calls, np.zeros(cap - len(self.has_calls), dtype=bool)])
        self.has_loop = np.concatenate([self.has_loop, np.full(cap - len(self.has_loop), -1, dtype=np.int8)])
        self.flags = np.concatenate([self.flags, np.zeros(cap - len(self.flags), dtype=np.uint8)])
        self.slice_of = np.concatenate([self.slice_of, np.full(cap - len(self.slice_of), -1, dtype=np.int16)])

    def prepare(self, d: int) -> None:
        """Fill row d and its slice id (called by the C walk on an unknown row)."""
        if self.trans[d, 0] == UNKNOWN:
            self.compute_row(d)

    def _target(self, key: frozenset[int]) -> int:
        t = self._targets.get(key)
        if t is None:
            t = self.state_of(self.closure(key))
            self._targets[key] = t
        return t

    def compute_row(self, d: int) -> None:
        """Fill trans[d, :] for all 256 bytes (one closure per distinct target set), then the
        state's token slice."""
        edges = [e for s in self.sets[d] for e in self.nfa.byte_edges[s]]
        edges.sort()
        row = np.full(256, DEAD, dtype=np.int32)
        if all(edges[k][1] < edges[k + 1][0] for k in range(len(edges) - 1)):
            for lo, hi, t in edges:  # disjoint ranges: one NFA target each
                row[lo : hi + 1] = self._target(frozenset((t,)))
        else:
            self._sweep(edges, row)
        self.trans[d] = row
        if self.slicer is not None:
            in_set = row == d
            if int(in_set.sum()) >= MIN_LOOP_BYTES:
                self.slice_of[d] = self.slicer(in_set)

    def _sweep(self, edges: list[tuple[int, int, int]], row: np.ndarray) -> None:
        """Overlapping ranges: a sweep over range boundaries with the active target set."""
        events: list[tuple[int, int, int]] = []  # (byte, +1 start / -1 end, target)
        for lo, hi, t in edges:
            events.append((lo, 1, t))
            events.append((hi + 1, -1, t))
        events.sort()
        active: dict[int, int] = {}
        i, n = 0, len(events)
        while i < n:
            b = events[i][0]
            while i < n and events[i][0] == b:
                _, delta, t = events[i]
                count = active.get(t, 0) + delta
                if count:
                    active[t] = count
                else:
                    del active[t]
                i += 1
            if active and b < 256:
                row[b : events[i][0] if i < n else 256] = self._target(frozenset(active))

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
