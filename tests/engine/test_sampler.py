"""Sampler: each processing step on hand-made logits."""

from __future__ import annotations

import torch

from engine.sampler import SamplingBatch, sample


def batch(n, **overrides) -> SamplingBatch:
    fields = dict(
        temperature=torch.zeros(n), top_k=torch.zeros(n, dtype=torch.long), top_p=torch.ones(n),
        min_p=torch.zeros(n), seeds=[None] * n, output_positions=[0] * n, logit_bias=[None] * n,
        suppress_ids=[None] * n, penalties=[None] * n, penalty_tokens=[None] * n, num_logprobs=[None] * n,
    )  # fmt: skip
    fields.update(overrides)
    return SamplingBatch(**fields)


LOGITS = [[1.0, 3.0, 2.0, 0.0]]


def test_greedy_takes_the_argmax():
    assert sample(torch.tensor(LOGITS), batch(1)).token_ids == [1]


def test_logit_bias_and_suppression():
    assert sample(torch.tensor(LOGITS), batch(1, logit_bias=[{3: 10.0}])).token_ids == [3]
    assert sample(torch.tensor(LOGITS), batch(1, suppress_ids=[[1]])).token_ids == [2]


def test_top_k_one_is_greedy_even_when_hot():
    b = batch(1, temperature=torch.tensor([5.0]), top_k=torch.tensor([1]))
    assert all(sample(torch.tensor(LOGITS), b).token_ids == [1] for _ in range(20))


def test_top_p_keeps_the_smallest_set_over_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    b = batch(1, temperature=torch.tensor([1.0]), top_p=torch.tensor([0.7]))
    seen = {sample(logits.clone(), b).token_ids[0] for _ in range(200)}
    assert seen == {0, 1}


def test_min_p_drops_unlikely_tokens():
    logits = torch.log(torch.tensor([[0.6, 0.3, 0.07, 0.03]]))
    b = batch(1, temperature=torch.tensor([1.0]), min_p=torch.tensor([0.2]))
    seen = {sample(logits.clone(), b).token_ids[0] for _ in range(200)}
    assert seen == {0, 1}


def test_penalties_push_away_seen_tokens():
    prompt, output = torch.tensor([2]), torch.tensor([1, 1])
    rep = batch(1, penalties=[(0.0, 0.0, 10.0)], penalty_tokens=[(prompt, output)])
    assert sample(torch.tensor(LOGITS), rep).token_ids == [0]  # 1 and 2 (prompt) both penalised
    freq = batch(1, penalties=[(0.0, 1.5, 1.0)], penalty_tokens=[(prompt, output)])
    assert sample(torch.tensor(LOGITS), freq).token_ids == [2]  # 3 - 2*1.5 = 0 < 2


def test_seeded_rows_do_not_depend_on_the_batch():
    torch.manual_seed(0)
    logits = torch.randn(1, 1000)
    one = batch(1, temperature=torch.tensor([1.0]), seeds=[7], output_positions=[3])
    alone = sample(logits.clone(), one).token_ids[0]
    many = batch(3, temperature=torch.ones(3), seeds=[None, 7, 8], output_positions=[0, 3, 3])
    assert sample(torch.cat([torch.randn(1, 1000), logits, logits]), many).token_ids[1] == alone


def test_grammar_mask_is_applied_before_sampling():
    packed = torch.tensor([[0b1001]], dtype=torch.int32)  # tokens 0 and 3 allowed
    assert sample(torch.tensor(LOGITS), batch(1, token_bitmask=packed)).token_ids == [0]


def test_logprobs_are_of_the_raw_distribution():
    out = sample(torch.tensor(LOGITS), batch(1, num_logprobs=[2], logit_bias=[{3: 10.0}]))
    lp, top_ids, top_lps = out.logprobs[0]
    expected = torch.tensor(LOGITS).log_softmax(-1)[0]
    assert out.token_ids == [3] and abs(lp - expected[3].item()) < 1e-6
    assert top_ids == [1, 2]


def test_temperature_sampling_follows_the_softmax():
    """Seeded and unseeded rows both draw tokens with frequencies close to softmax(logits / T)."""
    torch.manual_seed(1)
    probs = torch.tensor([0.5, 0.25, 0.15, 0.1])
    logits = (probs.log() * 2.0).repeat(8, 1)  # T = 2 recovers probs
    counts = torch.zeros(4)
    for step in range(400):
        b = batch(8, temperature=torch.full((8,), 2.0), seeds=[None] * 4 + [11, 12, 13, 14], output_positions=[step] * 8)
        for t in sample(logits.clone(), b).token_ids:
            counts[t] += 1
    freq = counts / counts.sum()  # 3,200 draws: standard error <= 0.009
    assert torch.allclose(freq, probs, atol=0.035), freq
