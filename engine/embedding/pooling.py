"""Token states -> one vector per input: the pooling modes of sentence-transformers, and normalisation."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def pool(states: torch.Tensor, seq_lens: list[int], mode: str) -> torch.Tensor:
    """states: [num_tokens, hidden], inputs back to back; returns [num_inputs, hidden]."""
    lens = torch.tensor(seq_lens, device=states.device)  # [num_inputs]
    ends = torch.cumsum(lens, 0)
    if mode == "cls":
        return states[ends - lens]
    if mode == "lasttoken":
        return states[ends - 1]
    owner = torch.repeat_interleave(torch.arange(len(seq_lens), device=states.device), lens)  # [num_tokens]
    if mode == "max":
        out = states.new_full((len(seq_lens), states.shape[1]), float("-inf"))
        return out.scatter_reduce_(0, owner[:, None].expand_as(states), states, "amax")
    sums = states.new_zeros(len(seq_lens), states.shape[1]).index_add_(0, owner, states)
    if mode == "mean":
        return sums / lens[:, None].to(states.dtype)
    if mode == "mean_sqrt_len":
        return sums / lens[:, None].to(states.dtype).sqrt()
    raise ValueError(f"unknown pooling mode {mode!r}")


def normalize(vectors: torch.Tensor) -> torch.Tensor:
    """Unit L2 length per row (rows of zeros stay zero), as sentence-transformers' Normalize does."""
    return F.normalize(vectors, p=2.0, dim=1)
