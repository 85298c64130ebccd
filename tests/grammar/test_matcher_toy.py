"""Matcher behaviour on vocabularies typed into the test: exact allowed sets, rollback, EOS, bitmasks."""

from __future__ import annotations

import pytest
import torch

import grammar
from tests.grammar.helpers import allowed

# id:        0     1     2      3     4     5       6      7     8      9     10
TOKENS = [b"{", b"}", b'"a"', b":", b"1", b"12", b'{"a"', b"2", b",", b" ", None]
EOS = 11


@pytest.fixture()
def vocab() -> grammar.Vocabulary:
    return grammar.Vocabulary(TOKENS, [EOS], 16)


SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False}


@pytest.mark.parametrize(
    "prefix, expected",
    [
        ([], {0, 6}),
        ([0], {2}),
        ([6], {3}),
        ([6, 3], {4, 5, 7}),
        ([6, 3, 4], {1, 4, 5, 7}),
        ([6, 3, 4, 1], {EOS}),
    ],
)
def test_allowed_sets_follow_the_schema(vocab, prefix, expected):
    m = grammar.compile_json_schema(SCHEMA, vocab).matcher()
    for t in prefix:
        assert m.accept(t)
    assert allowed(m, vocab) == expected


def test_rejected_token_leaves_matcher_unchanged(vocab):
    m = grammar.compile_json_schema(SCHEMA, vocab).matcher()
    assert m.accept(6)
    before = allowed(m, vocab)
    for bad in (1, 9, 10, EOS, 15, 99, -1):
        assert m.accept(bad) is False
    assert allowed(m, vocab) == before


def test_eos_only_when_complete_and_terminates(vocab):
    m = grammar.compile_json_schema(SCHEMA, vocab).matcher()
    for t in (6, 3, 5):
        assert m.accept(t)
    assert not m.is_completed() and not m.accept(EOS)
    assert m.accept(1) and m.is_completed() and not m.is_terminated()
    assert m.accept(EOS) and m.is_terminated()
    assert allowed(m, vocab) == {EOS}
    assert m.accept(1) is False


def test_rollback_restores_earlier_states(vocab):
    m = grammar.compile_json_schema(SCHEMA, vocab).matcher()
    for t in (6, 3, 4, 1, EOS):
        assert m.accept(t)
    m.rollback(3)
    assert not m.is_terminated()
    assert allowed(m, vocab) == {4, 5, 7}
    assert m.accept(7) and m.accept(1) and m.accept(EOS)
    with pytest.raises(ValueError):
        m.rollback(99)


def test_padding_and_special_ids_are_never_allowed(vocab):
    g = grammar.compile_regex(r".*", vocab)
    got = allowed(g.matcher(), vocab)
    assert 10 not in got and not any(i in got for i in range(12, 16))
    assert EOS in got


def test_apply_bitmask_masks_disallowed_and_padded_columns(vocab):
    m = grammar.compile_json_schema(SCHEMA, vocab).matcher()
    bitmask = grammar.allocate_bitmask(2, vocab)
    assert bitmask.dtype == torch.int32 and bitmask.shape == (2, 1)
    m.fill_bitmask(bitmask, 1)
    logits = torch.zeros(2, 40)  # wider than the vocabulary (padded logits)
    grammar.apply_bitmask(logits, bitmask)
    assert torch.isfinite(logits[1]).nonzero().flatten().tolist() == [0, 6]
    assert torch.isfinite(logits[0, :16]).all() and torch.isinf(logits[0, 32:]).all()


@pytest.mark.parametrize(
    "compile_fn, spec, tokens, ok",
    [
        (grammar.compile_regex, r"1+2?", [4, 5], True),
        (grammar.compile_regex, r"1+2?", [7, 4], False),
        (grammar.compile_choice, ["12", "2"], [4, 7], True),
        (grammar.compile_choice, ["12", "2"], [4], False),
        (grammar.compile_lark, 'start: "{" [PAIR] "}"\nPAIR: "\\"a\\":" /[12]+/', [6, 3, 5, 1], True),
        (grammar.compile_lark, 'start: "{" [PAIR] "}"\nPAIR: "\\"a\\":" /[12]+/', [0, 1], True),
        (grammar.compile_lark, 'start: "{" [PAIR] "}"\nPAIR: "\\"a\\":" /[12]+/', [0, 2, 1], False),
    ],
)
def test_other_grammar_kinds(vocab, compile_fn, spec, tokens, ok):
    m = compile_fn(spec, vocab).matcher()
    result = all(m.accept(t) for t in tokens) and m.accept(EOS)
    assert result == ok


def test_compiled_grammars_are_cached_per_vocabulary(vocab):
    assert grammar.compile_json_schema(SCHEMA, vocab) is grammar.compile_json_schema(SCHEMA, vocab)
    other = grammar.Vocabulary(TOKENS, [EOS], 16)
    assert grammar.compile_json_schema(SCHEMA, other) is not grammar.compile_json_schema(SCHEMA, vocab)


def test_a_cleared_cache_compiles_anew_and_leaves_matchers_working(vocab):
    compiled = grammar.compile_json_schema(SCHEMA, vocab)
    m = compiled.matcher()
    grammar.compiler_for(vocab).clear_cache()
    again = grammar.compile_json_schema(SCHEMA, vocab)
    assert again is not compiled and again is grammar.compile_json_schema(SCHEMA, vocab)
    m2 = again.matcher()
    assert allowed(m, vocab) == allowed(m2, vocab)  # the dropped grammar still serves its matcher


def test_recursive_grammar_masks_depend_on_the_stack():
    vocab = grammar.Vocabulary([b"(", b")", b"()", b"x"], [4], 5)
    g = grammar.compile_lark('start: "(" start ")" | "x"', vocab)
    m = g.matcher()
    assert allowed(m, vocab) == {0, 3}
    for t in (0, 0, 3, 1):
        assert m.accept(t)
    assert allowed(m, vocab) == {1}
    assert m.accept(1) and allowed(m, vocab) == {4}
