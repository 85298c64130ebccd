"""The fast mask paths (C trie walk, slices, single-config shortcut) against the reference walk
(grammar/masks/walk_ref.py, numpy) and a brute-force mask (every token advanced through the
pushdown matcher)."""

from __future__ import annotations

import json
import random
import sys
import threading

import numpy as np
import pytest

import grammar
import grammar.masks.rest_trie as rest_trie
from grammar.automaton.constants import FLAG_FINAL
from grammar.automaton.nfa import COMPACT_BLOCK
from grammar.compiled import CompiledGrammar
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.frontends.lark import lark_to_grammar
from grammar.frontends.regex import regex_to_node
from grammar.ir import Grammar
from grammar.masks import walk_ref
from grammar.masks.index import MAX_RUN, TokenIndex, c_walk
from grammar.masks.state_masks import compute_mask, slice_base
from grammar.masks.words import SparseWords, dense, is_empty, kept, or_into, write_row
from tests.grammar.conftest import byte_vocab

needs_c = pytest.mark.skipif(c_walk is None, reason="C extension grammar.masks._walk not built")

ALPHABET = [b"{", b"}", b"[", b"]", b'"', b"\\", b":", b",", b" ", b"a", b"b", b"z", b"0", b"1", b"9", b"-",
            b".", b"e", b"n", b"u", b"l", b"t", b"r", "é".encode(), "日".encode(), b"\n", b"\xe6", b"\x97\xa5", b"A"]

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}, "required": ["name"]},
    {"type": "array", "items": {"type": "string", "maxLength": 3}},
    {"type": "object", "additionalProperties": {"type": "number"}},
    {"$defs": {"t": {"type": "object", "properties": {"k": {"$ref": "#/$defs/t"}, "v": {"type": "string"}}}},
     "$ref": "#/$defs/t"},
    {"enum": ["alpha", "beta", 12, None]},
    {"type": "object", "properties": {"alpha": {"type": "string"}, "beta": {"type": "string", "maxLength": 20}},
     "additionalProperties": {"type": "string"}},
    {},
]
LARK = 'start: "[" (item ("," item)*)? "]"\nitem: NUMBER | start\nNUMBER: /[0-9]+/'


def _random_vocab(seed: int, size: int = 400) -> grammar.Vocabulary:
    rng = random.Random(seed)
    tokens: list[bytes | None] = [a for a in ALPHABET]
    while len(tokens) < size:
        tokens.append(b"".join(rng.choice(ALPHABET) for _ in range(rng.randint(2, 6))))
    tokens.append(tokens[30])  # a duplicate byte string under another id
    tokens.append(None)
    return grammar.Vocabulary(tokens, [len(tokens)], len(tokens) + 5)


def _brute(g: CompiledGrammar, state) -> set[int]:
    out = {i for i, data in enumerate(g.vocab.token_bytes) if data and g.advance(state, data)}
    if g.is_complete(state):
        out |= set(g.vocab.eos_token_ids)
    return out


def _bits(words: np.ndarray, vocab: grammar.Vocabulary) -> set[int]:
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")[: vocab.vocab_size]
    return set(np.nonzero(bits)[0].tolist())


def _random_walks_match_brute_force(g: CompiledGrammar, rng: random.Random, walks: int, steps: int):
    """Along `walks` random walks of up to `steps` tokens: each state's mask equals brute force;
    yields each state checked."""
    eos = set(g.vocab.eos_token_ids)
    for _ in range(walks):
        m = g.matcher()
        for _ in range(steps):
            want = _brute(g, m.state)
            assert _bits(g.mask(m.state), g.vocab) == want, m.state
            yield m.state
            if not want or want == eos:
                break
            assert m.accept(rng.choice(sorted(want - eos) or sorted(want)))


def _compile(g: Grammar, vocab: grammar.Vocabulary) -> CompiledGrammar:
    return grammar.compiler_for(vocab).compile(g)


def _index(vocab: grammar.Vocabulary) -> TokenIndex:
    return grammar.compiler_for(vocab).index


def _numpy_mask(g: CompiledGrammar, state, monkeypatch) -> set[int]:
    """The mask of `state` by the reference walk, on the same DFA."""
    ref = g.vocab.derived("reference index", lambda: TokenIndex(g.vocab, walk_ref))
    return _bits(dense(compute_mask(g.dfa, ref, state, {})), g.vocab)


def _grammars(vocab: grammar.Vocabulary) -> list[CompiledGrammar]:
    out = [_compile(compile_schema_to_grammar(s, ws), vocab) for s in SCHEMAS for ws in ("compact", "flexible")]
    out.append(_compile(lark_to_grammar(LARK), vocab))
    out.append(_compile(Grammar({"start": regex_to_node(r"[a-z]{2,}(-[0-9]+)?")}), vocab))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_masks_equal_brute_force_on_random_walks(seed, monkeypatch):
    vocab = _random_vocab(seed)
    rng = random.Random(seed)
    for g in _grammars(vocab):
        m = g.matcher()
        for _ in range(25):
            got = grammar.unpack_bitmask(_fill(m), vocab.vocab_size)[0].nonzero().flatten().tolist()
            want = _brute(g, m.state)
            assert set(got) == want, (g.nfa.rule_names[0], m.state)
            assert _numpy_mask(g, m.state, monkeypatch) == want
            if not want or want == set(vocab.eos_token_ids):
                break
            tid = rng.choice(sorted(want - set(vocab.eos_token_ids)) or sorted(want))
            assert m.accept(tid)


@pytest.mark.parametrize("seed", [3, 4])
def test_filled_rows_equal_the_cached_masks(seed):
    """fill_bitmask writes a missed mask's row straight from the C walk (one configuration) or
    copies it: each row is the grammar's mask of that state, the other rows untouched."""
    vocab = _random_vocab(seed)
    rng = random.Random(seed)
    for g in _grammars(vocab):
        m = g.matcher()
        bitmask = grammar.allocate_bitmask(3, vocab)
        for _ in range(25):
            bitmask.fill_(-1)
            m.fill_bitmask(bitmask, 1)
            first = bitmask[1].numpy().copy()
            m.fill_bitmask(bitmask, 1)  # now a hit
            assert (bitmask[1].numpy() == first).all() and (bitmask[[0, 2]] == -1).all()
            assert (first == g.mask(m.state)).all()
            want = _brute(g, m.state)
            assert _bits(first, vocab) == want, (g.nfa.rule_names[0], m.state)
            if not want or want == set(vocab.eos_token_ids):
                break
            assert m.accept(rng.choice(sorted(want - set(vocab.eos_token_ids)) or sorted(want)))


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_a_new_walk_with_escapes_is_resolved_in_its_own_buffer(seed):
    """A fill of one configuration whose state was never walked and whose walk has escapes
    (tokens through a call, or a return under a non-empty stack) resolves them against its
    stack at once and writes the row (grammar/masks/state_masks.py fill_single): the bits of
    brute force, the row the cached mask's, the other rows untouched. Masks made on use only
    (no precompute), so the walks are new."""
    vocab = _random_vocab(seed)
    rng = random.Random(seed)
    irs = [compile_schema_to_grammar(SCHEMAS[3], "compact"), compile_schema_to_grammar(SCHEMAS[3], "flexible"),
           lark_to_grammar(LARK)]
    resolved = 0
    for ir in irs:
        g = grammar.compiler_for(vocab).compile(ir, deferred=True)
        g.end_precompute()
        bitmask = grammar.allocate_bitmask(3, vocab)
        for _ in range(6):
            m = g.matcher()
            for _ in range(30):
                state = m.state
                bitmask.fill_(-1)
                m.fill_bitmask(bitmask, 1)
                row = bitmask[1].numpy().copy()
                if len(state) == 1:
                    ((stack, d),) = state
                    resolved += (d, stack != ()) not in g._state_masks  # this path keeps no state mask
                want = _brute(g, state)
                assert _bits(row, vocab) == want, state
                assert (row == g.mask(state)).all() and (bitmask[[0, 2]] == -1).all()
                if not want or want == set(vocab.eos_token_ids):
                    break
                assert m.accept(rng.choice(sorted(want - set(vocab.eos_token_ids)) or sorted(want)))
    assert resolved >= 3  # the path ran


def test_a_final_state_under_an_empty_stack_takes_the_single_path(monkeypatch):
    """A configuration whose state may end the output and calls nothing, under an empty stack (a
    top-level number that may go on, a closed top-level value: every request's last mask), is
    filled by fill_single: its state mask and EOS, written into the row, equal to brute force,
    without the general path. One whose walk has escapes (a token that passes a call further on)
    is left to the general path, with the same bits."""
    vocab = _random_vocab(8)
    general = []
    real = grammar.compiled.compute_mask
    monkeypatch.setattr(grammar.compiled, "compute_mask", lambda dfa, index, configs, cache: general.append(configs)
                        or real(dfa, index, configs, cache))
    cases = [(compile_schema_to_grammar({"type": "integer"}, "compact"), b"1", False),
             (compile_schema_to_grammar({"type": "number"}, "compact"), b"-1.5", False),
             (compile_schema_to_grammar({"type": "array", "items": {"type": "integer"}}, "compact"), b"[1]", False),
             (compile_schema_to_grammar({"type": "object"}, "flexible"), b'{"a":1}', False),
             (lark_to_grammar('start: "a" ("z" item)?\nitem: "b" item?'), b"a", True)]
    for ir, data, escapes in cases:
        g = grammar.compiler_for(vocab).compile(ir, deferred=True)
        g.end_precompute()
        m = g.matcher()
        assert m.accept_bytes(data)
        ((stack, d),) = m.state
        assert stack == () and g.dfa.flags[d] == FLAG_FINAL, data
        general.clear()
        bitmask = grammar.allocate_bitmask(3, vocab)
        m.fill_bitmask(bitmask, 1)
        row = bitmask[1].numpy().copy()
        want = _brute(g, m.state)
        assert _bits(row, vocab) == want and set(vocab.eos_token_ids) <= want, data
        assert (row == g.mask(m.state)).all() and (bitmask[[0, 2]] == -1).all()
        assert bool(g._state_masks[(d, False)].escapes) == escapes, data
        assert general == ([m.state] if escapes else []), data


@pytest.mark.parametrize("budget", [0.0, 1.0])
def test_a_strings_utf8_rows_are_made_at_compile(budget, monkeypatch):
    """A compile widens its strings' states to UTF-8 text (LazyDfa.upgrade_text within
    UTF8_BUDGET_S): inside a string (a body, a bounded run's step) the state's slice is the text
    slice before any walk, and the first walk builds no DFA states; with no budget the first walk
    widens it (as before). Masks equal brute force either way."""
    monkeypatch.setattr(grammar.compiled, "UTF8_BUDGET_S", budget)
    vocab = _random_vocab(9)
    schema = {"type": "object", "properties": {"s": {"type": "string"}, "t": {"type": "string", "maxLength": 4}}}
    for prefix in (b'{"s":"', b'{"t":"', b'{"t":"a'):
        g = grammar.compiler_for(vocab).compile(compile_schema_to_grammar(schema, "compact"), deferred=True)
        g.end_precompute()
        m = g.matcher()
        assert m.accept_bytes(prefix)
        ((_, d),) = m.state
        text = g.index.slices.utf8_text_slice
        assert (g.dfa.slice_of[d] == text) == (budget > 0), prefix
        before = g.dfa.num_states
        assert _bits(_fill(m)[0].numpy(), vocab) == _brute(g, m.state)
        assert g.dfa.slice_of[d] == text
        assert budget == 0 or g.dfa.num_states == before


def _fill(m: grammar.Matcher):
    bitmask = grammar.allocate_bitmask(1, m.grammar.vocab)
    m.fill_bitmask(bitmask, 0)
    return bitmask


@needs_c
def test_long_string_slices_match_brute_force(monkeypatch):
    """A state looping on the JSON string bytes takes whole slices of tokens without a walk."""
    vocab = grammar.Vocabulary([b'"', b"ab", b"a b", b'a"', b'"}', b"x\\n", b"\xc3\xa9", b"}", b'ab",'] * 2, [18], 20)
    g = _compile(compile_schema_to_grammar({"type": "object", "properties": {"s": {"type": "string"}}}, "compact"), vocab)
    m = g.matcher()
    for data in (b"{", b'"s":', b'"', b"ab"):
        assert m.accept_bytes(data)
        got = set(grammar.unpack_bitmask(_fill(m), vocab.vocab_size)[0].nonzero().flatten().tolist())
        assert got == _brute(g, m.state) == _numpy_mask(g, m.state, monkeypatch)
    assert g.dfa.slice_of[next(iter(m.state))[1]] >= 0


@pytest.mark.model
@needs_c
def test_real_tokenizer_masks_match_the_numpy_walk(smollm2_tokenizer, smollm2_vocab, bench_rows, monkeypatch):
    eos = smollm2_vocab.eos_token_ids[0]
    for row in bench_rows[:12]:
        g = _compile(compile_schema_to_grammar(row["schema"], "compact"), smollm2_vocab)
        text = json.dumps(row["valid"][0]["data"], ensure_ascii=False, separators=(",", ":"))
        m = g.matcher()
        bitmask = grammar.allocate_bitmask(2, smollm2_vocab)
        for tid in smollm2_tokenizer.encode(text, add_special_tokens=False)[:40] + [eos]:
            m.fill_bitmask(bitmask, 1)  # a miss: straight from the walk into the row
            words = g.mask(m.state)
            assert (bitmask[1].numpy() == words).all() and (bitmask[0] == -1).all()
            assert _bits(words, smollm2_vocab) == _numpy_mask(g, m.state, monkeypatch), row["id"]
            if not m.accept(tid):
                break


@pytest.mark.parametrize("schema, prefix", [
    ({"type": "object", "properties": {"alpha": {"type": "string"}}, "additionalProperties": {"type": "string"}}, b'{"'),
    ({"type": "object", "properties": {"s": {"type": "string", "minLength": 2}}}, b'{"s":"'),
    ({"type": "object", "properties": {"s": {"type": "string", "minLength": 2}}}, b'{"s":"a'),
    ({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}, b'{"s":"a'),
    ({"type": "object", "properties": {"s": {"type": "string", "maxLength": 5}}}, b'{"s":"'),
    ({"type": "object", "properties": {"s": {"type": "string", "maxLength": 9}}}, '{"s":"é'.encode()),
    ({"type": "object", "properties": {"s": {"type": "string", "minLength": 4, "maxLength": 30}}}, b'{"s":"ab'),
])
@pytest.mark.parametrize("utf8_runs", [False, True])
def test_text_shortcuts_match_brute_force(schema, prefix, utf8_runs, monkeypatch):
    """First characters of strings and extra property names (tokens `b + text`), bounded runs
    (with and without the UTF-8 check of each step that 262k vocabularies turn on)."""
    vocab = _random_vocab(3, size=600)
    g = _compile(compile_schema_to_grammar(schema, "compact"), vocab)
    g.dfa.set_utf8(0, _index(vocab).slices.utf8_text_slice, utf8_runs)
    m = g.matcher()
    assert m.accept_bytes(prefix)
    want = _brute(g, m.state)
    assert _bits(g.mask(m.state), vocab) == want
    assert _numpy_mask(g, m.state, monkeypatch) == want


@pytest.mark.parametrize("schema, prefixes", [
    ({"type": "string", "maxLength": 5000}, [b'"', b'"a', '"é'.encode(), b'"ab']),
    ({"type": "object", "properties": {"s": {"type": "string", "minLength": 3000, "maxLength": 40_000},
                                       "t": {"type": "string", "maxLength": 3}}}, [b'{"s":"', b'{"s":"ab']),
])
def test_bounded_runs_that_may_return_keep_their_longer_tokens(schema, prefixes, monkeypatch):
    """A long string is built compact (grammar/automaton/nfa.py): a character is a called rule
    whose state after one character returns. Its run of one character is not the end of what a
    token may hold: a token of more characters returns and goes on (the C walk took the tokens
    below a first byte whose subtree is all string characters for dead past the run: on SmolLM2
    every token of two characters and more was left out)."""
    tokens = [b'"', b"a", b"ab", b"abc", b"b", b"ba", b'b"', b"x", b"xy", b'"}', b"}", b"{", b":", b",",
              "é".encode(), "éa".encode(), b'"s', b'"t', b"s", b"t", b'"s":"']
    vocab = grammar.Vocabulary(tokens, [len(tokens)], len(tokens) + 2)
    g = _compile(compile_schema_to_grammar(schema, "compact"), vocab)
    assert len(g.nfa.eps) < 60_000  # built compact
    for prefix in prefixes:
        m = g.matcher()
        assert m.accept_bytes(prefix)
        want = _brute(g, m.state)
        assert any(len(vocab.token_bytes[t]) > 2 for t in want)
        assert _bits(g.mask(m.state), vocab) == want == _numpy_mask(g, m.state, monkeypatch), prefix


@pytest.mark.parametrize(("lo", "hi"), [(1, 300), (130, 5000), (0, None)])
def test_compact_long_strings_run_in_shared_blocks(lo, hi, monkeypatch):
    """In a compact grammar a long string is blocks of COMPACT_BLOCK characters inlined in one
    called rule (grammar/automaton/nfa.py `in_blocks`), not a call per character: inside a block a
    token stays in the DFA (the walk has no escapes), the masks equal brute force inside a block
    and across its end, and the lengths are exact across the blocks' ends."""
    b = COMPACT_BLOCK
    big = {"type": "string", "maxLength": 40_000}  # (makes the grammar compact)
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": lo, **({"maxLength": hi} if hi else {})},
                                               "u": big}, "required": ["s"], "additionalProperties": False}
    tokens = [b'{"s":"', b'"', b"}", b'"}', b"a", b"aa", b"aaa", b"aaaa", b'a"', b'aa"}', b"\\", b"\\n", b"ab"]
    vocab = grammar.Vocabulary(tokens, [len(tokens)], len(tokens) + 2)
    g = _compile(compile_schema_to_grammar(schema, "compact"), vocab)
    assert len(g.nfa.eps) < 60_000 and any(name.startswith("@block") for name in g.nfa.rule_names)
    top = hi if hi is not None else lo + 3 * b
    for n in sorted({n for n in (lo - 1, lo, lo + 1, lo + b - 1, lo + b, lo + b + 1, lo + 2 * b, top - 1, top, top + 1) if n >= 0}):
        m = g.matcher()
        assert m.accept_bytes(b'{"s":"' + b"a" * n + b'"}') == (lo <= n and (hi is None or n <= hi)), n
    for n in (lo + b // 2, lo + b - 3, lo + b - 1, lo + b, min(top, lo + 2 * b) - 2):
        m = g.matcher()
        assert m.accept_bytes(b'{"s":"' + b"a" * n)
        want = _brute(g, m.state)
        assert _bits(g.mask(m.state), vocab) == want == _numpy_mask(g, m.state, monkeypatch), n
    m = g.matcher()
    assert m.accept_bytes(b'{"s":"' + b"a" * (lo + b // 2))
    g.mask(m.state)
    assert len(m.state) <= 3  # a block under way, the last one's, the shorter rest's (`upto`, final everywhere)
    four = tokens.index(b"aaaa")  # taken by a state's own walk (in the DFA), not through returns
    assert any(four in _bits(dense(g._state_masks[(d, bool(stack))].words), vocab) for stack, d in m.state)


@needs_c
def test_tokens_deeper_than_the_walks_stack_arrays(monkeypatch):
    """A token longer than the walk keeps on the C stack (1024 bytes): the per-depth arrays
    move to the heap and the mask is still exact."""
    tokens = [b"a", b"b", b"ab", b"a" * 1500, b"a" * 1499 + b"b", b"ab" * 700, b"a" * 1100 + b"c"]
    vocab = grammar.Vocabulary(tokens, [len(tokens)], len(tokens) + 1)
    g = _compile(Grammar({"start": regex_to_node(r"a*b?")}), vocab)
    m = g.matcher()
    want = _brute(g, m.state)
    assert want == {0, 1, 2, 3, 4, len(tokens)}
    assert _bits(g.mask(m.state), vocab) == want == _numpy_mask(g, m.state, monkeypatch)


@needs_c
def test_walk_tables_reject_bad_input():
    vocab = _random_vocab(0, size=50)
    index = _index(vocab)
    tables = index.tables
    g = _grammars(vocab)[0]
    d = g.dfa.rule_start[0]
    with pytest.raises(ValueError):
        c_walk.mask(tables, g.dfa, index, d, False, np.empty(vocab.num_words + 1, np.int32))
    with pytest.raises(TypeError):
        c_walk.mask(index, g.dfa, index, d, False, np.empty(vocab.num_words, np.int32))
    out = np.empty(vocab.num_words, np.int32)
    for rows, row in ((np.empty((2, vocab.num_words + 1), np.int32), 0), (np.empty(vocab.num_words, np.int32), 0)):
        with pytest.raises(ValueError):
            c_walk.mask(tables, g.dfa, index, d, False, out, rows, row)
    for row in (-1, 2):
        with pytest.raises(IndexError):
            c_walk.mask(tables, g.dfa, index, d, False, out, np.empty((2, vocab.num_words), np.int32), row)
    for state in (-1, g.dfa.num_states):
        with pytest.raises(IndexError):
            c_walk.mask(tables, g.dfa, index, state, False, np.empty(vocab.num_words, np.int32))
        with pytest.raises(IndexError):
            c_walk.run(g.dfa, state, b"{", 0, False)
    esc = np.array([1, d, 0], np.int32).tobytes()
    for items, error in (([((), esc[:8])], ValueError), ([((g.dfa.num_states,), esc)], IndexError),
                         ([((), np.array([1, g.dfa.num_states, 0], np.int32).tobytes())], IndexError),
                         ([((), np.array([1, d, tables.all_nodes], np.int32).tobytes())], IndexError),
                         ([([], esc)], TypeError), ((((), esc),), TypeError)):
        with pytest.raises(error):
            c_walk.resolve(tables, g.dfa, items, np.zeros(vocab.num_words, np.int32))
    with pytest.raises(ValueError):
        c_walk.resolve(tables, g.dfa, [((), esc)], np.zeros(vocab.num_words + 1, np.int32))
    rows = np.zeros((2, vocab.num_words), np.int32)
    with pytest.raises(IndexError):
        c_walk.put(rows, 0, np.array([vocab.num_words, 1], np.int32).tobytes(), None)  # a word past the row
    with pytest.raises(ValueError):
        c_walk.put(rows, 2, b"", None)
    with pytest.raises(ValueError):
        c_walk.put(rows, 0, b"", np.zeros(vocab.num_words + 1, np.int32))
    trie = list(index.trie.flat.arrays())
    bad_end = trie[2].copy()
    bad_end[0] = 0
    text = (0, index.slices.utf8_text_slice, bytes(128), np.zeros(0, np.int32), np.zeros(129, np.int32),
            vocab.eos_words, vocab.eos_words)
    with pytest.raises(ValueError):
        c_walk.Tables(vocab.num_words, tuple(trie[:2] + [bad_end] + trie[3:]), (), text)
    with pytest.raises(ValueError):
        c_walk.Tables(vocab.num_words, tuple(trie), (), text)  # the text slice is missing


@needs_c
def test_tokens_across_several_returns_match_brute_force(monkeypatch):
    """Tokens that return from nested rules and go on (`]],[`): the C walk's escapes are
    resolved by walking the trie below where they could return, the stack followed in C
    (grammar.masks._walk resolve)."""
    tokens = [b"[", b"]", b",", b"1", b"2", b"[[", b"]]", b"]]]", b"]],[", b"],[[", b"1]]", b"1],[2", b"]],[[1",
              b"2]]]]", b",[", b"],", b"[1,", b"]]x", b"12", b"1]]],[", b"]],[[]]"]
    vocab = grammar.Vocabulary(tokens, [len(tokens)], len(tokens) + 2)
    g = _compile(lark_to_grammar(LARK), vocab)
    m = g.matcher()
    checked = 0
    for data in (b"[", b"[", b"[", b"1", b"]", b",", b"[", b"2", b"2", b"]", b"]"):
        assert m.accept_bytes(data)
        want = _brute(g, m.state)
        assert _bits(g.mask(m.state), vocab) == want == _numpy_mask(g, m.state, monkeypatch)
        checked += len(want)
    assert checked > 30
    assert any(sm.escapes for sm in g._state_masks.values())  # the subtree walks were needed


@needs_c
def test_resolve_keeps_its_memory_between_calls_and_grammars():
    """resolve() keeps its maps, and the calling states' pairs of the last LazyDfa it resolved
    against, from one call to the next (grammar/masks/_walk.c kept_resolver): resolutions
    interleaved between grammars, after refused calls, on two threads at once, and one made inside
    another's call of the LazyDfa's Python `calls` (with memory of its own then) all give brute
    force's bits."""
    vocab = _random_vocab(5)
    index = _index(vocab)
    tables, n = index.tables, vocab.num_words
    rng = random.Random(0)

    def cases_of(g):
        out = []
        for state in _random_walks_match_brute_force(g, rng, 4, 10):
            for stack, d in state:
                if g.dfa.flags[d]:  # (a call or a return at d itself: compute_mask's expansion)
                    continue
                raw = c_walk.mask(tables, g.dfa, index, d, bool(stack), np.zeros(n, np.int32))
                if raw:
                    out.append((g, stack, d))
        return out

    def resolved(g, stack, d):
        words = np.zeros(n, np.int32)
        raw = c_walk.mask(tables, g.dfa, index, d, bool(stack), words)
        c_walk.resolve(tables, g.dfa, [(stack, raw)], words)
        return _bits(words, vocab) | (set(vocab.eos_token_ids) if g.is_complete(frozenset(((stack, d),))) else set())

    irs = [compile_schema_to_grammar(s, "compact") for s in SCHEMAS] + [lark_to_grammar(LARK)]
    grammars = [_compile(ir, vocab) for ir in irs]
    cases = [c for g in grammars for c in cases_of(g)]
    assert len({id(g) for g, _, _ in cases}) >= 3 and len(cases) > 20
    want = [_brute(g, frozenset(((stack, d),))) for g, stack, d in cases]
    bad = np.array([1, 0, tables.all_nodes], np.int32).tobytes()
    for i, a in enumerate(cases):  # each case right after each other one (the kept calls are the last grammar's)
        for j, b in enumerate(cases):
            assert resolved(*a) == want[i]
            if (i + j) % 11 == 3:  # a refused call in between (a trie node out of range) leaves nothing behind
                with pytest.raises(IndexError):
                    c_walk.resolve(tables, a[0].dfa, [((), bad)], np.zeros(n, np.int32))
            assert resolved(*b) == want[j], (i, j)
    # two threads resolving at once (the GIL changes hands inside a resolve's calls of Python)
    errors = []

    def worker(order):
        try:
            for _ in range(3):
                for i in order:
                    if resolved(*cases[i]) != want[i]:
                        errors.append(i)
        except Exception as exc:  # noqa: BLE001 - reported by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(order,)) for order in
               (list(range(len(cases))), list(reversed(range(len(cases)))))]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the GIL changes hands as often as it can
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    # a fresh grammar's first resolve asks its LazyDfa for calls: another resolve made meanwhile
    outer = _compile(lark_to_grammar(LARK), vocab)
    nested = []
    inner = cases[0]
    real_calls = outer.dfa.calls

    def calls(d):
        nested.append(resolved(*inner) == _brute(inner[0], frozenset(((inner[1], inner[2]),))))
        return real_calls(d)

    outer_cases = cases_of(outer)
    assert outer_cases
    outer.dfa.calls = calls
    outer.dfa._calls.clear()  # (the walks above asked already)
    resolved(*cases[1])  # another LazyDfa's: the kept calls are forgotten
    for g, stack, d in outer_cases:
        assert resolved(g, stack, d) == _brute(g, frozenset(((stack, d),)))
    assert nested and all(nested)


@needs_c
@pytest.mark.parametrize("seed", [5, 6])
def test_rest_tries_match_brute_force(seed, monkeypatch):
    """String states walk the text slice's rest tries (tokens by what follows their longest run
    of string characters) instead of the whole trie; escapes inside a rest trie (a quote, then a
    return from a hoisted item) go on below its nodes. Masks equal brute force on random walks."""
    monkeypatch.setattr(rest_trie, "MAX_REST_SHARE", 1.0)  # the random vocabulary is mostly outside
    vocab = _random_vocab(seed)
    tables = _index(vocab).tables
    assert tables.all_nodes > len(_index(vocab).trie.flat.byte)
    rng = random.Random(seed)
    items = {"type": "array", "items": {"type": "object", "properties": {"s": {"type": "string"}, "t": {"type": "string"}},
                                        "required": ["s"]}, "minItems": 2}
    schemas = SCHEMAS + [items, {"type": "object", "properties": {"x": {"type": "string", "minLength": 1}}}]
    for schema in schemas:
        g = _compile(compile_schema_to_grammar(schema, "compact"), vocab)
        assert sum(1 for _ in _random_walks_match_brute_force(g, rng, 3, 30)) > 3, schema


def test_rest_tries_hold_every_token_outside_the_slice():
    """Each token that is not string text is in one of the first two rest tries, under the bytes
    after its longest prefix of whole string characters (none: the first trie); the third keys
    the second's ASCII-led tokens by their first byte; the fourth holds them all, whole."""
    tokens = [b"ab", b'a"', b'"', b'x",', b"\\n", b"\xc3\xa9\xc3", b"\xc3", b"\xc3\xa9", b"b\n", b'a"'] + [None]
    vocab = grammar.Vocabulary(tokens, [len(tokens) - 1], len(tokens))
    index = _index(vocab)
    text = index.slice_list[index.slices.utf8_text_slice]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rest_trie, "MAX_REST_SHARE", 1.0)
        first, after, keyed, whole = rest_trie.rest_tries(index.trie, text)

    def rests(arrays):  # (bytes, token id) of each row, read back from the flat trie
        byte, depth, end, lo, ids, _ = arrays
        out, path = [], []
        for i in range(len(byte)):
            path = path[: depth[i] - 1] + [int(byte[i])]
            out += [(bytes(path), int(ids[r])) for r in range(lo[i], lo[i + 1])]
        return sorted(out)

    assert rests(first) == [(b'"', 2), (b"\\n", 4), (b"\xc3", 6)]
    assert rests(after) == sorted([(b'"', 1), (b'"', 9), (b'",', 3), (b"\n", 8), (b"\xc3", 5)])
    assert rests(keyed) == sorted([(b'a"', 1), (b'a"', 9), (b'x",', 3), (b"b\n", 8)])  # ASCII first byte + rest
    assert rests(whole) == sorted((tokens[i], i) for i in (1, 2, 3, 4, 5, 6, 8, 9))  # all of them, whole


@needs_c
@pytest.mark.parametrize("seed", [5, 6])
def test_states_closed_on_text_take_the_text_tokens_whole(seed, monkeypatch):
    """From a state closed on string text (an open object's key start and key trie, a string with an
    unanchored pattern) every token of text only is allowed, whatever states it passes: the walk
    takes the text slice whole and walks only the other tokens, by their whole bytes
    (the last of rest_trie.rest_tries). Masks equal brute force; the states said closed are, and the
    others (a closed object's keys, a bounded string, a declared key with a non-ASCII letter, where
    multi-byte characters part ways) are walked as before."""
    monkeypatch.setattr(rest_trie, "MAX_REST_SHARE", 1.0)  # (the random vocabulary is half outside text)
    vocab = _random_vocab(seed)
    index = _index(vocab)
    text = index.slice_list[index.slices.utf8_text_slice]
    assert rest_trie.rest_tries(index.trie, text) is not None
    text_tokens = [t for t in range(len(vocab.token_bytes)) if (int(text.words[t >> 5]) >> (t & 31)) & 1]
    rng = random.Random(seed)
    closed, walked = set(), set()
    for k, (schema, key_start_closed) in enumerate((
            ({"type": "object", "properties": {"alpha": {"type": "integer"}, "beta": {"type": "string"}}}, True),
            ({"type": "object", "properties": {"alpha": {"type": "integer"}}, "additionalProperties": False}, False),
            ({"type": "object", "properties": {"zé": {"type": "integer"}}}, False),
            ({"type": "array", "items": {"type": "string", "pattern": "ab"}}, None),
            ({"type": "array", "items": {"type": "string", "maxLength": 3}}, None))):
        g = _compile(compile_schema_to_grammar(schema, "compact", False), vocab)
        if k == 0:
            g_open = g
        if key_start_closed is not None:
            key_start = g.advance(g.initial, b'{"')
            assert g.dfa.text_closed(next(iter(key_start))[1]) == key_start_closed, schema
        for state in _random_walks_match_brute_force(g, rng, 8, 12):
            for _, d in state:
                walked.add((k, d))  # (by schema: a freed grammar's id may be the next one's)
                if g.dfa.text_closed(d):
                    closed.add((k, d))
                    assert all(g.advance(frozenset((((), d),)), vocab.token_bytes[t]) for t in text_tokens), d
    assert 5 < len(closed) < len(walked)
    # a closed state's mask (all text tokens, a few more) is kept apart from the text slice's words
    # (grammar/masks/state_masks.py slice_base), which it holds whole
    on_text = [(d, sm) for (d, _), sm in g_open._state_masks.items() if g_open.dfa.closed_known(d)]
    assert on_text
    for d, sm in on_text:
        assert slice_base(g_open.dfa, index, d) is text.words
        assert ((dense(sm.words) & text.words) == text.words).all()
        assert type(sm.words) is not SparseWords or sm.words.base is text.words


@needs_c
@pytest.mark.parametrize("seed", [9, 10])
def test_long_tokens_in_a_long_bounded_run(seed, monkeypatch):
    """A maxLength string longer than a run is followed (MAX_RUN characters): its run rests and
    words have the tokens of at most that many characters first, and the tokens of more (long
    words, whitespace runs, a long prefix before a quote) are walked from the long trie
    (rest_trie.long_trie) instead of the whole trie. Masks equal brute force at every length."""
    monkeypatch.setattr(rest_trie, "MAX_REST_SHARE", 1.0)
    base = _random_vocab(seed)
    longs = [b"a" * 20, b"ab" * 9 + b'"', "é".encode() * 17, b"abcdefghijklmnopqrstu", b"z" * 17 + b"\\n",
             b" " * 24, b"0123456789" * 3, "日".encode() * 20 + b'",']
    tokens = [t for t in base.token_bytes if t is not None] + longs + [None]
    vocab = grammar.Vocabulary(tokens, [len(tokens) - 1], len(tokens) + 5)
    index = _index(vocab)
    text = index.slice_list[index.slices.utf8_text_slice]
    assert rest_trie.long_trie(index.trie, text, MAX_RUN) is not None
    rng = random.Random(seed)
    long_runs = 0
    for schema in ({"type": "string", "maxLength": 40}, {"type": "string", "minLength": 3, "maxLength": 25},
                   {"type": "array", "items": {"type": "string", "maxLength": 60}}):
        g = _compile(compile_schema_to_grammar(schema, "compact"), vocab)
        for state in _random_walks_match_brute_force(g, rng, 6, 14):
            d = next(iter(state))[1]
            long_runs += g.dfa.slice_of[d] == text.id and g.dfa.absorb[d] == MAX_RUN
    assert long_runs > 5


@needs_c
@pytest.mark.parametrize("seed", [7, 8])
@pytest.mark.parametrize("run_rests", [False, True])
def test_bounded_utf8_runs_count_characters(seed, run_rests, monkeypatch):
    """A maxLength string counts characters (one DFA step per UTF-8 character): the walk skips subtrees by their tokens' character counts and takes the slice's
    tokens of at most that many characters; with the run rests (every share of the vocabulary
    allowed), the other tokens by their rests from the state their prefix's length reaches.
    Masks equal brute force, at every length."""
    monkeypatch.setattr(rest_trie, "MAX_REST_SHARE", 1.0 if run_rests else 0.0)
    vocab = _random_vocab(seed)
    index = _index(vocab)
    assert (rest_trie.run_rests(index.trie, index.slice_list[index.slices.utf8_text_slice]) is not None) == run_rests
    rng = random.Random(seed)
    bounded = 0
    for schema in ({"type": "string", "maxLength": 5}, {"type": "string", "minLength": 2, "maxLength": 9},
                   {"type": "object", "properties": {"s": {"type": "string", "maxLength": 4}}}):
        g = _compile(compile_schema_to_grammar(schema, "compact"), vocab)
        assert g.dfa.utf8[2]  # runs
        for state in _random_walks_match_brute_force(g, rng, 4, 30):
            d = next(iter(state))[1]
            bounded += g.dfa.slice_of[d] == index.slices.utf8_text_slice and 0 < g.dfa.absorb[d] < 1 << 30
    assert bounded > 5  # the character-counting runs were walked


@needs_c
def test_kept_masks_read_back_as_walked():
    """A walked mask is kept as its words apart from zero or from its slice's words when few
    differ (and it holds the base whole), else dense; every reader (dense, write_row, or_into)
    sees the same bits."""
    rng = np.random.default_rng(0)
    base = rng.integers(-2**31, 2**31, 300, dtype=np.int64).astype(np.int32)
    sparse = np.zeros(300, np.int32)
    sparse[[3, 77, 299]] = [5, -1, 1 << 30]
    over_base = base.copy()
    over_base[[0, 150]] |= np.array([1 << 7, 3], dtype=np.int32)
    not_over = base.copy()
    assert base[9]
    not_over[9] = 0  # lacks bits of the base: neither base serves
    for words, want_kind in ((sparse, "zero"), (over_base, "base"), (not_over, "dense"), (base, "base")):
        k = kept(words.copy(), base, c_walk.sparse, c_walk.put)
        kind = "dense" if type(k) is np.ndarray else "zero" if k.base is None else "base"
        assert kind == want_kind
        assert (dense(k) == words).all()
        rows = np.full((3, 300), 7, np.int32)
        write_row(k, rows, 1)
        assert (rows[1] == words).all() and (rows[[0, 2]] == 7).all()
        acc = np.zeros((2, 300), np.int32)
        acc[1, 5] = 1 << 4
        or_into(acc, 1, k, c_walk.or_put)
        want = words.copy()
        want[5] |= 1 << 4
        assert (acc[1] == want).all() and not acc[0].any()
    assert kept(np.arange(300, dtype=np.int32), None, c_walk.sparse, c_walk.put).__class__ is np.ndarray  # too many: dense


@needs_c
@pytest.mark.parametrize("pattern", [r"[a-z]{3}-[0-9]{2}", r"[a-z0-9]{2,5}(-[a-z]{1,3})?", r"[a-zA-Z0-9]{20}x",
                                     r"[0-9a-f]{8}-[0-9a-f]{4}"])
@pytest.mark.parametrize("run_rests", [False, True])
def test_bounded_runs_match_brute_force(pattern, run_rests, monkeypatch):
    """A bounded run of a slice (letters and digits here) takes the slice's short tokens whole;
    where the run ends exactly (no slice character goes on), longer tokens of the slice die and
    their subtrees are skipped, not walked; with the run rests, tokens that leave the slice are
    walked by their rests from the state their prefix's length reaches. Masks equal brute force
    along random walks."""
    monkeypatch.setattr(rest_trie, "MAX_REST_SHARE", 1.0 if run_rests else 0.0)
    rng = random.Random(pattern)
    alphabet = [b"a", b"b", b"c", b"x", b"z", b"0", b"1", b"9", b"-", b"A", b"f", b" "]
    tokens = list(alphabet) + [b"".join(rng.choice(alphabet[:-1]) for _ in range(rng.randint(2, 9))) for _ in range(500)]
    vocab = grammar.Vocabulary(tokens + [None], [len(tokens)], len(tokens) + 2)
    assert (rest_trie.run_rests(_index(vocab).trie, _index(vocab).slice_list[1]) is not None) == run_rests  # letters and digits
    g = _compile(Grammar({"start": regex_to_node(pattern)}), vocab)
    assert sum(1 for _ in _random_walks_match_brute_force(g, rng, 6, 25)) > 6


@needs_c
def test_lowercase_loops_take_the_lowercase_slice():
    """A state looping on lowercase letters and a space (27 bytes) has a dominant target and the
    canonical lowercase slice: its pure subtrees are taken whole, not walked. Masks equal brute
    force along random walks."""
    rng = random.Random(11)
    alphabet = [b"a", b"b", b"q", b"z", b" ", b"A", b"-", b"0", b'"']
    tokens = list(alphabet) + [b"".join(rng.choice(alphabet) for _ in range(rng.randint(2, 7))) for _ in range(400)]
    vocab = grammar.Vocabulary(tokens + [None], [len(tokens)], len(tokens) + 2)
    lower = next(sl.id for sl in _index(vocab).slice_list if sl.in_set.sum() == 26 and sl.in_set[ord("a")])
    g = _compile(compile_schema_to_grammar({"type": "string", "pattern": "^([a-z]|[ ])*$"}, "compact"), vocab)
    looping = 0
    for state in _random_walks_match_brute_force(g, rng, 5, 20):
        d = next(iter(state))[1]
        g.mask(state)
        looping += int(g.dfa.slice_of[d]) == lower
    assert looping >= 5


def test_is_empty_reads_every_kind_of_kept_mask():
    """words.is_empty, the compile's check that a grammar allows some first token, agrees with numpy's any."""
    put = walk_ref.put
    zero = np.zeros(64, dtype=np.int32)
    one = zero.copy()
    one[40] = 1 << 7
    pairs = lambda *pv: np.array([x for p in pv for x in p], dtype=np.int32).tobytes()  # noqa: E731
    cases = [zero, one, SparseWords(b"", None, 64, put), SparseWords(pairs((3, 0)), None, 64, put),
             SparseWords(pairs((3, 0), (9, -(1 << 31))), None, 64, put), SparseWords(b"", one, 64, put),
             SparseWords(pairs((40, 0)), zero, 64, put), SparseWords(pairs((2, 5)), zero, 64, put)]
    for words in cases:
        assert is_empty(words) == (not dense(words).any()), words
    assert [is_empty(w) for w in cases] == [True, False, True, True, False, False, True, False]
    g = grammar.compile_json_schema({"type": "integer"}, byte_vocab())
    assert not g.allows_nothing(g.initial)
