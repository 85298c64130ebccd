"""The thread that makes compiled grammars' masks ahead of use after their compiles returned."""

from __future__ import annotations

import threading
import time
from collections import deque

from grammar.compiled import PRECOMPUTE_BUDGET_S, WARM_BUDGET_S, CompiledGrammar

IDLE_EXIT_S = 2.0  # the thread ends after this long with nothing to do (started again on the next submit)
# Steps (a state's walk with the rows it builds: ~15-30 us) run between two hand-backs of the GIL
# until this much of the thread's CPU time passed: a hand-back (`time.sleep(0)`) costs ~60 us.
YIELD_EVERY_S = 50e-6


class PrecomputeWorker:
    """Makes the masks of deferred grammars (CompiledGrammar(deferred=True)) on one thread of its
    own, newest grammar first, each until its budget of this thread's CPU time is spent (the
    eager compile's row warm-up and precompute budgets together: a deferred grammar builds no
    rows ahead, its walks build those they need).

    Owned by a Compiler (grammar/compiler.py), which submits a grammar once its first mask is made.
    One state at a time under the grammar's lock, the GIL handed back every ~50 us of work
    (`time.sleep(0)`), so a matcher, a later compile or the engine loop waits about that long for it;
    the thread makes progress while they wait on something else (the model, the network).
    """

    def __init__(self, budget_s: float = WARM_BUDGET_S + PRECOMPUTE_BUDGET_S) -> None:
        self.budget_s = budget_s
        self._todo: deque[CompiledGrammar] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._running = False
        self._thread: threading.Thread | None = None

    def submit(self, grammar: CompiledGrammar) -> None:
        """Queue `grammar`'s precompute (its `precompute_done` is set when it is over)."""
        with self._lock:
            self._todo.append(grammar)
            if self._running and self._thread is not None and self._thread.is_alive():  # (not in a forked child)
                self._wake.notify()
                return
            self._running = True
            self._thread = threading.Thread(target=self._run, name="grammar-precompute", daemon=True)
            self._thread.start()

    def _next(self) -> CompiledGrammar | None:
        """The newest queued grammar, waiting up to IDLE_EXIT_S; None (the thread ends) after that."""
        with self._lock:
            if not self._todo:
                self._wake.wait(IDLE_EXIT_S)
            if not self._todo:
                self._running = False
                return None
            return self._todo.pop()

    def _run(self) -> None:
        while (grammar := self._next()) is not None:
            try:
                self.precompute(grammar)
            except Exception:  # noqa: BLE001 - e.g. MemoryError's kin: the same walk, on use, raises to its caller
                grammar.end_precompute()  # its masks are made on use; the thread goes on with the next

    def precompute(self, grammar: CompiledGrammar) -> None:
        """Step `grammar`'s precompute until it is over or this thread spent `budget_s` on it."""
        clock = time.thread_time
        end = clock() + self.budget_s
        next_yield = clock() + YIELD_EVERY_S
        while grammar.precompute_step():
            now = clock()
            if now > end:
                grammar.end_precompute()
                break
            if now > next_yield:
                time.sleep(0)  # the GIL to whoever waits for it
                next_yield = clock() + YIELD_EVERY_S
