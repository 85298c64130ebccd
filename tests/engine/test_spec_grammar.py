"""Grammar masks under speculative decoding, on a byte vocabulary: a draft the grammar refuses ends
the proposal, the verify rows' masks are those plain decoding would fill, and the matcher is back
where it was after both (the core then accepts only what the target kept)."""

from __future__ import annotations

import torch

import grammar
from engine.structured import StructuredOutputs
from tests.grammar.conftest import byte_vocab

VOCAB_SIZE = 264


def _outputs(pattern: str) -> tuple[StructuredOutputs, grammar.Matcher]:
    vocab = byte_vocab()
    outputs = StructuredOutputs("unused", VOCAB_SIZE, [256], 1.0)
    outputs._vocab = vocab  # the typed-in vocabulary instead of a tokenizer folder's
    matcher = grammar.Matcher(grammar.compile_regex(pattern, vocab))
    outputs.matchers["r"] = matcher
    return outputs, matcher


def _rows(outputs: StructuredOutputs, drafts: dict | None = None) -> torch.Tensor:
    """Request r's mask rows, unpacked to bool [1 + len(drafts), vocab]."""
    packed = outputs.masks(["r"], drafts)
    count = 1 + len((drafts or {}).get("r", ()))
    first = packed.start["r"]
    return grammar.unpack_bitmask(packed.bitmask, VOCAB_SIZE)[first : first + count]


def _allowed(outputs: StructuredOutputs) -> set[int]:
    return set(_rows(outputs)[0].nonzero().flatten().tolist())


def test_a_refused_draft_ends_the_proposal_and_the_matcher_is_unchanged():
    outputs, matcher = _outputs("(ab|cd)+x")
    before = _allowed(outputs)
    assert outputs.num_allowed_drafts("r", list(b"abcdx")) == 5
    assert outputs.num_allowed_drafts("r", list(b"abca")) == 3  # "a" cannot follow "abc"
    assert outputs.num_allowed_drafts("r", list(b"zab")) == 0
    assert outputs.num_allowed_drafts("other", list(b"zzz")) == 3  # unconstrained: every draft
    assert _allowed(outputs) == before == {ord("a"), ord("c")}


def test_verify_rows_get_the_masks_of_plain_decoding_then_roll_back():
    outputs, matcher = _outputs("(ab|cd)+x")
    rows = _rows(outputs, {"r": list(b"abc")})  # [4, vocab]
    assert rows.shape == (4, VOCAB_SIZE)
    want = []
    for token_id in b"abc":  # what plain decoding sees before each token
        want.append(_allowed(outputs))
        assert matcher.accept(token_id)
    want.append(_allowed(outputs))
    matcher.rollback(3)
    assert [set(row.nonzero().flatten().tolist()) for row in rows] == want
    assert _allowed(outputs) == {ord("a"), ord("c")}


def test_rows_past_a_refused_draft_repeat_the_last_mask():
    outputs, _ = _outputs("(ab|cd)+x")
    rows = _rows(outputs, {"r": list(b"aza")})
    assert rows[1].nonzero().flatten().tolist() == [ord("b")]
    assert (rows[2] == rows[1]).all() and (rows[3] == rows[1]).all()
    assert _allowed(outputs) == {ord("a"), ord("c")}


def test_the_core_accepts_only_what_the_target_kept():
    """After a verify round the core feeds the matcher the kept tokens, one by one."""
    outputs, matcher = _outputs("(ab|cd)+x")
    assert outputs.num_allowed_drafts("r", list(b"abcd")) == 4
    for token_id in b"ab":  # the target kept "a", "b" and rejected "c", "d"
        assert outputs.accept("r", token_id)
    assert _allowed(outputs) == {ord("a"), ord("c"), ord("x")}
