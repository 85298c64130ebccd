"""The thread that makes compiled grammars' masks ahead of use after their compiles returned."""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque

from grammar.compiled import PRECOMPUTE_BUDGET_S, CompiledGrammar

# A grammar's masks made on this thread: this much of its CPU time (the eager compile's row warm-up
# budget as it was when this was set, 1.5 ms, and its precompute budget: the rows are built at
# compile either way, so all of it goes to masks).
WORKER_BUDGET_S = 0.0015 + PRECOMPUTE_BUDGET_S
IDLE_EXIT_S = 2.0  # the thread ends after this long with nothing to do (started again on the next submit)
# At most this many grammars wait (while other threads keep the GIL busy, few steps are made): a
# submit past it ends the oldest waiting one's precompute (its masks are made on use).
MAX_WAITING = 16
# Steps (a state's walk with the rows it builds: ~15-30 us) run between two hand-backs of the GIL
# until this much of the thread's CPU time passed.
YIELD_EVERY_S = 50e-6
# A hand-back sleeps, so that a thread waiting for the GIL surely takes it: with `time.sleep(0)` this
# thread often took it back first, and the waiting thread (a compile, the engine loop) then waited
# a whole switch interval (5 ms) for its next turn, again and again until the budget was spent.
PAUSE_S = 50e-6
# The process is busy when, during a hand-back, its other threads used at least this share of a core
# (one runs Python, or torch's threads run the model: a step would hold them up, or stall their
# barriers), or the hand-back came back BUSY_LATE_S after its sleep (the GIL was held: this thread got
# it back only by the interpreter's forced switch). No step is made then, and the next pause is
# MAX_PAUSE_S at once: every wake while another thread runs Python takes the GIL from it by a forced
# switch, a fill or step of theirs some tens of us late (doubling the pause from PAUSE_S instead made
# ~8 such wakes in a grammar's first 50 ms: back to back, benchmarks/grammar.py's mask p99 was 44 us
# with the worker and 32 without; now 34-35, an ad-hoc replay). A hand-back that finds the others
# idle (waiting for the network, a client) sets it back to PAUSE_S.
BUSY_SHARE = 0.5
BUSY_LATE_S = 1e-3
MAX_PAUSE_S = 50e-3
# A grammar whose precompute found the process busy for this long in all is given up (its masks are
# made on use): a server that decodes without pause would otherwise see the thread wake, take the
# GIL by a forced switch and sleep again every MAX_PAUSE_S for as long as it runs.
GIVE_UP_BUSY_S = 2.0


class PrecomputeWorker:
    """Makes the masks of deferred grammars (CompiledGrammar(deferred=True)) on one thread of its
    own, newest grammar first, each until its budget of this thread's CPU time is spent
    (WORKER_BUDGET_S).

    Owned by a Compiler (grammar/compiler.py), which submits a grammar once its first mask is made.
    One state at a time under the grammar's lock, the GIL handed back every ~50 us of work by a
    short sleep, so a matcher, a later compile or the engine loop waits about that long for it;
    the thread makes progress while they wait (for the network, a client), and while they run it
    makes none and backs off (see BUSY_SHARE).
    """

    def __init__(self, budget_s: float = WORKER_BUDGET_S) -> None:
        self.budget_s = budget_s
        # Weak references: a grammar its owners let go of (the compiler's cache, its matchers) is
        # freed there and then, not held here until a later submit drops it. Held strongly, a
        # queue kept full by a busy process (MAX_WAITING) freed a grammar 16 compiles old inside
        # each submit, in the compile's own time (issue 39: the submit's p50 64 -> 12 us, 200 dev
        # schemas of seed 11, flexible, through benchmarks/grammar.py's steps, an ad-hoc timing).
        self._todo: deque[weakref.ref[CompiledGrammar]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._running = False
        self._thread: threading.Thread | None = None

    def submit(self, grammar: CompiledGrammar) -> None:
        """Queue `grammar`'s precompute (its `precompute_done` is set when it is over)."""
        with self._lock:
            self._todo.append(weakref.ref(grammar))
            if len(self._todo) > MAX_WAITING:
                oldest = self._todo.popleft()()
                if oldest is not None:
                    oldest.end_precompute()
            if self._running and self._thread is not None and self._thread.is_alive():  # (not in a forked child)
                self._wake.notify()
                return
            self._running = True
            self._thread = threading.Thread(target=self._run, name="grammar-precompute", daemon=True)
            self._thread.start()

    def _next(self) -> CompiledGrammar | None:
        """The newest queued grammar still held elsewhere, waiting up to IDLE_EXIT_S; None (the thread
        ends) after that."""
        with self._lock:
            while True:
                if not self._todo:
                    self._wake.wait(IDLE_EXIT_S)
                if not self._todo:
                    self._running = False
                    return None
                grammar = self._todo.pop()()
                if grammar is not None:
                    return grammar

    def _run(self) -> None:
        while (grammar := self._next()) is not None:
            try:
                self.precompute(grammar)
            except Exception:  # noqa: BLE001 - e.g. MemoryError's kin: the same walk, on use, raises to its caller
                grammar.end_precompute()  # its masks are made on use; the thread goes on with the next

    def precompute(self, grammar: CompiledGrammar) -> None:
        """Step `grammar`'s precompute until it is over, this thread spent `budget_s` on it, or the
        process was busy for GIVE_UP_BUSY_S. Steps run only after a hand-back that found the
        process's other threads idle (see BUSY_SHARE)."""
        clock = time.thread_time
        spent = busy_s = 0.0
        pause = PAUSE_S
        while True:
            t0 = time.perf_counter()
            pause, busy = self.hand_back(pause)
            if busy:
                busy_s += time.perf_counter() - t0
                if busy_s > GIVE_UP_BUSY_S:
                    grammar.end_precompute()
                    return
                continue
            start = clock()
            while True:
                if not grammar.precompute_step():
                    return
                now = clock()
                if spent + now - start > self.budget_s:
                    grammar.end_precompute()
                    return
                if now - start > YIELD_EVERY_S:
                    break
            spent += clock() - start

    @staticmethod
    def hand_back(pause: float) -> tuple[float, bool]:
        """Sleep `pause` (the GIL to whoever waits for it). Returns the next pause (MAX_PAUSE_S when
        the process was busy meanwhile, else PAUSE_S) and whether it was busy."""
        t0, others0 = time.perf_counter(), _others_cpu()
        time.sleep(pause)
        wall = time.perf_counter() - t0
        busy = wall - pause > BUSY_LATE_S or _others_cpu() - others0 > BUSY_SHARE * wall
        return (MAX_PAUSE_S if busy else PAUSE_S), busy


def _others_cpu() -> float:
    """CPU seconds used by the process's other threads (the process's less this thread's)."""
    return time.process_time() - time.thread_time()
