"""Persistent per-request state in stable slots: token buffer, block table row, sampling parameters.

Updated incrementally from each step's plan (new requests, added blocks, freed requests,
sampled tokens), never rebuilt; a step gathers its inputs from here by slot index.
"""

from __future__ import annotations

import torch

from engine.scheduler import NewRequestData
from schemas.engine import SamplingParams


class RequestSlots:
    """Owned by the model runner; one slot per running request."""

    def __init__(self, max_num_reqs: int, max_model_len: int, max_blocks_per_req: int) -> None:
        self.token_ids = torch.zeros(max_num_reqs, max_model_len + 1, dtype=torch.long)  # [slots, max_len]
        self.block_table = torch.zeros(max_num_reqs, max_blocks_per_req, dtype=torch.long)  # [slots, max_blocks]
        self.temperature = torch.ones(max_num_reqs)  # [slots]
        self.top_k = torch.zeros(max_num_reqs, dtype=torch.long)  # [slots]
        self.top_p = torch.ones(max_num_reqs)  # [slots]
        self.min_p = torch.zeros(max_num_reqs)  # [slots]
        self.num_tokens = [0] * max_num_reqs
        self.num_prompt_tokens = [0] * max_num_reqs
        self.num_blocks = [0] * max_num_reqs
        # the same tokens and blocks as Python lists: a step's inputs are gathered from these
        # without a tensor op per field (a decode step's host time is the cost at batch 1)
        self.token_lists: list[list[int]] = [[] for _ in range(max_num_reqs)]
        self.block_lists: list[list[int]] = [[] for _ in range(max_num_reqs)]
        self.params: list[SamplingParams | None] = [None] * max_num_reqs
        self.stop_ids: list[list[int] | None] = [None] * max_num_reqs
        self.slot_of: dict[str, int] = {}
        self._free = list(range(max_num_reqs - 1, -1, -1))

    def add(self, new: NewRequestData, eos_token_ids: list[int]) -> None:
        slot = self._free.pop()
        self.slot_of[new.request_id] = slot
        num = len(new.token_ids)
        self.token_ids[slot, :num] = torch.tensor(new.token_ids, dtype=torch.long)
        self.token_lists[slot] = list(new.token_ids)
        self.num_tokens[slot] = num
        self.num_prompt_tokens[slot] = new.num_prompt_tokens
        self.num_blocks[slot] = 0
        self.block_lists[slot] = []
        self.append_blocks(slot, new.block_ids)
        params: SamplingParams = new.params
        self.params[slot] = params
        self.temperature[slot] = params.temperature
        self.top_k[slot] = max(params.top_k, 0)
        self.top_p[slot] = params.top_p
        self.min_p[slot] = params.min_p
        stop = list(params.stop_token_ids or []) + ([] if params.ignore_eos else list(eos_token_ids))
        self.stop_ids[slot] = stop or None

    def append_blocks(self, slot: int, block_ids: list[int]) -> None:
        if block_ids:
            start = self.num_blocks[slot]
            self.block_table[slot, start : start + len(block_ids)] = torch.tensor(block_ids, dtype=torch.long)
            self.num_blocks[slot] = start + len(block_ids)
            self.block_lists[slot].extend(block_ids)

    def remove(self, request_id: str) -> None:
        slot = self.slot_of.pop(request_id, None)
        if slot is not None:
            self.params[slot] = None
            self._free.append(slot)

    def append_tokens(self, slots: list[int], token_ids: list[list[int]]) -> None:
        """Writes each slot's new tokens (one, or a verified run of drafts and one more)."""
        rows = [slot for slot, ids in zip(slots, token_ids) for _ in ids]
        columns = [self.num_tokens[slot] + i for slot, ids in zip(slots, token_ids) for i in range(len(ids))]
        self.token_ids[rows, columns] = torch.tensor([t for ids in token_ids for t in ids], dtype=torch.long)
        for slot, ids in zip(slots, token_ids):
            self.num_tokens[slot] += len(ids)
            self.token_lists[slot].extend(ids)

    def set_tokens(self, slot: int, token_ids: list[int], start: int) -> None:
        """Makes the slot's tokens `token_ids`, of which the first `start` are already there
        (a draft model's context after the target accepted or rejected its proposal)."""
        del self.token_lists[slot][start:]
        self.token_lists[slot].extend(token_ids[start:])
        if len(token_ids) > start:
            self.token_ids[slot, start : len(token_ids)] = torch.tensor(token_ids[start:], dtype=torch.long)
        self.num_tokens[slot] = len(token_ids)

    def penalty_tokens(self, slot: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(prompt ids, output ids so far) of the request in `slot`."""
        num_prompt = self.num_prompt_tokens[slot]
        return self.token_ids[slot, :num_prompt], self.token_ids[slot, num_prompt : self.num_tokens[slot]]
