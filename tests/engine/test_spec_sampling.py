"""Rejection sampling keeps the target's distribution: many verify rounds on a toy vocabulary of
six tokens (fixed seed), whatever the drafts, compared to the target by a chi-square statistic."""

from __future__ import annotations

import pytest
import torch

from engine.sampler import SamplingBatch, verify

TARGET = torch.tensor([0.40, 0.25, 0.15, 0.10, 0.07, 0.03])  # p over the toy vocabulary
VOCAB = len(TARGET)
CHI2_5DOF_AT_0_001 = 20.52  # chi-square with 5 degrees of freedom exceeds this with probability 0.001


def _batch(num_rows: int, temperature: float = 1.0) -> SamplingBatch:
    return SamplingBatch(
        temperature=torch.full((num_rows,), temperature), top_k=torch.zeros(num_rows, dtype=torch.long),
        top_p=torch.ones(num_rows), min_p=torch.zeros(num_rows), seeds=[None] * num_rows,
        output_positions=[0] * num_rows, logit_bias=[None] * num_rows, suppress_ids=[None] * num_rows,
        penalties=[None] * num_rows, penalty_tokens=[None] * num_rows, num_logprobs=[None] * num_rows,
    )  # fmt: skip


def _chi2(samples: list[int], p: torch.Tensor) -> float:
    counts = torch.bincount(torch.tensor(samples), minlength=VOCAB).double()
    expected = p.double() * len(samples)
    return float(((counts - expected) ** 2 / expected).sum())


def _rounds(drafts: list[list[int]], draft_probs=None) -> list[list[int]]:
    """One verify call over len(drafts) requests whose every row has the target distribution."""
    num_rows = sum(len(d) + 1 for d in drafts)
    logits = TARGET.log().repeat(num_rows, 1)  # [num_rows, vocab]
    tokens, _ = verify(logits, _batch(num_rows), drafts, draft_probs)
    return tokens


@pytest.mark.parametrize("draft", [[0, 0], [5, 5], [2, 0], [1]])
def test_a_fixed_proposal_keeps_the_target_distribution(draft):
    """n-gram lookup and greedy drafts are deterministic proposers: q is one-hot on the draft."""
    torch.manual_seed(1234)
    out = _rounds([draft] * 12000)
    assert _chi2([t[0] for t in out], TARGET) < CHI2_5DOF_AT_0_001
    second = [t[1] for t in out if len(t) > 1]  # the next token, where the first draft was kept
    assert len(second) > 300 and _chi2(second, TARGET) < CHI2_5DOF_AT_0_001
    accepted = sum(t[0] == draft[0] and len(t) > 1 for t in out) / len(out)
    assert accepted == pytest.approx(float(TARGET[draft[0]]), abs=0.02)  # accepted with probability p(x)


def test_drafts_drawn_from_a_draft_distribution_keep_the_target_distribution():
    torch.manual_seed(99)
    q = torch.tensor([0.05, 0.05, 0.10, 0.20, 0.30, 0.30])  # far from the target
    drafts = torch.multinomial(q, 12000 * 2, replacement=True).view(12000, 2).tolist()
    out = _rounds(drafts, [q.repeat(2, 1)] * len(drafts))
    assert _chi2([t[0] for t in out], TARGET) < CHI2_5DOF_AT_0_001
    second = [t[1] for t in out if len(t) > 1]
    assert _chi2(second, TARGET) < CHI2_5DOF_AT_0_001


def test_a_wrong_distribution_is_caught_by_the_statistic():
    """The check has power: plain draws from q fail it."""
    torch.manual_seed(7)
    q = torch.tensor([0.30, 0.25, 0.15, 0.10, 0.10, 0.10])
    assert _chi2(torch.multinomial(q, 12000, replacement=True).tolist(), TARGET) > CHI2_5DOF_AT_0_001


def test_greedy_rows_keep_drafts_while_they_equal_the_argmax():
    logits = TARGET.log().repeat(4, 1)
    tokens, _ = verify(logits, _batch(4, temperature=0.0), [[0, 0, 3]])
    assert tokens == [[0, 0, 0]]
