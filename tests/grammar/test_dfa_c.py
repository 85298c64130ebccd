"""The C row builder (grammar/automaton/_dfa.c) against its Python reference (grammar/automaton/dfa_ref.py):
the same automaton state by state (rows, flags, calls, dominant targets, slices, absorb lengths), and
the same masks."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import grammar
from grammar import compiled
from grammar.automaton import dfa_ref
from grammar.automaton.constants import MAX_CLOSURE_ROWS, UNKNOWN, UTF8_SEQUENCES
from grammar.automaton.dfa import CBuilder, LazyDfa
from grammar.automaton.nfa import build_nfa
from grammar.compiled import CompiledGrammar
from grammar.frontends import json_order
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.frontends.lark import lark_to_grammar
from grammar.frontends.regex import regex_to_node
from grammar.ir import Grammar
from grammar.masks.index import c_walk
from grammar.masks.slices import ASCII_TEXT_SLICE

from .conftest import byte_vocab

needs_dfa_c = pytest.mark.skipif(CBuilder is None, reason="grammar.automaton._dfa not built")

REGEXES = [
    r"[a-z]+|[a-f0-9]{2,5}|x",                       # overlapping ranges
    r"(ab|a[a-c]|[^x]c)*d",
    r"[\x00-\xff]{0,3}[a-m]?[h-z]*",
    r"(\d+|[0-5]+\.[0-9]*)(e[+-]?\d+)?",
    r"(foo|f[o-z]{1,3}|[^ab]oo)+bar",
    r"[^\"\\]*(\\.[^\"\\]*)*",
    r"(\w|\s|[,.;])*é?",
    "[" + "".join(chr(c) for c in range(0x20, 0x7F, 3) if chr(c) not in "\\]^-") + "]{1,9}[a-y]+z",
]
LARKS = [
    'start: "(" start ")" | "x"',
    'start: list\nlist: "[" [item ("," item)*] "]"\nitem: list | /[0-9]+/ | /[0-5a-c]+/',
    'start: expr\nexpr: term (("+"|"-") term)*\nterm: atom (("*"|"/") atom)*\natom: /[0-9]+/ | "(" expr ")" | /[a-z][a-z0-9]*/',
    'start: obj\nobj: "{" [pair ("," pair)*] "}"\npair: /"[a-z]*"/ ":" val\nval: obj | /"[^"]*"/ | /-?[0-9]+/',
]


def _pair(g: Grammar, vocab: grammar.Vocabulary) -> tuple[LazyDfa, LazyDfa]:
    nfa = build_nfa(g)
    sets = grammar.compiler_for(vocab).index.slices.canonical_sets
    py = LazyDfa(nfa, 16, sets, builder=dfa_ref.Builder)
    c = LazyDfa(nfa, 16, sets, builder=CBuilder)
    return py, c


def _same_state(py: LazyDfa, c: LazyDfa, d: int) -> None:
    assert py.nfa_states(d) == c.nfa_states(d), d
    assert (py.trans[d] == c.trans[d]).all(), d
    for name in ("flags", "is_final", "has_calls", "dominant", "slice_of", "absorb"):
        assert getattr(py, name)[d] == getattr(c, name)[d], (name, d)
    assert py.calls(d) == c.calls(d), d
    assert py.slice_step(d) == c.slice_step(d), d


def _compare(py: LazyDfa, c: LazyDfa, max_states: int = 3000) -> int:
    """Explore both automata in the same order and compare every state; returns the count."""
    assert py.rule_start == c.rule_start
    d = 0
    while d < min(py.num_states, max_states):
        assert py.num_states == c.num_states
        for dfa in (py, c):
            dfa.prepare(d)
            dfa.calls(d)
        _same_state(py, c, d)
        target = py.dominant_target(d)
        if target is not None and d % 3 == 0:
            assert py.utf8_to(d, target) == c.utf8_to(d, target)
        d += 1
    assert py.num_states == c.num_states
    return d


@needs_dfa_c
@pytest.mark.parametrize("pattern", REGEXES)
def test_regex_automata_are_identical(pattern):
    py, c = _pair(Grammar({"start": regex_to_node(pattern)}), byte_vocab())
    assert _compare(py, c) > 1


@needs_dfa_c
def test_wide_state_sets_sort_the_same_in_both_builders():
    """700 words in shuffled order: the start's closure, the rows' edges and their targets are sets
    of hundreds of NFA states, which the C builder sorts by radix and by its inlined introsort
    (grammar/include/sort.h) where the Python one calls sorted()."""
    words = [f"w{i:03d}{'abc'[i % 3]}" for i in range(700)]
    random.Random(3).shuffle(words)
    py, c = _pair(Grammar({"start": regex_to_node("(" + "|".join(words) + ")(x|y)")}), byte_vocab())
    assert max(len(c.nfa_states(d)) for d in range(_compare(py, c))) >= 700


@needs_dfa_c
@pytest.mark.parametrize("text", LARKS)
def test_recursive_lark_automata_are_identical(text):
    py, c = _pair(lark_to_grammar(text), byte_vocab())
    assert _compare(py, c) > 1


@needs_dfa_c
def test_json_schema_automata_are_identical(bench_rows):
    vocab = byte_vocab()
    for row in bench_rows:
        try:
            g = compile_schema_to_grammar(row["schema"], "compact")
        except grammar.GrammarError:
            continue
        py, c = _pair(g, vocab)
        _compare(py, c, max_states=1500)


@needs_dfa_c
def test_states_closed_on_text_are_the_same_in_both_builders(bench_rows):
    """text_closed, a search that builds rows on its way, answers the same in C and in Python and
    builds the same states in the same order (closed_known, which never searches, too), on regexes and the dev subset's schemas in their
    open meaning (key tries of open objects are closed on text, bounded strings are not)."""
    vocab = byte_vocab()
    text = grammar.compiler_for(vocab).index.slices.utf8_text_slice
    grammars = [Grammar({"start": regex_to_node(p)}) for p in REGEXES]
    for row in bench_rows[:25]:
        try:
            grammars.append(compile_schema_to_grammar(row["schema"], "compact", False))
        except grammar.GrammarError:
            continue
    answers = []
    for g in grammars:
        py, c = _pair(g, vocab)
        for dfa in (py, c):
            dfa.set_utf8(ASCII_TEXT_SLICE, text, True)
        for d in range(300):
            if d >= py.num_states:
                break
            assert py.closed_known(d) == c.closed_known(d), d  # (said by an earlier search, or not yet)
            got = c.text_closed(d)
            assert py.text_closed(d) == got == py.closed_known(d) == c.closed_known(d), d
            assert py.num_states == c.num_states, d
            answers.append(got)
        _compare(py, c, max_states=300)
        py, c = _pair(g, vocab)  # and all at once, as a compile does
        for dfa in (py, c):
            dfa.set_utf8(ASCII_TEXT_SLICE, text, True)
        assert py.close_text(float("inf")) == c.close_text(float("inf"))
        assert py.num_states == c.num_states
        assert [py.text_closed(d) for d in range(py.num_states)] == [c.text_closed(d) for d in range(c.num_states)]
    assert 50 < sum(answers) < len(answers) - 50


@needs_dfa_c
def test_strings_widened_at_compile_are_the_same_in_both_builders(bench_rows):
    """upgrade_text widens the states of strings (a body, a bounded run's steps) to UTF-8 text in
    C as in Python, state for state, making the same new states in the same order; a state it
    widened is one upgrade_to_utf8 (the walk's) finds widened, and asking again builds nothing."""
    vocab = byte_vocab()
    text = grammar.compiler_for(vocab).index.slices.utf8_text_slice
    widened = 0
    for row in bench_rows[:25]:
        try:
            g = compile_schema_to_grammar(row["schema"], "compact", False)
        except grammar.GrammarError:
            continue
        py, c = _pair(g, vocab)
        for dfa in (py, c):
            dfa.set_utf8(ASCII_TEXT_SLICE, text, True)
            dfa.warm(1 << 16, float("inf"))
        before = py.num_states
        assert c.num_states == before
        got = c.upgrade_text(float("inf"))
        assert py.upgrade_text(float("inf")) == got
        assert py.num_states == c.num_states
        assert py.slice_of.tolist() == c.slice_of.tolist()
        for d in range(before):
            if c.slice_of[d] == text:
                n = c.num_states
                assert c.upgrade_to_utf8(d) == text and c.num_states == n, d
        widened += got
        _compare(py, c, max_states=400)
    assert widened > 20


@needs_dfa_c
def test_a_step_of_a_run_on_text_is_not_searched(monkeypatch):
    """A bounded string's steps (every text byte to one next state, and from there to one again)
    are not closed and are answered without a search: the search went a row per character to its
    row limit (~650 new states at each first character of a large grammar's strings). A string's
    body, which loops, is still searched. Both builders alike, state for state. (Without the `$`
    header, json_order.HEADER_FIRST: its key's states take the key start's search, on rows not
    warmed here, past MAX_CLOSED_ROWS.)"""
    monkeypatch.setattr(json_order, "HEADER_FIRST", False)
    vocab = byte_vocab()
    text = grammar.compiler_for(vocab).index.slices.utf8_text_slice
    g = compile_schema_to_grammar({"type": "object", "properties": {"s": {"type": "string", "maxLength": 300}},
                                   "additionalProperties": {"type": "string"}}, "compact", False)
    dfas = _pair(g, vocab)
    for dfa in dfas:
        dfa.set_utf8(ASCII_TEXT_SLICE, text, True)
        first = dfa.rule_start[0]
        for byte in b'{"s":"':
            first = dfa.step(first, byte)
        rows = int((dfa.trans[: dfa.num_states, 0] != UNKNOWN).sum())
        assert not dfa.text_closed(first)
        assert int((dfa.trans[: dfa.num_states, 0] != UNKNOWN).sum()) <= rows + 2  # its row and the next's
        second = dfa.step(first, ord("a"))
        assert not dfa.text_closed(second) and dfa.step(second, ord("a")) not in (second, first)
        key = dfa.step(dfa.step(dfa.rule_start[0], ord("{")), ord('"'))
        assert dfa.text_closed(key)  # an open object's key start: searched, and closed
    assert dfas[0].num_states == dfas[1].num_states
    _compare(*dfas, max_states=dfas[0].num_states)


@needs_dfa_c
def test_a_closure_search_too_long_gives_up_once():
    """A text-closed component larger than the search's limits (a string holding 4,200 `a`s in a
    row: a DFA state per count, each row costly to build) is answered "not closed" after a bounded
    search, which says so of every state it reached; states made on the way but not reached search
    again, within the same limits, until the DFA's searches spent MAX_CLOSURE_ROWS rows: asking
    every state then builds no more. Both builders alike, state for state."""
    vocab = byte_vocab()
    text = grammar.compiler_for(vocab).index.slices.utf8_text_slice
    py, c = _pair(Grammar({"start": regex_to_node('[^"]*a{4200}[^"]*')}), vocab)
    for dfa in (py, c):
        dfa.set_utf8(ASCII_TEXT_SLICE, text, True)
        assert not dfa.text_closed(dfa.rule_start[0])
        assert dfa.num_states < 100  # one search: MAX_CLOSED_ROWS rows, not the component's thousands
        d = 0
        while d < dfa.num_states:  # every state, those made meanwhile too
            assert not dfa.text_closed(d)
            d += 1
        assert dfa.num_states < MAX_CLOSURE_ROWS + 200
    assert py.num_states == c.num_states


@needs_dfa_c
@pytest.mark.parametrize("rows", [1, 40, 5000])
def test_warmed_rows_agree(rows, bench_rows):
    """LazyDfa.warm builds the same rows, hence the same states, in C and in Python."""
    vocab = byte_vocab()
    grammars = [lark_to_grammar(t) for t in LARKS] + [compile_schema_to_grammar(r["schema"], "compact") for r in bench_rows[:5]]
    for g in grammars:
        py, c = _pair(g, vocab)
        built = py.warm(rows, float("inf"))
        assert c.warm(rows, float("inf")) == built and 0 < built <= rows
        assert py.num_states == c.num_states
        for d in range(py.num_states):
            assert (py.trans[d, 0] == -2) == (c.trans[d, 0] == -2), d
            if py.trans[d, 0] != -2:
                assert py.nfa_states(d) == c.nfa_states(d) and (py.trans[d] == c.trans[d]).all(), d
        assert _compare(py, c, max_states=300) > 1  # and the automata go on agreeing


@needs_dfa_c
def test_rows_built_lazily_in_any_order_agree():
    """States first reached through utf8_to / slice steps (not in id order) get the same ids."""
    g = compile_schema_to_grammar({"type": "object", "properties": {"s": {"type": "string", "maxLength": 6}}}, "compact")
    py, c = _pair(g, byte_vocab())
    for dfa in (py, c):
        d = dfa.rule_start[0]
        for b in b'{"s":"':
            d = dfa.step(d, b)
        dfa.utf8_to(d, d)
        dfa.prepare(d)
    assert py.num_states == c.num_states
    for d in range(py.num_states):
        assert py.nfa_states(d) == c.nfa_states(d)
        if py.trans[d, 0] != -2 or c.trans[d, 0] != -2:
            _same_state(py, c, d)


@needs_dfa_c
def test_tables_grow_under_the_builder():
    """Far more states than the first table size (a small NFA whose DFA blows up): the builder
    follows LazyDfa._grow, and rows of new states are UNKNOWN in the uninitialized tables."""
    py, c = _pair(Grammar({"start": regex_to_node(r"[ab]*a[ab]{9}c")}), byte_vocab())
    first = len(c.trans)
    assert _compare(py, c) > 1000 > first


@needs_dfa_c
def test_utf8_sequences_agree_on_text_loops():
    py, c = _pair(Grammar({"start": regex_to_node(r"\"([^\"\\\x00-\x1f]|\\.)*\"")}), byte_vocab())
    _compare(py, c)
    for d in range(py.num_states):
        for t in range(py.num_states):
            assert py.utf8_to(d, t) == c.utf8_to(d, t) == py.builder.utf8_to(py, d, t, UTF8_SEQUENCES)
    assert c.builder.utf8_to(c, 0, 0, UTF8_SEQUENCES) in (True, False)


@needs_dfa_c
@pytest.mark.parametrize(("pattern", "some_true"), [(r"\"([^\"\\\x00-\x1f]|\\.)*\"", True), (r"[a-zé]{0,20}", False),
                                                   (r"[^\"\\\x00-\x1f]{0,30}x", True), (r"a[\u0100-\uffff]{1,4}", False),
                                                   (r"(ab|[^a]é)*", True)])
def test_the_utf8_check_makes_no_state_and_answers_as_the_rows(pattern, some_true):
    """utf8_to follows the NFA states' sets where a row is not built, making no DFA state and no row
    (the check made some 15 states a position of a bounded string, each with its row); where rows
    are built it reads them. Both ways, and both builders, give the same answers."""
    g = Grammar({"start": regex_to_node(pattern)})
    answers = []
    for builder in (dfa_ref.Builder, CBuilder):
        dfa = LazyDfa(build_nfa(g), 16, None, builder)
        ascii_states, todo = {dfa.rule_start[0]}, [dfa.rule_start[0]]
        while todo:  # rows of the states ASCII bytes reach; those inside characters stay unbuilt
            d = todo.pop()
            for b in range(128):
                t = dfa.step(d, b)
                if t >= 0 and t not in ascii_states:
                    ascii_states.add(t)
                    todo.append(t)
        states, rows = dfa.num_states, int((dfa.trans[: dfa.num_states, 0] != UNKNOWN).sum())
        assert rows < states  # (some states inside characters)
        pairs = [(d, t) for d in sorted(ascii_states) for t in sorted(ascii_states)]
        lazy = [dfa.builder.utf8_to(dfa, d, t, UTF8_SEQUENCES) for d, t in pairs]
        assert dfa.num_states == states and int((dfa.trans[: dfa.num_states, 0] != UNKNOWN).sum()) == rows
        d = 0
        while d < dfa.num_states:  # every row built: now read from the rows
            dfa.compute_row(d)
            d += 1
        assert [dfa.builder.utf8_to(dfa, d, t, UTF8_SEQUENCES) for d, t in pairs] == lazy
        answers.append(lazy)
    assert answers[0] == answers[1] and (True in answers[0]) == some_true and False in answers[0]


UTF8_SCHEMAS = [
    {"type": "object", "properties": {"s": {"type": "string", "maxLength": 5}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
    {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 12}},
    {"type": "object", "properties": {"n": {"type": "integer"}, "e": {"enum": ["x y", "é"]}}},
]


@needs_dfa_c
@pytest.mark.parametrize("runs", [False, True])
@pytest.mark.parametrize("schema", UTF8_SCHEMAS)
def test_utf8_upgrade_and_slicer_in_c_agree(schema, runs):
    """The builders' upgrade_to_utf8 and their slices from byte sets (set_slices): the same
    slices, state by state, and the same state ids."""
    vocab = byte_vocab()
    py, c = _pair(compile_schema_to_grammar(schema, "compact"), vocab)
    text_slice = grammar.compiler_for(vocab).index.slices.utf8_text_slice
    for dfa in (py, c):
        dfa.set_utf8(0, text_slice, runs)
    upgraded = 0
    d = 0
    while d < min(py.num_states, 1500):
        assert py.upgrade_to_utf8(d) == c.upgrade_to_utf8(d), d
        assert py.num_states == c.num_states
        upgraded += py.slice_of[d] == text_slice
        _same_state(py, c, d)
        d += 1
    if "additionalProperties" in schema:  # free string text loops: upgraded
        assert upgraded


@needs_dfa_c
def test_builder_rejects_bad_input():
    with pytest.raises(ValueError):
        CBuilder([[]], [[], []], [[]], [], False, 16)
    with pytest.raises(ValueError):
        dfa_ref.Builder([[]], [[], []], [[]], [], False, 16)
    py, c = _pair(Grammar({"start": regex_to_node("ab")}), byte_vocab())
    with pytest.raises(IndexError):
        c.builder.row(c, 10_000)
    with pytest.raises(IndexError):
        c.builder.intern_closure(c, [10_000])
    with pytest.raises(ValueError):
        c.builder.row(py, 0)  # a builder writes only into its own LazyDfa's tables


def _masks(g: CompiledGrammar, token_ids: list[int]) -> list[np.ndarray]:
    m = g.matcher()
    out = []
    for tid in token_ids:
        out.append(g.mask(m.state).copy())
        if not m.accept(tid):
            break
    return out


def _python_rows(g: CompiledGrammar, warmed: int) -> CompiledGrammar:
    """The same compiled grammar with its DFA rows built in Python, `warmed` of them (as many as
    the C-built grammar compared with warmed in its time budget) built first, and no masks made
    yet (a mask made at compile time is compared with one made on first use)."""
    c = g.dfa
    g.dfa = LazyDfa(g.nfa, c.max_absorb, g.index.slices.canonical_sets, builder=dfa_ref.Builder)
    g._state_masks.clear()  # masks made at compile time belong to the replaced DFA
    g.masks.clear()
    g.dfa.set_utf8(0, g.index.slices.utf8_text_slice, True)
    assert g.dfa.warm(warmed, float("inf")) == warmed
    return g


@needs_dfa_c
@pytest.mark.model
def test_real_tokenizer_masks_equal_the_python_rows(smollm2_tokenizer, smollm2_vocab, bench_rows, monkeypatch):
    monkeypatch.setattr(compiled, "PRECOMPUTE_STATES", 0)  # the DFAs are compared state for state
    for budget in ("WARM_BUDGET_S", "CLOSE_BUDGET_S", "UTF8_BUDGET_S"):  # builders compared, not a busy machine's
        monkeypatch.setattr(compiled, budget, 10.0)  # time budgets (a warm cut short failed this under load)
    eos = smollm2_vocab.eos_token_ids[0]
    for row in bench_rows[:15]:
        text = json.dumps(row["valid"][0]["data"], ensure_ascii=False, separators=(",", ":"))
        ids = smollm2_tokenizer.encode(text, add_special_tokens=False)[:60] + [eos]
        g = compile_schema_to_grammar(row["schema"], "compact")
        compiler = grammar.compiler_for(smollm2_vocab)
        fast = compiler.compile(g)
        slow = _python_rows(compiler.compile(g), fast.warmed)
        assert type(fast.dfa.builder) is CBuilder and type(slow.dfa.builder) is dfa_ref.Builder
        got, want = _masks(fast, ids), _masks(slow, ids)
        assert len(got) == len(want), row["id"]
        for a, b in zip(got, want):
            assert (a == b).all(), row["id"]
        assert fast.dfa.num_states == slow.dfa.num_states, row["id"]


@needs_dfa_c
@pytest.mark.parametrize("text", LARKS[1:])
def test_byte_vocab_masks_equal_the_python_rows(text):
    vocab = byte_vocab()
    compiler = grammar.compiler_for(vocab)
    fast = compiler.compile(lark_to_grammar(text))
    slow = _python_rows(compiler.compile(lark_to_grammar(text)), fast.warmed)
    data = {1: b"[1,[2,ab],[]]", 2: b"(ab1+2)*3-x/(4)", 3: b'{"a":{"b":-12},"c":"x y"}'}[LARKS.index(text)]
    got, want = _masks(fast, list(data) + [256]), _masks(slow, list(data) + [256])
    assert len(got) == len(want) == len(data) + 1
    for a, b in zip(got, want):
        assert (a == b).all()


@needs_dfa_c
@pytest.mark.skipif(c_walk is None, reason="grammar.masks._walk not built")
def test_the_walk_builds_rows_in_c_without_calling_python(monkeypatch):
    """Inside the mask walk and the byte run, rows, slices, the UTF-8 upgrade and the text closure
    come from the builder's capsule: no Python method of the LazyDfa is called."""
    rng = random.Random(0)
    alphabet = [b'"', b"{", b"}", b":", b",", b"a", b"b", b"k", b"1", b"2", b"-", b" "]
    tokens = list(alphabet) + [b'{"', b'{"ka', b'{"kab":12', b'{"ka":"ab', b'":"', b'":1', b'12,"']
    tokens += [b"".join(rng.choice(alphabet) for _ in range(rng.randint(2, 6))) for _ in range(600)]
    vocab = grammar.Vocabulary(tokens + [None], [len(tokens)], len(tokens) + 3)
    schema = {"type": "object", "properties": {"kab": {"type": "integer"}, "ka": {"type": "string"}}, "required": ["ka"]}
    monkeypatch.setattr(grammar.compiled, "WARM_ROWS", 0)  # every row is left to the walk
    monkeypatch.setattr(grammar.compiled, "CLOSE_BUDGET_S", 0.0)  # (whose text closure search builds rows)
    monkeypatch.setattr(grammar.compiled, "PRECOMPUTE_STATES", 0)  # ... at the first mask
    g = grammar.compiler_for(vocab).compile(compile_schema_to_grammar(schema, "compact"))

    def no_python(self, *args):
        raise AssertionError("the walk called the LazyDfa's Python methods")

    for name in ("prepare", "compute_row", "upgrade_to_utf8", "utf8_to", "text_closed"):
        monkeypatch.setattr(LazyDfa, name, no_python)
    m = g.matcher()
    before = g.dfa.num_states
    g.mask(m.state)
    assert g.dfa.num_states > before + 8  # rows of the states `{"ka":"ab` passes, built by the walk
    assert m.accept_bytes(b'{"ka":"')
    g.mask(m.state)  # string text: the UTF-8 upgrade and the text first bytes, in C too
    assert g.dfa.slice_of[next(iter(m.state))[1]] == g.index.slices.utf8_text_slice
    before = g.dfa.num_states
    data = b'{"kab":-2,"ka":"b'
    state, pos = c_walk.run(g.dfa, g.dfa.rule_start[0], data, 0, False)  # the byte run: rows in C too
    assert state >= 0 and pos == len(data)
    assert g.dfa.num_states > before


@needs_dfa_c
def test_whitespace_gaps_are_found_alike_and_left_unwarmed(bench_rows):
    """Flexible grammars: both builders say the same of every state's bounded whitespace gap
    (`ws_run`: the whitespace bytes it still takes, which the C walk counts), and warm builds the
    same rows, leaving a gap's states after its first unbuilt (the walk never steps into them)."""
    vocab = byte_vocab()
    found = 0
    for row in bench_rows[:12]:
        try:
            g = compile_schema_to_grammar(row["schema"], "flexible")
        except grammar.GrammarError:
            continue
        py, c = _pair(g, vocab)
        assert py.warm(5000, float("inf")) == c.warm(5000, float("inf"))
        assert py.num_states == c.num_states
        for d in range(py.num_states):
            assert py.nfa_states(d) == c.nfa_states(d), d
            run = py.builder.ws_run(py, d)
            assert run == c.builder.ws_run(c, d), d
            found += run > 0
            if run > 0 and py.trans[d, 0] != UNKNOWN:
                nxt = int(py.trans[d, 32])
                assert py.trans[d, 9] == py.trans[d, 10] == nxt >= 0
                assert py.builder.ws_run(py, nxt) in (run - 1, -1)  # (-1: the gap's end, past the last count)
                assert py.trans[nxt, 0] == UNKNOWN or run == 1  # left unwarmed
        assert _compare(py, c, max_states=400) > 1
    assert found > 20
