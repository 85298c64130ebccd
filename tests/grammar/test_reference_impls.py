"""Each C core against its Python reference with the same signature: the row builder
(grammar/automaton/_dfa.c vs dfa_ref.py) and the mask walk (grammar/masks/_walk.c vs walk_ref.py),
and the constants of grammar/include/grammar_core.h against grammar/automaton/constants.py."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import grammar
from grammar.automaton import constants, dfa_ref
from grammar.automaton.dfa import CBuilder
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.frontends.lark import lark_to_grammar
from grammar.frontends.regex import regex_to_node
from grammar.ir import Grammar
from grammar.masks import walk_ref
from grammar.masks.index import TokenIndex, c_walk
from grammar.masks.state_masks import slice_base
from grammar.masks.words import dense, kept
from tests.grammar.test_mask_paths import LARK, SCHEMAS, _random_vocab

needs_c = pytest.mark.skipif(CBuilder is None or c_walk is None, reason="grammar's C extensions not built")
HEADER_NAMES = {"UNKNOWN", "DEAD", "FLAG_CALLS", "FLAG_FINAL", "NO_SLICE", "SLICE_UNKNOWN", "UNBOUNDED",
                "MIN_DOMINANT_BYTES", "MAX_STACK", "MAX_CONFIGS", "MAX_SEQS", "MAX_CLOSED_NODES", "MAX_CLOSED_ROWS",
                "MAX_CLOSURE_ROWS", "WS_UNKNOWN", "NOT_WS_RUN", "WS_MAX_RUN"}  # fmt: skip


def _reference(vocab: grammar.Vocabulary) -> grammar.Compiler:
    return vocab.derived("reference compiler", lambda: grammar.Compiler(vocab, walk=walk_ref, builder=dfa_ref.Builder))


def _sources() -> list[Grammar]:
    out = [compile_schema_to_grammar(s, ws) for s in SCHEMAS for ws in ("compact", "flexible")]
    return out + [lark_to_grammar(LARK), Grammar({"start": regex_to_node(r"[a-z]{2,}(-[0-9]+)?|\d{3}")})]


def _fill(m: grammar.Matcher, vocab: grammar.Vocabulary) -> np.ndarray:
    bitmask = grammar.allocate_bitmask(2, vocab)
    m.fill_bitmask(bitmask, 1)
    return bitmask[1].numpy().copy()


@needs_c
def test_the_header_constants_are_pythons():
    from grammar.automaton import _dfa
    from grammar.masks import _walk

    want = {name: getattr(constants, name) for name in HEADER_NAMES}
    assert _dfa.CONSTANTS == want and _walk.CONSTANTS == want


@needs_c
@pytest.mark.parametrize("seed", [0, 1])
def test_reference_compiler_gives_the_c_masks(seed):
    """The whole pipeline on the references (rows in Python, masks by the numpy walk) against the C
    one: the same masks, accepted tokens and completeness along random walks of allowed tokens."""
    vocab = _random_vocab(seed)
    rng = random.Random(seed)
    eos = set(vocab.eos_token_ids)
    for source in _sources():
        fast, slow = grammar.compiler_for(vocab).compile(source), _reference(vocab).compile(source)
        assert type(slow.dfa.builder) is dfa_ref.Builder and slow.index.walk is walk_ref
        mf, ms = fast.matcher(), slow.matcher()
        for _ in range(20):
            words = _fill(mf, vocab)
            assert (words == _fill(ms, vocab)).all()
            assert mf.is_completed() == ms.is_completed()
            bits = np.unpackbits(words.view(np.uint8), bitorder="little")[: vocab.vocab_size]
            allowed = set(np.nonzero(bits)[0].tolist())
            if not allowed - eos:
                break
            bad = rng.choice([t for t in range(vocab.vocab_size) if t not in allowed])
            assert not mf.accept(bad) and not ms.accept(bad)
            tid = rng.choice(sorted(allowed - eos))
            assert mf.accept(tid) and ms.accept(tid)


@needs_c
@pytest.mark.model
def test_reference_compiler_on_a_real_tokenizer(smollm2_tokenizer, smollm2_vocab, bench_rows):
    eos = smollm2_vocab.eos_token_ids[0]
    for row in bench_rows[:5]:
        source = compile_schema_to_grammar(row["schema"], "compact")
        fast, slow = grammar.compiler_for(smollm2_vocab).compile(source), _reference(smollm2_vocab).compile(source)
        mf, ms = fast.matcher(), slow.matcher()
        text = json.dumps(row["valid"][0]["data"], ensure_ascii=False, separators=(",", ":"))
        for tid in smollm2_tokenizer.encode(text, add_special_tokens=False)[:25] + [eos]:
            assert (_fill(mf, smollm2_vocab) == _fill(ms, smollm2_vocab)).all(), row["id"]
            assert mf.accept(tid) == ms.accept(tid), row["id"]


@needs_c
def test_run_matches_on_one_dfa():
    vocab = _random_vocab(2, size=80)
    g = grammar.compiler_for(vocab).compile(lark_to_grammar(LARK))
    rng = random.Random(2)
    for _ in range(200):
        data = bytes(rng.choice(b"[],12") for _ in range(rng.randint(0, 8)))
        d = rng.randrange(g.dfa.num_states)
        for stop_final in (False, True):
            assert c_walk.run(g.dfa, d, data, 0, stop_final) == walk_ref.run(g.dfa, d, data, 0, stop_final)
    for walk in (c_walk, walk_ref):
        with pytest.raises(IndexError):
            walk.run(g.dfa, g.dfa.num_states, b"[", 0, False)


@needs_c
def test_sparse_and_put_match():
    rng = np.random.default_rng(0)
    for trial in range(50):
        n = int(rng.integers(1, 90))
        base = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32) & rng.integers(0, 2, n).astype(np.int32) * -1
        words = base.copy()
        for i in rng.integers(0, n, int(rng.integers(0, 8))):
            words[i] |= np.int32(int(rng.integers(1, 1 << 20)))
        if trial % 5 == 0:
            words[0] = 0  # may drop bits of the base
        for limit in (0, 3, 8):
            for args in ((words, limit), (words, limit, base)):
                got, want = c_walk.sparse(*args), walk_ref.sparse(*args)
                assert got == want, (trial, limit, len(args))
                if got is not None:
                    rows_c, rows_r = np.full((2, n), 5, np.int32), np.full((2, n), 5, np.int32)
                    base_arg = args[2] if len(args) == 3 else None
                    c_walk.put(rows_c, 1, got, base_arg)
                    walk_ref.put(rows_r, 1, got, base_arg)
                    assert (rows_c == rows_r).all() and (rows_c[1] == words).all()


@needs_c
def test_mask_kept_is_mask_then_sparse_in_both_walks():
    """mask_kept: the walk, the row and the mask as words.py keeps it, in one call; against mask()
    and sparse() on the same DFA, and the C walk against the reference, with and without a base;
    mask_ends with a base and a limit gives the same kept mask beside its end states."""
    vocab = _random_vocab(1)
    ref = vocab.derived("reference index", lambda: TokenIndex(vocab, walk_ref))
    n = vocab.num_words
    limit = n // 4
    seen = set()
    for source in _sources():
        g = grammar.compiler_for(vocab).compile(source)
        for d in range(min(g.dfa.num_states, 40)):
            for nonempty in (False, True):
                for base in (None, slice_base(g.dfa, g.index, d), np.zeros(n, np.int32)):
                    got = []
                    for walk, index in ((c_walk, g.index), (walk_ref, ref)):
                        out, rows = np.zeros(n, np.int32), np.full((2, n), 7, np.int32)
                        got.append((walk.mask_kept(index.tables, g.dfa, index, d, nonempty, out, rows, 1, base, limit),
                                    rows.copy()))
                    (c, rows_c), (r, rows_r) = got
                    assert (c[0] is None) == (r[0] is None) and (rows_c == rows_r).all(), (d, nonempty)
                    assert c[0] is not None or c == r, (d, nonempty)  # (escapes: the same tokens, written apart)
                    escapes, pairs, based = c
                    out = np.zeros(n, np.int32)
                    assert c_walk.mask(g.index.tables, g.dfa, g.index, d, nonempty, out) == escapes
                    ends_c = c_walk.mask_ends(g.index.tables, g.dfa, g.index, d, nonempty, np.zeros(n, np.int32), base, limit)
                    ends_r = walk_ref.mask_ends(ref.tables, g.dfa, ref, d, nonempty, np.zeros(n, np.int32), base, limit)
                    plain = c_walk.mask_ends(g.index.tables, g.dfa, g.index, d, nonempty, np.zeros(n, np.int32))
                    assert ends_c[:2] == plain and ends_c[2:] == ends_r[2:], (d, nonempty)  # (kept: escapes or not)
                    assert escapes is not None or ends_c[2:] == (pairs, based)
                    if escapes is not None:
                        assert pairs is None and not based and (rows_c[1] == 7).all()
                        continue
                    assert (rows_c[1] == out).all() and (rows_c[0] == 7).all()
                    want = c_walk.sparse(out, limit, base) if base is not None else None
                    assert (pairs, based) == ((want, True) if want is not None else (c_walk.sparse(out, limit), False))
                    seen.add((based, pairs is None))
    assert {(True, False), (False, False)} <= seen  # masks kept apart from a base, and from zero


@needs_c
def test_or_put_matches():
    """or_put ORs a base (or nothing) and (position, value) pairs, repeats included, into one row,
    leaving the others; a word past the row or a short base is refused as put refuses it."""
    rng = np.random.default_rng(2)
    for trial in range(40):
        n = int(rng.integers(1, 300))
        start = rng.integers(-2**31, 2**31, (3, n), dtype=np.int64).astype(np.int32)
        base = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32) if trial % 2 else None
        pos = rng.integers(0, n, int(rng.integers(0, 12)))
        val = rng.integers(-2**31, 2**31, len(pos), dtype=np.int64).astype(np.int32)
        pairs = np.stack([pos.astype(np.int32), val], axis=1).astype(np.int32).tobytes()
        want = start.copy()
        if base is not None:
            want[1] |= base
        for p, v in zip(pos, val):
            want[1, p] |= v
        for walk in (c_walk, walk_ref):
            rows = start.copy()
            walk.or_put(rows, 1, pairs, base)
            assert (rows == want).all(), (trial, walk.__name__)
    for walk in (c_walk, walk_ref):
        rows = np.zeros((2, 4), np.int32)
        with pytest.raises(IndexError):
            walk.or_put(rows, 0, np.array([4, 1], np.int32).tobytes(), None)
        with pytest.raises(ValueError):
            walk.or_put(rows, 2, b"", None)
        with pytest.raises(ValueError):
            walk.or_put(rows, 0, b"", np.zeros(5, np.int32))


@needs_c
def test_sparse_matches_on_long_masks_at_its_limits():
    """sparse() scans blocks of 16 words at once: long masks with a short last block, the
    number of differing words at, under and over the limit (the stack buffer and the heap
    one), and base bits lost in a full block or in the last one."""
    rng = np.random.default_rng(1)
    for trial in range(40):
        n = int(rng.integers(17, 2100))
        base = rng.integers(0, 2**31, n, dtype=np.int64).astype(np.int32) * (rng.random(n) < 0.5)
        words = base.copy()
        pos = rng.choice(n, int(rng.integers(1, min(n, 700))), replace=False)
        words[pos] |= rng.integers(1, 2**31, len(pos), dtype=np.int64).astype(np.int32)
        diffs = int((words != base).sum())
        if trial % 4 == 1:
            words[n - 1] = 0  # may drop base bits in the last block
        if trial % 4 == 2:
            words[int(rng.integers(0, n - n % 16))] = 0  # ...or in a full one
        for limit in (0, diffs - 1, diffs, diffs + 1, 300, n):
            for args in ((words, max(limit, 0)), (words, max(limit, 0), base)):
                assert c_walk.sparse(*args) == walk_ref.sparse(*args), (trial, limit, len(args))


@needs_c
def test_mask_ends_agree_on_the_words():
    """mask_ends: the same tokens as mask(); the end states (an ordering hint for precompute) are
    states of the DFA, the first one that of a longest allowed token."""
    vocab = _random_vocab(4)
    compiler = grammar.compiler_for(vocab)
    reference = _reference(vocab)
    for source in _sources():
        g = compiler.compile(source)
        for d in range(min(g.dfa.num_states, 30)):
            for nonempty in (False, True):
                got, want = np.zeros(vocab.num_words, np.int32), np.zeros(vocab.num_words, np.int32)
                _, ends_c = c_walk.mask_ends(compiler.index.tables, g.dfa, compiler.index, d, nonempty, got)
                _, ends_r = walk_ref.mask_ends(reference.index.tables, g.dfa, reference.index, d, nonempty, want)
                assert (got == want).all(), d
                assert all(0 <= s < g.dfa.num_states for s in ends_c + ends_r)
                assert bool(ends_c) == bool(want.any())


def test_cold_fills_keep_masks_apart_from_the_base_their_walk_left(smollm2_tokenizer, smollm2_vocab, bench_rows):
    """A cold fill asks a state's slice base before its walk (mask_kept keeps the mask apart from it
    in the same call); where the walk prepared or widened the slice or found the state closed on
    text and that base kept nothing, the mask is kept again from the base the walk left: a state
    mask is a dense copy only where words.kept makes one from the state's final base too."""
    eos = smollm2_tokenizer.eos_token_id
    bitmask = grammar.allocate_bitmask(1, smollm2_vocab)
    checked, loose = 0, []
    for row in [r for r in bench_rows if r["valid"]][:20]:
        try:
            g = grammar.compiler_for(smollm2_vocab).compile(compile_schema_to_grammar(row["schema"], "flexible"))
        except grammar.GrammarError:
            continue
        m = g.matcher()
        text = json.dumps(row["valid"][0]["data"], ensure_ascii=False, separators=(",", ":"))
        for tid in smollm2_tokenizer.encode(text, add_special_tokens=False) + [eos]:
            m.fill_bitmask(bitmask, 0)
            if not m.accept(tid):
                break
        walk = g.index.walk
        for (d, _), sm in list(g._state_masks.items()):
            want = kept(dense(sm.words).copy(), slice_base(g.dfa, g.index, d), walk.sparse, walk.put)
            assert (dense(sm.words) == dense(want)).all()
            if type(sm.words) is np.ndarray and type(want) is not np.ndarray:
                loose.append((row["id"], d))
            checked += 1
    assert checked > 500 and not loose, loose
