"""The lazily determinized automaton: DFA states are epsilon-closed sets of NFA states of one rule."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from grammar.automaton.nfa import Nfa
from grammar.masks.slices import UTF8_SEQUENCES

try:
    from grammar.automaton import _dfa
except ImportError:  # built by setup.py; without a C compiler rows are built in Python below
    _dfa = None

UNKNOWN = -2
DEAD = -1
FLAG_CALLS = 1
FLAG_FINAL = 2
MIN_DOMINANT_BYTES = 26  # a state sending fewer bytes to one target gets no token slice (26: [a-z], the smallest)
NO_SLICE = -1
SLICE_UNKNOWN = -2
UNBOUNDED = 1 << 30  # absorb length of a state looping on its slice
MAX_FIRST_ROWS = 1 << 14  # first table size: the NFA's state count rounded up to a power of two, capped


class LazyDfa:
    """Transition table grown on demand; rows are filled the first time a state is stepped from.

    Owned by one compiled grammar; read by its matchers and its mask computation under the
    grammar's lock. Rows are built by the C extension grammar/_dfa.c when it is built (`use_c`
    None), else by the Python code below; both give the same state ids, rows and slices.
    """

    def __init__(self, nfa: Nfa, slicer: Callable[[np.ndarray], int] | None = None, max_absorb: int = 64,
                 use_c: bool | None = None, slice_sets: bytes | None = None) -> None:
        self.nfa = nfa
        self.slicer = slicer  # byte set -> vocabulary slice id (-1: none)
        self.max_absorb = max_absorb  # longest token: absorb lengths are only needed up to it
        self._utf8_upgrade: tuple[int, int] | None = None  # (ASCII slice, same + UTF-8 slice) ids
        self._utf8_runs = False
        self.sets: list[frozenset[int]] = []
        self.index: dict[frozenset[int], int] = {}
        cap = 64
        while cap < min(len(nfa.eps), MAX_FIRST_ROWS):
            cap *= 2
        # [cap, 256]: uninitialized memory (pages are touched only when used); a row is set to
        # UNKNOWN when its state is made, so growing copies the old rows and fills nothing.
        self.trans = np.empty((cap, 256), dtype=np.int32)
        self.is_final = np.zeros(cap, dtype=bool)  # [cap]
        self.has_calls = np.zeros(cap, dtype=bool)  # [cap]
        self.loops: dict[int, np.ndarray | None] = {}  # dstate -> bytes looping back to it
        self.has_loop = np.full(cap, -1, dtype=np.int8)  # [cap]: -1 unknown, 0 / 1
        self.flags = np.zeros(cap, dtype=np.uint8)  # [cap] FLAG_CALLS | FLAG_FINAL (read by the C walk)
        # Token slices (read by the C walk; filled by `prepare`): the slice of the byte set that
        # sends a state to one target, and how many bytes of it the state surely absorbs.
        self.slice_of = np.full(cap, SLICE_UNKNOWN, dtype=np.int16)  # [cap]
        self.absorb = np.zeros(cap, dtype=np.int32)  # [cap]
        self.dominant = np.full(cap, DEAD, dtype=np.int32)  # [cap] target of at least MIN_DOMINANT_BYTES bytes
        self._slice_next: dict[int, tuple[int, int]] = {}  # dstate -> (slice id, target)
        self._utf8_checked: set[int] = set()
        self._utf8_pairs: dict[tuple[int, int], bool] = {}  # (state, next) -> characters step there
        self._calls: dict[int, tuple[tuple[int, int], ...]] = {}  # dstate -> (rule, return dstate) pairs
        self._call_rets: dict[int, dict[int, list[int]]] = {}  # dstate -> rule -> NFA return states
        self.final_states = frozenset(nfa.rule_final)
        self._closure: dict[int, frozenset[int]] = {}
        self._targets: dict[frozenset[int], int] = {}
        self._singles: dict[int, int] = {}  # NFA state -> dstate of its closure
        if use_c is None:
            use_c = _dfa is not None
        elif use_c and _dfa is None:
            raise RuntimeError("grammar._dfa is not built (pip install -e . with a C compiler)")
        self.builder = None
        if use_c:
            self.builder = _dfa.Builder(nfa.byte_edges, nfa.eps, nfa.calls, nfa.rule_final, slicer is not None, max_absorb)
            self.builder.bind(self)
            self.builder.set_utf8(-1, -1, False, UTF8_SEQUENCES)
            if slice_sets is not None:  # the slicer's answers, computed in C (no Python call per byte set)
                self.builder.set_slices(slice_sets)
        self.rule_start = [self._state_of_closure((s,)) for s in nfa.rule_start]

    @property
    def utf8_upgrade(self) -> tuple[int, int] | None:
        """(ASCII slice, same + UTF-8 slice) ids for `upgrade_to_utf8`; None: no upgrade."""
        return self._utf8_upgrade

    @utf8_upgrade.setter
    def utf8_upgrade(self, ids: tuple[int, int] | None) -> None:
        self._utf8_upgrade = ids
        self._tell_builder()

    @property
    def utf8_runs(self) -> bool:
        """Also check bounded runs (set when the vocabulary has many non-ASCII tokens)."""
        return self._utf8_runs

    @utf8_runs.setter
    def utf8_runs(self, on: bool) -> None:
        self._utf8_runs = on
        self._tell_builder()

    def _tell_builder(self) -> None:
        if self.builder is not None:
            ascii_id, text_id = self._utf8_upgrade if self._utf8_upgrade is not None else (-1, -1)
            self.builder.set_utf8(ascii_id, text_id, self._utf8_runs, UTF8_SEQUENCES)

    @property
    def num_states(self) -> int:
        return self.builder.num_states() if self.builder is not None else len(self.sets)

    def nfa_states(self, d: int) -> tuple[int, ...]:
        """The sorted NFA states of DFA state d."""
        return self.builder.nfa_states(d) if self.builder is not None else tuple(sorted(self.sets[d]))

    def _state_of_closure(self, states: tuple[int, ...] | list[int]) -> int:
        if self.builder is not None:
            return self.builder.intern_closure(self, states)
        return self.state_of(self.closure(states))

    def _slice_bytes(self, in_set: bytes) -> int:
        """The slicer on a byte set given as 256 0/1 bytes (called by grammar/_dfa.c)."""
        return self.slicer(np.frombuffer(in_set, dtype=bool))

    def closure(self, states: tuple[int, ...] | frozenset[int]) -> frozenset[int]:
        out: set[int] = set()
        for s in states:
            c = self._closure.get(s)
            if c is None:
                c = self._single_closure(s)
            out |= c
        return frozenset(out)

    def _single_closure(self, s: int) -> frozenset[int]:
        """Epsilon closure of one NFA state, kept to states with edges, calls or a rule end;
        closures already known for states on the way are taken whole."""
        nfa = self.nfa
        eps, edges, calls, finals, known = nfa.eps, nfa.byte_edges, nfa.calls, self.final_states, self._closure
        out: set[int] = set()
        seen = {s}
        todo = [s]
        while todo:
            x = todo.pop()
            c = known.get(x) if x != s else None
            if c is not None:
                out |= c
                continue
            if edges[x] or calls[x] or x in finals:
                out.add(x)
            for t in eps[x]:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        c = frozenset(out)
        known[s] = c
        return c

    def state_of(self, states: frozenset[int]) -> int:
        d = self.index.get(states)
        if d is not None:
            return d
        d = len(self.sets)
        if d >= len(self.is_final):
            self._grow()
        self.trans[d] = UNKNOWN
        self.sets.append(states)
        self.index[states] = d
        self.is_final[d] = not states.isdisjoint(self.final_states)
        self.flags[d] = FLAG_FINAL if self.is_final[d] else 0
        groups: dict[int, list[int]] = {}
        for s in sorted(states):  # sorted: the C path groups in the same order
            for rule, ret in self.nfa.calls[s]:
                groups.setdefault(rule, []).append(ret)
        if groups:
            self.has_calls[d] = True
            self.flags[d] |= FLAG_CALLS
            self._call_rets[d] = groups
        return d

    def calls(self, d: int) -> tuple[tuple[int, int], ...]:
        """(rule, return dstate) pairs of d; return states are built on first use (a long chain
        of calls, e.g. a hoisted repeat, would otherwise be determinized all at once)."""
        out = self._calls.get(d)
        if out is None:
            if not self.has_calls[d]:
                return ()
            if self.builder is not None:
                groups = self.builder.call_groups(d)
            else:
                groups = list(self._call_rets.pop(d).items())
            out = tuple((r, self._state_of_closure(rets)) for r, rets in groups)
            self._calls[d] = out
        return out

    def _grow(self) -> None:
        cap = len(self.is_final) * 2
        trans = np.empty((cap, 256), dtype=np.int32)
        trans[: len(self.trans)] = self.trans
        self.trans = trans
        self.is_final = np.concatenate([self.is_final, np.zeros(cap - len(self.is_final), dtype=bool)])
        self.has_calls = np.concatenate([self.has_calls, np.zeros(cap - len(self.has_calls), dtype=bool)])
        self.has_loop = np.concatenate([self.has_loop, np.full(cap - len(self.has_loop), -1, dtype=np.int8)])
        self.flags = np.concatenate([self.flags, np.zeros(cap - len(self.flags), dtype=np.uint8)])
        self.slice_of = np.concatenate([self.slice_of, np.full(cap - len(self.slice_of), SLICE_UNKNOWN, dtype=np.int16)])
        self.absorb = np.concatenate([self.absorb, np.zeros(cap - len(self.absorb), dtype=np.int32)])
        self.dominant = np.concatenate([self.dominant, np.full(cap - len(self.dominant), DEAD, dtype=np.int32)])

    def prepare(self, d: int) -> None:
        """Fill row d, its slice id and absorb length (called by the C walk when unknown)."""
        if self.builder is not None:
            self.builder.prepare(self, d)
            return
        if self.trans[d, 0] == UNKNOWN:
            self.compute_row(d)
        if self.slice_of[d] == SLICE_UNKNOWN:
            self._compute_absorb(d)

    def _slice_step(self, d: int) -> tuple[int, int]:
        """(slice id, target): a vocabulary slice whose bytes all lead from d to one target."""
        if self.builder is not None:
            return self.builder.slice_step(self, d)
        hit = self._slice_next.get(d)
        if hit is not None:
            return hit
        if self.trans[d, 0] == UNKNOWN:
            self.compute_row(d)
        out = (NO_SLICE, DEAD)
        target = int(self.dominant[d])
        if self.slicer is not None and target >= 0:
            out = (self.slicer(self.trans[d] == target), target)
        self._slice_next[d] = out
        return out

    def _compute_absorb(self, d: int) -> None:
        """Every string of the slice's bytes up to `absorb[d]` long is accepted from d: follow
        the single target while it keeps the same slice (a loop: unbounded)."""
        sid, nxt = self._slice_step(d)
        steps = 0
        if sid >= 0:
            seen = {d}
            cur = nxt
            steps = 1
            while steps < self.max_absorb:
                if cur in seen:
                    steps = UNBOUNDED
                    break
                if self.slice_of[cur] == sid:  # already known
                    steps = min(UNBOUNDED, steps + int(self.absorb[cur]))
                    break
                csid, cnxt = self._slice_step(cur)
                if csid != sid:
                    break
                seen.add(cur)
                cur = cnxt
                steps += 1
        self.absorb[d] = steps
        self.slice_of[d] = sid if steps else NO_SLICE

    def upgrade_to_utf8(self, d: int) -> int:
        """The slice of d, first widened to string text with UTF-8 characters when every complete
        character takes d where a text byte does (a loop, or each step of a bounded run when
        `utf8_runs`: many non-ASCII tokens). Only worth its rows for a state a mask starts from,
        so the walk's inner states keep the ASCII slice. The C builder has the same steps."""
        if self.builder is not None:
            return self.builder.upgrade_to_utf8(self, d)
        sid = self.slice_id(d)
        if self.utf8_upgrade is None or sid != self.utf8_upgrade[0] or d in self._utf8_checked:
            return sid
        self._utf8_checked.add(d)
        nxt = self._slice_step(d)[1]
        if self.absorb[d] == UNBOUNDED:
            if nxt != d and self.upgrade_to_utf8(nxt) != self.utf8_upgrade[1]:
                return sid
            if self._utf8_to(d, nxt):
                self.slice_of[d] = self.utf8_upgrade[1]
        elif self.utf8_runs:  # a bounded run: a character of k bytes uses one step, not k
            cur = d
            for _ in range(int(self.absorb[d])):
                nxt = self._slice_step(cur)[1]
                ok = self._utf8_pairs.get((cur, nxt))
                if ok is None:
                    ok = self._utf8_pairs[(cur, nxt)] = self._utf8_to(cur, nxt)
                if not ok:
                    return sid
                cur = nxt
            self.slice_of[d] = self.utf8_upgrade[1]
        return int(self.slice_of[d])

    def slice_id(self, d: int) -> int:
        """The slice of d (computed on first use)."""
        if self.slice_of[d] == SLICE_UNKNOWN:
            self.prepare(d)
        return int(self.slice_of[d])

    def dominant_target(self, d: int) -> int | None:
        """The state that at least MIN_DOMINANT_BYTES bytes lead to from d, if any."""
        if self.trans[d, 0] == UNKNOWN:
            self.compute_row(d)
        t = int(self.dominant[d])
        return t if t >= 0 else None

    def utf8_to(self, d: int, target: int) -> bool:
        """True when every complete multi-byte UTF-8 character leads from d to `target` (cached)."""
        ok = self._utf8_pairs.get((d, target))
        if ok is None:
            ok = self._utf8_pairs[(d, target)] = self._utf8_to(d, target)
        return ok

    def _utf8_to(self, d: int, target: int) -> bool:
        if self.builder is not None:
            return self.builder.utf8_to(self, d, target, UTF8_SEQUENCES)
        for seq in UTF8_SEQUENCES:
            cur = {d}
            for lo, hi in seq:
                nxt: set[int] = set()
                for s in sorted(cur):  # sorted: rows are made in the same order as in C
                    if self.trans[s, 0] == UNKNOWN:
                        self.compute_row(s)
                    vals = self.trans[s, lo : hi + 1]
                    low, high = int(vals.min()), int(vals.max())
                    if low < 0:
                        return False
                    if low == high:
                        nxt.add(low)
                    else:
                        nxt.update(np.unique(vals).tolist())
                cur = nxt
            if cur != {target}:
                return False
        return True

    def _target(self, key: frozenset[int]) -> int:
        t = self._targets.get(key)
        if t is None:
            t = self.state_of(self.closure(key))
            self._targets[key] = t
        return t

    def _single_target(self, s: int) -> int:
        t = self._singles.get(s)
        if t is None:
            c = self._closure.get(s)
            t = self.state_of(c if c is not None else self._single_closure(s))
            self._singles[s] = t
        return t

    def warm(self, max_rows: int, budget_s: float) -> int:
        """Build up to `max_rows` unknown rows in the order their states were made (outward from
        the start states), stopping after about `budget_s` seconds; returns how many. Rows built
        at compile time are rows the first masks' walks need not build. The same count gives the
        same states in C and in Python."""
        if self.builder is not None:
            return self.builder.warm(self, max_rows, budget_s)
        end = time.perf_counter() + budget_s
        built = d = 0
        while d < self.num_states and built < max_rows:
            if self.trans[d, 0] == UNKNOWN:
                self.compute_row(d)
                built += 1
                if built % 8 == 0 and time.perf_counter() > end:
                    break
            d += 1
        return built

    def compute_row(self, d: int) -> None:
        """Fill trans[d, :] for all 256 bytes (one closure per distinct target set)."""
        if self.builder is not None:
            self.builder.row(self, d)
            return
        be = self.nfa.byte_edges
        states = self.sets[d]
        if len(states) == 1:
            edges = be[next(iter(states))]
        else:
            edges = [e for s in states for e in be[s]]
        disjoint = True
        if len(edges) > 1:
            edges = sorted(edges)
            prev = -1
            for lo, hi, _ in edges:
                if lo <= prev:
                    disjoint = False
                    break
                prev = hi
        if disjoint:  # one NFA target per byte (the common case)
            resolved = [(lo, hi, self._single_target(t)) for lo, hi, t in edges]
        else:
            resolved = self._segments(edges)
        row = self.trans[d]  # fetched after state_of, which may have grown the table
        row[:] = DEAD
        counts: dict[int, int] = {}
        for lo, hi, t in resolved:
            if lo == hi:
                row[lo] = t
            else:
                row[lo : hi + 1] = t
            counts[t] = counts.get(t, 0) + hi - lo + 1
        if counts:
            best = max(counts, key=counts.__getitem__)
            if counts[best] >= MIN_DOMINANT_BYTES:
                self.dominant[d] = best

    def _segments(self, edges: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """Overlapping ranges: split at every range boundary; each piece goes to the closure of
        the NFA targets active over it."""
        if len(edges) > 8:
            return self._sweep(edges)
        bounds = sorted({lo for lo, _, _ in edges} | {hi + 1 for _, hi, _ in edges})
        out: list[tuple[int, int, int]] = []
        for a, b in zip(bounds, bounds[1:]):
            active = frozenset(t for lo, hi, t in edges if lo <= a and hi >= b - 1)
            if active:
                out.append((a, b - 1, self._target(active)))
        return out

    def _sweep(self, edges: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """Many ranges: a sweep over the sorted boundaries keeping the active target counts."""
        events: list[tuple[int, int, int]] = []  # (byte, +1 start / -1 end, target)
        for lo, hi, t in edges:
            events.append((lo, 1, t))
            events.append((hi + 1, -1, t))
        events.sort()
        out: list[tuple[int, int, int]] = []
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
                out.append((b, (events[i][0] if i < n else 256) - 1, self._target(frozenset(active))))
        return out

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
