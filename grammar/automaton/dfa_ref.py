"""The Python reference of the C row builder (grammar/automaton/_dfa.c): the same methods, the same automaton.

Used where the C extension is not built, and by the tests that check the C builder against it
state for state (tests/grammar/test_dfa_c.py). A DFA state is the epsilon closure of a set of
NFA states (kept to those with byte edges, calls or a rule end); states get ids in the order
they are first reached, the same order as in C. The builder writes into its LazyDfa's tables
(grammar/automaton/dfa.py), fetching them from the LazyDfa on each call since `_grow` replaces them.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from grammar.automaton.constants import (DEAD, FLAG_CALLS, FLAG_FINAL, MAX_CLOSED_NODES, MAX_CLOSED_ROWS,
                                         MAX_CLOSURE_ROWS, MAX_SEQS, MIN_DOMINANT_BYTES, NO_SLICE, SLICE_UNKNOWN,
                                         NOT_WS_RUN, UNBOUNDED, UNKNOWN, WS_MAX_RUN)  # fmt: skip

Seqs = tuple[tuple[tuple[int, int], ...], ...]


class Builder:
    """Builder(byte_edges, eps, calls, rule_final, has_slicer, max_absorb): DFA rows of one NFA;
    `bind(dfa)` once, then the LazyDfa calls the other methods (see grammar/automaton/_dfa.c)."""

    def __init__(self, byte_edges: list, eps: list, calls: list, rule_final: list[int], has_slicer: bool,
                 max_absorb: int) -> None:
        if not len(byte_edges) == len(eps) == len(calls):
            raise ValueError("NFA lists differ in length")
        self.edges, self.eps, self.nfa_calls = byte_edges, eps, calls
        self.finals = frozenset(rule_final)
        self.has_slicer = has_slicer
        self.max_absorb = max_absorb
        self.dfa: Any = None
        self.sets: list[frozenset[int]] = []  # dstate -> its NFA states
        self.index: dict[frozenset[int], int] = {}
        self._closure: dict[int, frozenset[int]] = {}
        self._targets: dict[frozenset[int], int] = {}
        self._singles: dict[int, int] = {}  # NFA state -> dstate of its closure
        self._call_rets: dict[int, list[tuple[int, list[int]]]] = {}  # dstate -> (rule, NFA return states)
        self._slice_next: dict[int, tuple[int, int]] = {}  # dstate -> (slice id, target)
        self._canon: list[np.ndarray] = []  # set_slices: bool [256] byte sets
        self._utf8: tuple[int, int, bool] = (-1, -1, False)  # set_utf8: (ascii slice, text slice, runs)
        self._seqs: Seqs = ()
        self._utf8_checked: set[int] = set()
        self._utf8_pairs: dict[tuple[int, int], bool] = {}
        self._closed: dict[int, bool] = {}  # text_closed, remembered
        self._closure_rows = 0  # rows text_closed's searches built
        self._text_pos: list[list[int]] | None = None  # text_closed's alphabet (see _text_alphabet)
        self._ws_runs: dict[int, int] = {}  # dstate -> ws_run
        self._ws_inner: set[int] = set()  # a gap's states after its first: warm builds no row for them

    # ---- configuration ----

    def bind(self, dfa: Any) -> None:
        if self.dfa is not None and self.dfa is not dfa:
            raise ValueError("Builder used with another LazyDfa")
        self.dfa = dfa

    def set_utf8(self, ascii_slice: int, text_slice: int, runs: bool, seqs: Seqs) -> None:
        self._utf8 = (ascii_slice, text_slice, bool(runs))
        self._seqs = seqs
        self._text_pos = None
        self._closed.clear()  # (found for other text)

    def set_slices(self, sets: bytes) -> None:
        if len(sets) % 32:
            raise ValueError("sets are 32 bytes each")
        bits = np.unpackbits(np.frombuffer(sets, dtype=np.uint8), bitorder="little").astype(bool)
        self._canon = [bits[k * 256 : (k + 1) * 256] for k in range(len(sets) // 32)]

    def num_states(self) -> int:
        return len(self.sets)

    def nfa_states(self, d: int) -> tuple[int, ...]:
        self._check(d)
        return tuple(sorted(self.sets[d]))

    def _bound(self, dfa: Any) -> Any:
        if self.dfa is not dfa:
            self.bind(dfa)
        return dfa

    def _check(self, d: int) -> None:
        if not 0 <= d < len(self.sets):
            raise IndexError("DFA state out of range")

    # ---- states ----

    def intern_closure(self, dfa: Any, states: tuple[int, ...] | list[int]) -> int:
        self._bound(dfa)
        for s in states:
            if not 0 <= s < len(self.eps):
                raise IndexError("NFA state out of range")
        return self._state_of(self._closure_of(states))

    def _closure_of(self, states: tuple[int, ...] | list[int] | frozenset[int]) -> frozenset[int]:
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
        eps, edges, calls, finals, known = self.eps, self.edges, self.nfa_calls, self.finals, self._closure
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

    def _state_of(self, states: frozenset[int]) -> int:
        d = self.index.get(states)
        if d is not None:
            return d
        dfa = self.dfa
        d = len(self.sets)
        if d >= len(dfa.is_final):
            dfa._grow()
        dfa.trans[d] = UNKNOWN
        self.sets.append(states)
        self.index[states] = d
        final = not states.isdisjoint(self.finals)
        dfa.is_final[d] = final
        dfa.flags[d] = FLAG_FINAL if final else 0
        groups: dict[int, list[int]] = {}
        for s in sorted(states):  # sorted: the C builder groups in the same order
            for rule, ret in self.nfa_calls[s]:
                groups.setdefault(rule, []).append(ret)
        if groups:
            dfa.has_calls[d] = True
            dfa.flags[d] |= FLAG_CALLS
            self._call_rets[d] = list(groups.items())
        return d

    def call_groups(self, d: int) -> list[tuple[int, list[int]]]:
        self._check(d)
        return self._call_rets.get(d, [])

    def _target(self, key: frozenset[int]) -> int:
        t = self._targets.get(key)
        if t is None:
            t = self._targets[key] = self._state_of(self._closure_of(key))
        return t

    def _single_target(self, s: int) -> int:
        t = self._singles.get(s)
        if t is None:
            c = self._closure.get(s)
            t = self._singles[s] = self._state_of(c if c is not None else self._single_closure(s))
        return t

    # ---- rows ----

    def row(self, dfa: Any, d: int) -> bool:
        """Fill row d if unknown; True when the tables grew."""
        self._check(d)
        cap = len(self._bound(dfa).is_final)
        if dfa.trans[d, 0] == UNKNOWN:
            self._build_row(d)
        return len(dfa.is_final) != cap

    def prepare(self, dfa: Any, d: int) -> bool:
        """The row, the slice id and the absorb length of d; True when the tables grew."""
        self._check(d)
        cap = len(self._bound(dfa).is_final)
        if dfa.trans[d, 0] == UNKNOWN:
            self._build_row(d)
        if self.dfa.slice_of[d] == SLICE_UNKNOWN:
            self._compute_absorb(d)
        return len(self.dfa.is_final) != cap

    def warm(self, dfa: Any, max_rows: int, budget_s: float) -> int:
        """Up to `max_rows` unknown rows in state order, for about `budget_s` seconds."""
        self._bound(dfa)
        end = time.perf_counter() + budget_s
        built = d = 0
        while d < len(self.sets) and built < max_rows:
            if self.dfa.trans[d, 0] == UNKNOWN and d not in self._ws_inner:
                self._build_row(d)
                built += 1
                if built % 8 == 0 and time.perf_counter() > end:
                    break
            d += 1
        return built

    def _build_row(self, d: int) -> None:
        """trans[d, :] for all 256 bytes (one closure per distinct target set), and dominant[d]."""
        states = self.sets[d]
        if len(states) == 1:
            edges = self.edges[next(iter(states))]
        else:
            edges = [e for s in states for e in self.edges[s]]
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
        row = self.dfa.trans[d]  # fetched after the targets were made, which may have grown the tables
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
                self.dfa.dominant[d] = best
        # a bounded whitespace gap's state (the C walk counts its whitespace): the next count's state
        # is one the walk never steps into, so warm leaves its row (and the rest of the chain) unbuilt
        wt = int(row[32])
        if wt >= 0 and wt != d and row[9] == wt and row[10] == wt:
            if self._ws_run(d) > 0 and self._ws_run(wt) > 0:
                self._ws_inner.add(wt)

    # ---- bounded whitespace gaps (grammar/automaton/_dfa.c ws_run_of) ----

    def ws_run(self, dfa: Any, d: int) -> int:
        """The whitespace bytes d still takes when d is closure(c) of a bounded gap's chain member c
        (its row the gap's other states' but for tab, newline and space), else NOT_WS_RUN."""
        self._bound(dfa)
        self._check(d)
        return self._ws_run(d)

    def _ws_run(self, d: int) -> int:
        r = self._ws_runs.get(d)
        if r is None:
            r = self._ws_runs[d] = self._find_ws_run(d)
        return r

    def _find_ws_run(self, d: int) -> int:
        """As _dfa.c ws_run_of: each member (an NFA state of d with an edge on a whitespace byte) has
        byte edges on exactly tab, newline and space (to each of its targets), no call, no rule end;
        each target is a chain member or a chain's end with one exit, all with the same count left;
        the other NFA states of d are exactly the closures of those exits."""
        states = self.sets[d]
        members = [s for s in sorted(states) if any(lo <= c <= hi for lo, hi, _ in self.edges[s] for c in (9, 10, 32))]
        if not members:
            return NOT_WS_RUN
        targets: list[int] = []
        for c in members:
            if self.nfa_calls[c] or c in self.finals:
                return NOT_WS_RUN
            taken: dict[int, set[int]] = {}
            for lo, hi, t in self.edges[c]:
                taken.setdefault(t, set()).update(range(lo, hi + 1))
            if len(taken) > 64 or any(v != {9, 10, 32} for v in taken.values()):
                return NOT_WS_RUN
            targets += [t for t in taken if t not in targets]
        left, exits = -1, []
        for m in targets:
            x = self._single_exit(m)
            if x < 0:
                return NOT_WS_RUN
            n = 0
            if self.edges[m]:
                n, x = self._ws_chain(m)
                if n <= 0:
                    return NOT_WS_RUN
            if left >= 0 and n != left:
                return NOT_WS_RUN
            left = n
            exits.append(x)
        if left + 1 > WS_MAX_RUN:
            return NOT_WS_RUN
        union = self._closure_of(exits)
        if not union or union != states - frozenset(members):
            return NOT_WS_RUN
        return left + 1

    def _single_exit(self, s: int) -> int:
        eps = self.eps[s]
        return eps[0] if len(eps) == 1 and not self.nfa_calls[s] and s not in self.finals else -1

    def _ws_chain(self, s: int) -> tuple[int, int]:
        """(whitespace bytes s takes along its chain, its exit), or (0, -1) when s is no chain member:
        byte edges on exactly tab, newline and space to one next state, one epsilon edge (the exit),
        no call, no rule end; the next state a member with the same exit, or the chain's end."""
        x = self._single_exit(s)
        n, cur = 0, s
        while x >= 0 and self._single_exit(cur) == x:
            edges = self.edges[cur]
            if not edges:
                return (n, x) if n else (0, -1)
            targets = {t for _, _, t in edges}
            taken = {c for lo, hi, _ in edges for c in range(lo, hi + 1)}
            if len(targets) != 1 or taken != {9, 10, 32} or n == WS_MAX_RUN:
                break
            nxt = targets.pop()
            if nxt == cur:
                break
            n, cur = n + 1, nxt
        return 0, -1

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

    # ---- slices ----

    def slice_step(self, dfa: Any, d: int) -> tuple[int, int]:
        """(slice id, target): a canonical slice whose bytes all lead from d to its dominant target."""
        self._check(d)
        self._bound(dfa)
        hit = self._slice_next.get(d)
        if hit is not None:
            return hit
        if self.dfa.trans[d, 0] == UNKNOWN:
            self._build_row(d)
        out = (NO_SLICE, DEAD)
        target = int(self.dfa.dominant[d])
        if self.has_slicer and target >= 0:
            in_set = self.dfa.trans[d] == target
            sid = next((k for k, c in enumerate(self._canon) if not (c & ~in_set).any()), NO_SLICE)
            out = (sid, target)
        self._slice_next[d] = out
        return out

    def _compute_absorb(self, d: int) -> None:
        """Every string of the slice's bytes up to `absorb[d]` long is accepted from d: follow
        the single target while it keeps the same slice (a loop: unbounded)."""
        sid, nxt = self.slice_step(self.dfa, d)
        steps = 0
        if sid >= 0:
            seen = {d}
            cur = nxt
            steps = 1
            while steps < self.max_absorb:
                if cur in seen:
                    steps = UNBOUNDED
                    break
                if self.dfa.slice_of[cur] == sid:  # already known
                    steps = min(UNBOUNDED, steps + int(self.dfa.absorb[cur]))
                    break
                csid, cnxt = self.slice_step(self.dfa, cur)
                if csid != sid:
                    break
                seen.add(cur)
                cur = cnxt
                steps += 1
        self.dfa.absorb[d] = steps
        self.dfa.slice_of[d] = sid if steps else NO_SLICE

    # ---- UTF-8 characters ----

    def upgrade_to_utf8(self, dfa: Any, d: int) -> int:
        """The slice of d, first widened to the text slice when every complete UTF-8 character takes
        d where an ASCII text byte does (a loop, or each step of a bounded run with `runs`)."""
        self._check(d)
        self._bound(dfa)
        if self.dfa.slice_of[d] == SLICE_UNKNOWN:
            self.prepare(dfa, d)
        sid = int(self.dfa.slice_of[d])
        ascii_id, text_id, runs = self._utf8
        if ascii_id < 0 or sid != ascii_id or d in self._utf8_checked:
            return sid
        self._utf8_checked.add(d)
        nxt = self.slice_step(dfa, d)[1]
        absorb = int(self.dfa.absorb[d])
        if absorb == UNBOUNDED:
            if nxt != d and self.upgrade_to_utf8(dfa, nxt) != text_id:
                return sid
            if self._leads_to(d, nxt, self._seqs):
                self.dfa.slice_of[d] = text_id
        elif runs:  # a bounded run: a character of k bytes uses one step, not k
            cur = d
            for _ in range(absorb):
                nxt = self.slice_step(dfa, cur)[1]
                ok = self._utf8_pairs.get((cur, nxt))
                if ok is None:
                    ok = self._utf8_pairs[(cur, nxt)] = self._leads_to(cur, nxt, self._seqs)
                if not ok:
                    return sid
                cur = nxt
            self.dfa.slice_of[d] = text_id
        return int(self.dfa.slice_of[d])

    # ---- states closed on string text ----

    def _text_alphabet(self) -> list[list[int]] | None:
        """Per character position (0 between characters, 1 + 3 q + j - 1 after j bytes of a character
        of sequence family q), per byte: the position after it, or -1 when it is no step of a text
        character there. None without an ASCII text slice."""
        if self._text_pos is None:
            ascii_id = self._utf8[0]
            if not 0 <= ascii_id < len(self._canon):
                return None
            pos = [[-1] * 256 for _ in range(1 + 3 * MAX_SEQS)]
            for c in range(128):
                if self._canon[ascii_id][c]:
                    pos[0][c] = 0
            for q, seq in enumerate(self._seqs):
                for j, (lo, hi) in enumerate(seq):
                    src = 0 if j == 0 else 1 + 3 * q + j - 1
                    dst = 0 if j + 1 == len(seq) else 1 + 3 * q + j
                    for c in range(lo, hi + 1):
                        pos[src][c] = dst
            self._text_pos = pos
        return self._text_pos

    def closed_known(self, d: int) -> bool:
        """True when d is known closed on text (a search said so), without searching."""
        self._check(d)
        return self._closed.get(d) is True

    def text_closed(self, dfa: Any, d: int) -> bool:
        """True when every string-text character (an ASCII text byte or a whole UTF-8 character)
        leads from d to a live state closed on text too: every token made only of text is then
        consumed from d (an open object's key start, a string with an unanchored pattern). A
        depth-first search of the (state, character position) pairs text reaches, rows built on
        the way, in C's order; past MAX_CLOSED_NODES pairs or MAX_CLOSED_ROWS rows built the answer
        is no, and once all searches built MAX_CLOSURE_ROWS rows, so for every state not known.
        A step of a run on text (`_text_run`) is not searched: not closed. Remembered: all states
        between characters when closed or given up, else those on the path to the dead step."""
        self._check(d)
        self._bound(dfa)
        known = self._closed.get(d)
        if known is not None:
            return known
        if self._closure_rows > MAX_CLOSURE_ROWS:  # (searches spent their rows)
            self._closed[d] = False
            return False
        alphabet = self._text_alphabet()
        if alphabet is None:
            return False
        if self._text_run(d, alphabet[0]):
            self._closed[d] = False
            return False
        seen = {(d, 0)}
        between = [d]
        path = [[d, 0, 0]]  # state, position, next byte to try
        closed, gave_up = True, False
        rows = 0
        while path:
            f = path[-1]
            x, p = f[0], f[1]
            if self.dfa.trans[x, 0] == UNKNOWN:
                rows += 1
                self._closure_rows += 1
                if rows > MAX_CLOSED_ROWS or self._closure_rows > MAX_CLOSURE_ROWS:
                    closed, gave_up = False, True
                    break
                self._build_row(x)
            step = alphabet[p]
            c = f[2]
            row = self.dfa.trans[x]
            if c == 0 and 0 <= row[32] != x and row[9] == row[10] == row[32]:
                # at what may be a whitespace gap, first a dead step from here, before any deeper search
                # (a gap is 25 states deep)
                if any(step[b] >= 0 and (row[b] < 0 or (step[b] == 0 and self._closed.get(int(row[b])) is False))
                       for b in range(256)):
                    closed = False
                    break
            while c < 256 and step[c] < 0:
                c += 1
            if c == 256:
                path.pop()
                continue
            f[2] = c + 1
            q = step[c]
            t = int(self.dfa.trans[x, c])
            if t < 0 or (q == 0 and self._closed.get(t) is False):
                closed = False
                break
            if q == 0 and self._closed.get(t):
                continue
            if (t, q) in seen:
                continue
            seen.add((t, q))
            if len(seen) > MAX_CLOSED_NODES:
                closed, gave_up = False, True
                break
            if q == 0:
                between.append(t)
            path.append([t, q, 0])
        if closed or gave_up:  # (given up: none reached is said closed, so none searches again)
            for x in between:
                self._closed[x] = closed
        else:
            for x, p, _ in path:
                if p == 0:
                    self._closed[x] = False
        return closed

    def _text_step(self, d: int, ascii_to: list[int]) -> int:
        """The one state every ASCII text byte leads to from d (row built here), or DEAD."""
        if self.dfa.trans[d, 0] == UNKNOWN:
            self._build_row(d)
        targets = {int(self.dfa.trans[d, c]) for c in range(128) if ascii_to[c] == 0}
        t = targets.pop() if len(targets) == 1 else DEAD
        return DEAD if t < 0 else t

    def _text_run(self, d: int, ascii_to: list[int]) -> bool:
        """True when d is a step of a run on text: every ASCII text byte leads to one other state,
        and every one from there to one state again, not itself (a maxLength or minLength string).
        Its search would build a row per character up to MAX_CLOSED_ROWS and give up; the mask
        walk takes a run's tokens by its own shortcut. Rows of d and the next state built."""
        t = self._text_step(d, ascii_to)
        if t < 0 or t == d:
            return False
        t2 = self._text_step(t, ascii_to)
        return t2 >= 0 and t2 != t

    def close_text(self, dfa: Any, budget_s: float) -> int:
        """text_closed of every state in turn (rows built on the way; not a bounded whitespace gap's
        states after its first, which warm left unbuilt) until `budget_s` passed (the clock read
        before every 16 states, as in C); returns how many were closed."""
        self._bound(dfa)
        end = time.perf_counter() + budget_s
        closed = d = 0
        while d < len(self.sets):
            if d % 16 == 0 and time.perf_counter() > end:
                break
            if d not in self._ws_inner:  # (a gap's later states: their rows would build the whole chain)
                closed += self.text_closed(dfa, d)
            d += 1
        return closed

    def upgrade_text(self, dfa: Any, budget_s: float) -> int:
        """upgrade_to_utf8 of every state made before the call whose row is built and takes the
        ASCII text bytes 'a', ' ', '~' and '0' to one live state (a string's body, a step of a
        bounded run), until `budget_s` passed (the clock read before every 16 states, as in C);
        returns how many were widened to the text slice."""
        self._bound(dfa)
        end = time.perf_counter() + budget_s
        widened = 0
        text_id = self._utf8[1] if self._utf8[0] >= 0 else None
        for d in range(len(self.sets)):
            if d % 16 == 0 and time.perf_counter() > end:
                break
            row = self.dfa.trans[d]  # (again each time: an upgrade may grow the tables)
            t = int(row[ord("a")])
            if row[0] == UNKNOWN or t < 0 or row[ord(" ")] != t or row[ord("~")] != t or row[ord("0")] != t:
                continue
            widened += self.upgrade_to_utf8(dfa, d) == text_id
        return widened

    def utf8_to(self, dfa: Any, d: int, target: int, seqs: Seqs) -> bool:
        """True when every sequence of byte ranges leads from d to `target` alone (uncached)."""
        self._check(d)
        self._bound(dfa)
        return self._leads_to(d, target, seqs)

    def _leads_to(self, d: int, target: int, seqs: Seqs) -> bool:
        """Followed on the NFA states' sets, as rows would take them, making no DFA state and no
        row (as in C: a bounded string's positions each have some 15 states inside their
        characters, whose rows the check made, and the walks rarely visit them)."""
        goal = self.sets[target]
        for seq in seqs:
            cur = [self.sets[d]]
            for lo, hi in seq:
                nxt: list[frozenset[int]] = []
                for states in cur:
                    got = self._range_sets(states, lo, hi)
                    if got is None:
                        return False
                    nxt += [x for x in got if x not in nxt]
                cur = nxt
            if cur != [goal]:
                return False
        return True

    def _range_sets(self, states: frozenset[int], lo: int, hi: int) -> list[frozenset[int]] | None:
        """The closed sets of NFA states the bytes lo..hi lead to from `states` (None: a byte there
        leads nowhere), the sets a row would make DFA states of."""
        edges = [e for s in states for e in self.edges[s] if e[0] <= hi and e[1] >= lo]
        out: list[frozenset[int]] = []
        a = lo
        while a <= hi:
            active = [t for elo, ehi, t in edges if elo <= a <= ehi]
            if not active:
                return None
            end = min([hi + 1] + [elo for elo, _, _ in edges if elo > a] + [ehi + 1 for elo, ehi, _ in edges if elo <= a <= ehi])
            got = self._closure_of(active)
            if got not in out:
                out.append(got)
            a = end
        return out
