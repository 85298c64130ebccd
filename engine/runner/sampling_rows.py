"""The sampler's per-row inputs of one step, gathered from the slots: one row per token sampled.

A request verifying k draft tokens has k + 1 rows; row j samples its output token at
position `num_outputs + j`, as if drafts[:j] were already its tokens (penalties count them,
min_tokens and seeds see the position), so each row is processed exactly as the step
without speculation would have processed it.
"""

from __future__ import annotations

import torch

from engine.runner.slots import RequestSlots
from engine.sampler import SamplingBatch


def _penalties(params) -> tuple[float, float, float] | None:
    if params.presence_penalty or params.frequency_penalty or params.repetition_penalty != 1.0:
        return params.presence_penalty, params.frequency_penalty, params.repetition_penalty
    return None


def sampling_batch(s: RequestSlots, slots: list[int], drafts: list[list[int]], token_bitmask, device) -> SamplingBatch:
    """The batch for rows laid out request by request, len(drafts[i]) + 1 rows for slots[i]."""
    rows = [(slot, j, d) for slot, d in zip(slots, drafts) for j in range(len(d) + 1)]
    index = torch.tensor([slot for slot, _, _ in rows])
    params = [s.params[slot] for slot, _, _ in rows]
    penalties = [_penalties(p) for p in params]
    positions = [s.num_tokens[slot] - s.num_prompt_tokens[slot] + j for slot, j, _ in rows]
    penalty_tokens = []
    for (slot, j, d), pen in zip(rows, penalties):
        if pen is None:
            penalty_tokens.append(None)
            continue
        prompt_ids, output_ids = s.penalty_tokens(slot)
        if j:
            output_ids = torch.cat([output_ids, torch.tensor(d[:j], dtype=torch.long)])
        penalty_tokens.append((prompt_ids.to(device), output_ids.to(device)))
    return SamplingBatch(
        temperature=s.temperature[index].to(device),
        top_k=s.top_k[index].to(device),
        top_p=s.top_p[index].to(device),
        min_p=s.min_p[index].to(device),
        seeds=[p.seed for p in params],
        output_positions=positions,
        logit_bias=[p.logit_bias for p in params],
        suppress_ids=[s.stop_ids[slot] if n < p.min_tokens else None for (slot, _, _), n, p in zip(rows, positions, params)],
        penalties=penalties,
        penalty_tokens=penalty_tokens,
        num_logprobs=[p.logprobs for p in params],
        token_bitmask=token_bitmask,
    )
