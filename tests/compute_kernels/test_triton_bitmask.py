"""The grammar bitmask applied to logits: the Triton kernel, its torch reference, and the grammar's
own unpacking (the layout both must read)."""

from __future__ import annotations

import pytest
import torch

from grammar.bitmask import apply_bitmask as grammar_apply
from compute_kernels.bitmask import apply_token_bitmask as reference
from compute_kernels.triton.bitmask import apply_token_bitmask


@pytest.mark.parametrize("vocab,num_words", [(100, 4), (64, 2), (1100, 30)])  # 1100 > 30 * 32: a short mask
def test_bitmask_matches_reference_and_grammar(triton_device, vocab, num_words):
    torch.manual_seed(vocab)
    logits = torch.randn(3, vocab)
    bitmask = torch.randint(-(2**31), 2**31 - 1, (3, num_words), dtype=torch.int32)
    bitmask[0] = -1  # all allowed (within the words)
    want = logits.clone()
    reference(want, bitmask)
    from_grammar = logits.clone()
    grammar_apply(from_grammar, bitmask)
    assert torch.equal(want, from_grammar)
    got = logits.to(triton_device)
    apply_token_bitmask(got, bitmask.to(triton_device))
    assert torch.equal(got.cpu(), want)
    assert torch.isinf(want[:, num_words * 32 :]).all()


def test_bitmask_on_a_slice_of_rows(triton_device):
    """The rows that sample: a strided slice of a larger logits buffer, in place."""
    logits = torch.zeros(4, 70, device=triton_device)
    bitmask = torch.zeros(2, 3, dtype=torch.int32, device=triton_device)
    bitmask[0, 0], bitmask[1, 2] = 1 << 5, 1 << 1  # token 5 in row 0, token 65 in row 1
    apply_token_bitmask(logits[1:3], bitmask)
    assert torch.isfinite(logits[1]).nonzero().flatten().tolist() == [5]
    assert torch.isfinite(logits[2]).nonzero().flatten().tolist() == [65]
    assert torch.isfinite(logits[0]).all() and torch.isfinite(logits[3]).all()


def test_bitmask_rejects_a_row_count_mismatch(triton_device):
    with pytest.raises(ValueError):
        apply_token_bitmask(torch.zeros(2, 40, device=triton_device), torch.zeros(1, 2, dtype=torch.int32, device=triton_device))
