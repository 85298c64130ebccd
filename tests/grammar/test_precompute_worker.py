"""Masks made ahead of use after the compile returned (grammar/precompute_worker.py): the same bits
as made at once, a compile that does not wait for them, and matchers filling meanwhile."""

from __future__ import annotations

import json
import threading
import time
import weakref

import numpy as np
import pytest

import grammar
from grammar import precompute_worker
from grammar.compiled import CompiledGrammar
from grammar.compiler import Compiler
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.frontends.lark import lark_to_grammar
from grammar.masks.precompute import Frontier
from grammar.masks.state_masks import STOP, compute_mask
from grammar.masks.words import dense
from grammar.precompute_worker import PrecomputeWorker

from .conftest import byte_vocab

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer"},
                                           "tags": {"type": "array", "items": {"enum": ["a", "bc"]}},
                                           "note": {"type": "null"}},  # (four members: declared order, issue 39)
          "required": ["name", "age"], "additionalProperties": False}
TEXT = b'{"name":"x y","age":-12,"tags":["bc","a"]}'


def _rows(g: CompiledGrammar, token_ids: list[int]) -> list[np.ndarray]:
    """The bitmask rows a matcher fills along `token_ids` (stopping at a rejected token)."""
    m = g.matcher()
    bitmask = grammar.allocate_bitmask(1, g.vocab)
    out = []
    for tid in token_ids:
        m.fill_bitmask(bitmask, 0)
        out.append(bitmask[0].numpy().copy())
        if not m.accept(tid):
            break
    return out


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all((x == y).all() for x, y in zip(a, b))


def _deferred(compiler: Compiler, g: grammar.ir.Grammar) -> CompiledGrammar:
    compiled = compiler.compile(g, deferred=True)
    compiled.mask(compiled.initial)  # as a cached compile does before it returns
    return compiled


def test_deferred_masks_equal_the_eager_ones_toy_vocab():
    compiler = Compiler(byte_vocab())
    g = compile_schema_to_grammar(SCHEMA)
    ids = list(TEXT) + [256]
    eager = compiler.compile(g)
    assert eager.precompute_done.is_set() and eager.precomputed > 0 and eager.warmed > 0
    deferred = _deferred(compiler, g)
    assert not deferred.precompute_done.is_set() and deferred.precomputed == 0
    assert deferred.warmed == eager.warmed > 0  # the DFA's rows are built at compile either way
    PrecomputeWorker(budget_s=1.0).precompute(deferred)  # on this thread, to its end
    assert deferred.precompute_done.is_set()
    assert deferred.precomputed > 10  # the start was made first: walked again for its successors
    assert _same(_rows(deferred, ids), _rows(eager, ids))
    assert _same(_rows(_deferred(compiler, g), ids), _rows(eager, ids))  # nothing precomputed at all


def test_a_compile_returns_before_its_precompute(monkeypatch):
    release = threading.Event()
    step = CompiledGrammar.precompute_step

    def held(self: CompiledGrammar) -> bool:
        release.wait(120)
        return step(self)

    monkeypatch.setattr(CompiledGrammar, "precompute_step", held)
    vocab = byte_vocab()
    t0 = time.perf_counter()
    g = grammar.compile_json_schema(SCHEMA, vocab)
    assert time.perf_counter() - t0 < 5  # did not wait for the held step
    assert not g.precompute_done.is_set() and g.precomputed > 0  # the first share: made by the compile itself
    assert g.initial in g.masks  # the first mask is made before the compile returns
    other = grammar.compile_regex("[a-c]+x", vocab)  # a later compile is not held up either
    assert other.initial in other.masks and not other.precompute_done.is_set()
    want = _rows(CompiledGrammar(compile_schema_to_grammar(SCHEMA), g.index), list(TEXT) + [256])
    assert _same(_rows(g, list(TEXT) + [256]), want)  # a matcher fills meanwhile, on its own
    release.set()
    assert g.precompute_done.wait(120) and other.precompute_done.wait(120)
    assert g.precomputed > 0 and other.precomputed > 0


def test_a_failed_precompute_ends_it_and_the_worker_goes_on(monkeypatch):
    compiler = Compiler(byte_vocab())
    bad = _deferred(compiler, compile_schema_to_grammar(SCHEMA))
    monkeypatch.setattr(bad, "precompute_step", lambda: 1 / 0)
    good = _deferred(compiler, compile_schema_to_grammar({"type": "array", "items": {"type": "number"}}))
    worker = PrecomputeWorker()
    worker.submit(good)
    worker.submit(bad)  # raises on its thread
    assert bad.precompute_done.wait(120) and good.precompute_done.wait(120)
    assert good.precomputed > 0 and bad.precomputed == 0
    assert _same(_rows(bad, list(TEXT) + [256]), _rows(compiler.compile(compile_schema_to_grammar(SCHEMA)),
                                                          list(TEXT) + [256]))


def test_an_eager_compiler_makes_them_before_it_returns():
    compiler = Compiler(byte_vocab(), deferred=False)
    g = compiler.compile_json_schema(SCHEMA)
    assert g.precompute_done.is_set() and g.precomputed > 10 and g.warmed > 0
    assert compiler.worker._running is False  # nothing was submitted
    deferred = Compiler(g.vocab).compile_json_schema(SCHEMA)
    assert deferred.precompute_done.wait(120)
    assert _same(_rows(deferred, list(TEXT) + [256]), _rows(g, list(TEXT) + [256]))


TREE = {"$defs": {"node": {"type": "object", "additionalProperties": False, "required": ["v"],
                           "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
        "$ref": "#/$defs/node"}


@pytest.mark.parametrize("schema", [TREE, {"type": "integer"}, SCHEMA])
def test_configurations_through_calls_returns_and_escapes_are_made_ahead_too(schema):
    """The empty-stack configuration of a state that calls, may end the output or has escapes
    gets its mask ahead of use as well (through the pushdown step), the same bits as made on use.
    The precompute runs step by step to its state count, not within a time budget, which a busy
    machine spends before it reaches those configurations."""
    g = Compiler(byte_vocab()).compile(compile_schema_to_grammar(schema), deferred=True)
    while g.precompute_step():
        pass
    pushdown = []
    for configs, words in g.masks.items():
        ((stack, d),) = configs
        sm = g._state_masks.get((d, False))
        if not stack and (g.dfa.flags.item(d) & STOP or (sm is not None and sm.escapes)):
            pushdown.append(configs)
            assert (dense(words) == dense(compute_mask(g.dfa, g.index, configs, {}))).all()
    assert pushdown  # the start of a called rule, the end of the document


def test_matchers_filling_during_the_precompute_get_the_same_bits():
    vocab = byte_vocab()
    compiler = Compiler(vocab)
    g = compile_schema_to_grammar(SCHEMA)
    ids = list(TEXT) + [256]
    want = _rows(compiler.compile(g), ids)
    worker = PrecomputeWorker(budget_s=1.0)
    for _ in range(20):
        deferred = _deferred(compiler, g)
        worker.submit(deferred)
        got: list[list[np.ndarray]] = []
        side = threading.Thread(target=lambda: got.append(_rows(deferred, ids)))  # noqa: B023
        side.start()
        mine = _rows(deferred, ids)
        side.join()
        assert _same(mine, want) and _same(got[0], want)
        assert deferred.precompute_done.wait(120)
        assert _same(_rows(deferred, ids), want)


def test_the_worker_keeps_to_its_budget_and_ends_when_idle(monkeypatch):
    monkeypatch.setattr(precompute_worker, "IDLE_EXIT_S", 0.05)
    compiler = Compiler(byte_vocab())
    g = _deferred(compiler, compile_schema_to_grammar(SCHEMA))
    PrecomputeWorker(budget_s=0.0).precompute(g)  # spent at once: one state, then over
    assert g.precompute_done.is_set() and g.precomputed == 1
    assert not g.precompute_step()
    worker = PrecomputeWorker()
    h = _deferred(compiler, compile_schema_to_grammar({"type": "array", "items": {"type": "number"}}))
    worker.submit(h)
    assert h.precompute_done.wait(120) and h.precomputed > 0
    for _ in range(200):
        if not worker._running:
            break
        time.sleep(0.01)
    assert not worker._running  # the thread ended; the next submit starts another
    k = _deferred(compiler, compile_schema_to_grammar({"enum": [1, "a"]}))
    worker.submit(k)
    assert k.precompute_done.wait(120)
    worker._running = True  # as a forked child sees it: running, but its thread is not there
    worker._thread = threading.Thread(target=lambda: None)
    m = _deferred(compiler, compile_schema_to_grammar({"enum": [2, "b"]}))
    worker.submit(m)
    assert m.precompute_done.wait(120)


@pytest.mark.model
def test_real_tokenizer_deferred_and_concurrent_masks_equal_the_eager_ones(smollm2_tokenizer, smollm2_vocab,
                                                                          bench_rows):
    compiler = Compiler(smollm2_vocab)
    eos = smollm2_vocab.eos_token_ids[0]
    worker = PrecomputeWorker()
    for row in bench_rows[:12]:
        text = json.dumps(row["valid"][0]["data"], ensure_ascii=False, separators=(",", ":"))
        ids = smollm2_tokenizer.encode(text, add_special_tokens=False)[:80] + [eos]
        g = compile_schema_to_grammar(row["schema"], "compact")
        want = _rows(compiler.compile(g), ids)
        deferred = _deferred(compiler, g)
        worker.submit(deferred)
        assert _same(_rows(deferred, ids), want), row["id"]  # racing the worker
        assert deferred.precompute_done.wait(120)
        assert _same(_rows(deferred, ids), want), row["id"]
        settled = _deferred(compiler, g)
        worker.precompute(settled)
        assert _same(_rows(settled, ids), want), row["id"]


def test_no_steps_while_the_other_threads_run(monkeypatch):
    """No step while the process's other threads use the CPU (a compile, the engine loop, the
    model's threads): they are not held up; the precompute goes on once they wait. (Handing the
    GIL back by `time.sleep(0)` instead, the worker made 88-213 of this grammar's 257 states
    while the main thread ran a 0.3 s busy loop.)"""
    busy = [True]
    monkeypatch.setattr(precompute_worker, "_others_cpu", lambda: time.perf_counter() if busy[0] else 0.0)
    compiler = Compiler(byte_vocab())
    g = _deferred(compiler, compile_schema_to_grammar(SCHEMA))
    worker = PrecomputeWorker(budget_s=1.0)
    worker.submit(g)
    time.sleep(0.3)  # the others "use" a whole core meanwhile
    assert g.precomputed == 0 and not g.precompute_done.is_set()
    busy[0] = False
    assert g.precompute_done.wait(120) and g.precomputed > 5


def test_a_precompute_busy_for_too_long_is_given_up(monkeypatch):
    monkeypatch.setattr(precompute_worker, "_others_cpu", time.perf_counter)  # the others always busy
    monkeypatch.setattr(precompute_worker, "GIVE_UP_BUSY_S", 0.2)
    g = _deferred(Compiler(byte_vocab()), compile_schema_to_grammar(SCHEMA))
    worker = PrecomputeWorker(budget_s=1.0)
    worker.submit(g)
    assert g.precompute_done.wait(120) and g.precomputed == 0  # given up: its masks are made on use
    assert _same(_rows(g, list(TEXT) + [256]), _rows(Compiler(g.vocab).compile(compile_schema_to_grammar(SCHEMA)),
                                                     list(TEXT) + [256]))


def test_the_other_threads_cpu_is_the_process_less_this_thread():
    """The spinner runs until it has itself used 0.1 s of CPU (its own clock, not the wall's: on a
    loaded machine it gets a smaller share of a core, and a fixed sleep measured less)."""
    spun: list[float] = []

    def spin() -> None:
        start = time.thread_time()
        while time.thread_time() - start < 0.1:
            pass
        spun.append(time.thread_time() - start)

    spinner = threading.Thread(target=spin, daemon=True)
    before = precompute_worker._others_cpu()
    spinner.start()
    spinner.join()  # this thread uses no CPU meanwhile
    used = precompute_worker._others_cpu() - before
    assert spun[0] - 0.01 < used < spun[0] + 0.2


def test_past_max_waiting_the_oldest_waiting_grammar_is_given_up(monkeypatch):
    compiler = Compiler(byte_vocab())
    worker = PrecomputeWorker()
    busy = threading.Event()
    worker._running, worker._thread = True, threading.Thread(target=busy.wait, daemon=True)  # a thread that takes none
    worker._thread.start()
    grammars = [_deferred(compiler, compile_schema_to_grammar({"enum": [i]})) for i in range(precompute_worker.MAX_WAITING + 2)]
    for g in grammars:
        worker.submit(g)
    busy.set()
    assert [g.precompute_done.is_set() for g in grammars] == [True, True] + [False] * precompute_worker.MAX_WAITING
    assert len(worker._todo) == precompute_worker.MAX_WAITING


def test_a_waiting_grammar_its_owners_let_go_of_is_freed_then_not_in_a_later_submit():
    """The queue holds weak references: a grammar dropped by its owners (the compiler's cache, its
    matchers) is freed at once, not kept alive until a later submit pushes it out (which freed it
    inside that compile: issue 39), and the worker skips it."""
    compiler = Compiler(byte_vocab())
    worker = PrecomputeWorker()
    busy = threading.Event()
    worker._running, worker._thread = True, threading.Thread(target=busy.wait, daemon=True)  # a thread that takes none
    worker._thread.start()
    dropped = _deferred(compiler, compile_schema_to_grammar({"enum": [1]}))
    kept = _deferred(compiler, compile_schema_to_grammar({"enum": [2]}))
    worker.submit(kept)
    worker.submit(dropped)
    gone = weakref.ref(dropped)
    del dropped  # (freed by its reference count: no collection needed)
    assert gone() is None
    busy.set()
    worker._running = False
    assert worker._next() is kept  # (the dead reference, newest, skipped)


def test_the_first_masks_follow_the_start_before_other_rules_starts():
    """The frontier walks outward from the start; a rule's start waits until a walk meets a call of
    it (or the likely states run out), so a grammar of many rules does not spend the first masks'
    budget away from the document's path."""
    compiled = Compiler(byte_vocab()).compile(lark_to_grammar('start: "a" "b" x\nx: "(" x ")" | "z"'), deferred=True)
    dfa = compiled.dfa
    assert len(dfa.rule_start) == 2  # x is recursive: a rule of its own, entered by a call
    ((_, after_a),) = compiled.advance(compiled.initial, b"a")
    ((_, after_ab),) = compiled.advance(compiled.initial, b"ab")
    frontier = Frontier(dfa, compiled.index, {}, {})
    walked = []
    while frontier.step():
        walked.append(next(k for k in frontier.walked if k not in walked))
    assert walked[:2] == [(dfa.rule_start[0], False), (after_a, False)]
    assert walked.index((dfa.rule_start[1], True)) > walked.index((after_ab, False))  # reached through the call
