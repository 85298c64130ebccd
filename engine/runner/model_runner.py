"""Executes one scheduled step: sync slots, gather inputs by index mapping, forward (decode steps
replayed from CUDA graphs where captured), sample."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from engine.runner.cuda_graphs import DecodeGraphs, capture_sizes
from engine.runner.slots import RequestSlots
from engine.sampler import SamplingBatch, sample
from engine.scheduler import SchedulerOutput
from schemas.engine import TokenLogprob

PROMPT_LOGPROB_ROWS = 256  # prompt positions whose logits are materialized at once

# Grammar masks for a step: request id -> [vocab] bool, or a function that waits for them.
MaskSource = dict[str, torch.Tensor] | Callable[[], dict[str, torch.Tensor]] | None
from kernels import build_attention_metadata


@dataclass(slots=True)
class StepResult:
    """Sampled token per request that reached the end of its known tokens, with logprobs."""

    token_ids: dict[str, int]
    logprobs: dict[str, tuple[float, list[int], list[float]]]
    # request id -> (first prompt position scored, one entry per position: the next prompt token's logprob)
    prompt_logprobs: dict[str, tuple[int, list[TokenLogprob]]] = field(default_factory=dict)


class ModelRunner:
    """Owns the model, the KV cache tensors and the request slots; called by the engine core."""

    def __init__(self, model, num_blocks: int, block_size: int, max_num_reqs: int, max_model_len: int,
                 eos_token_ids: list[int], device: torch.device, kv_dtype: torch.dtype,
                 use_cpu_kernels: bool = False, graph_backend=None) -> None:  # fmt: skip
        """`graph_backend` (a CudaGraphBackend on CUDA) turns on decode replay from graphs, for a
        model that says it reads only device tensors (`supports_cuda_graphs`); None runs eagerly."""
        self.model = model
        self.use_cpu_kernels = use_cpu_kernels
        self.device = device
        self.block_size = block_size
        self.eos_token_ids = eos_token_ids
        use_graphs = graph_backend is not None and getattr(model, "supports_cuda_graphs", False)
        num_layers, num_kv_heads, head_dim = model.kv_shape
        shape = ((num_blocks + use_graphs) * block_size, num_kv_heads, head_dim)  # + the graphs' scratch block
        self.kv_caches = [
            (torch.zeros(shape, dtype=kv_dtype, device=device), torch.zeros(shape, dtype=kv_dtype, device=device))
            for _ in range(num_layers)
        ]
        max_blocks_per_req = -(-max_model_len // block_size)
        self.slots = RequestSlots(max_num_reqs, max_model_len, max_blocks_per_req)
        self.graphs = None
        if use_graphs:
            self.graphs = DecodeGraphs(model, self.kv_caches, graph_backend, capture_sizes(max_num_reqs),
                                       max_blocks_per_req, block_size, num_blocks, device, use_cpu_kernels)  # fmt: skip
            self.graphs.capture()

    def _sync(self, plan: SchedulerOutput) -> None:
        for request_id in plan.freed_req_ids:
            self.slots.remove(request_id)
        for new in plan.new_reqs:
            self.slots.add(new, self.eos_token_ids)
        for request_id, block_ids in plan.new_block_ids.items():
            slot = self.slots.slot_of.get(request_id)
            if slot is not None:
                self.slots.append_blocks(slot, block_ids)

    def _forward(self, plan: SchedulerOutput, slots: list[int]):
        """(hidden states [num_tokens, hidden], seq_lens, last_rows): a decode step of a captured
        size replays a graph, any other step runs the model eagerly."""
        input_ids, positions, slot_mapping, seq_lens, last_rows = self._gather(plan, slots)
        block_tables = self.slots.block_table.index_select(0, torch.tensor(slots))  # [num_reqs, max_blocks_per_req]
        block_tables = block_tables[:, : max(-(-n // self.block_size) for n in seq_lens)]  # the blocks in use
        if self.graphs is not None and self.graphs.fits(plan.num_scheduled_tokens):
            return self.graphs.run(input_ids, positions, slot_mapping, seq_lens, block_tables), seq_lens, last_rows
        meta = build_attention_metadata(plan.num_scheduled_tokens, seq_lens, block_tables.to(self.device),
                                        torch.tensor(slot_mapping, device=self.device), self.block_size,
                                        self.use_cpu_kernels)  # fmt: skip
        ids = torch.tensor(input_ids, device=self.device)  # [num_tokens]
        hidden = self.model(ids, torch.tensor(positions, device=self.device), self.kv_caches, meta)
        return hidden, seq_lens, last_rows

    def _gather(self, plan: SchedulerOutput, slots: list[int]):
        """The step's flat inputs as host lists, read from the slots' lists (a few list ops per request)."""
        bs = self.block_size
        input_ids: list[int] = []
        positions: list[int] = []
        slot_mapping: list[int] = []
        seq_lens, last_rows = [], []
        for slot, num_new, start in zip(slots, plan.num_scheduled_tokens, plan.num_computed_tokens):
            end = start + num_new
            blocks = self.slots.block_lists[slot]
            input_ids += self.slots.token_lists[slot][start:end]
            positions += range(start, end)
            slot_mapping += [blocks[p // bs] * bs + p % bs for p in range(start, end)]
            seq_lens.append(end)
            last_rows.append(len(input_ids) - 1)
        return input_ids, positions, slot_mapping, seq_lens, last_rows

    def _sampling_batch(self, slots: list[int], allowed_mask) -> SamplingBatch:
        s = self.slots
        index = torch.tensor(slots)
        params = [s.params[i] for i in slots]
        penalties = [
            (p.presence_penalty, p.frequency_penalty, p.repetition_penalty)
            if p.presence_penalty or p.frequency_penalty or p.repetition_penalty != 1.0
            else None
            for p in params
        ]
        num_outputs = [s.num_tokens[i] - s.num_prompt_tokens[i] for i in slots]
        dev = self.device
        return SamplingBatch(
            temperature=s.temperature[index].to(dev),
            top_k=s.top_k[index].to(dev),
            top_p=s.top_p[index].to(dev),
            min_p=s.min_p[index].to(dev),
            seeds=[p.seed for p in params],
            output_positions=num_outputs,
            logit_bias=[p.logit_bias for p in params],
            suppress_ids=[s.stop_ids[i] if n < p.min_tokens else None for i, n, p in zip(slots, num_outputs, params)],
            penalties=penalties,
            penalty_tokens=[tuple(t.to(dev) for t in s.penalty_tokens(i)) if pen else None for i, pen in zip(slots, penalties)],
            num_logprobs=[p.logprobs for p in params],
            allowed_mask=allowed_mask,
        )

    @torch.inference_mode()
    def execute(self, plan: SchedulerOutput, allowed_masks: MaskSource = None) -> StepResult:
        """Runs the plan; `allowed_masks` maps request ids to [vocab] bool grammar masks, or is a
        function returning that map, called only after the forward pass (masks computed meanwhile)."""
        self._sync(plan)
        if not plan.req_ids:
            return StepResult({}, {})
        slots = [self.slots.slot_of[r] for r in plan.req_ids]
        hidden, seq_lens, last_rows = self._forward(plan, slots)  # [num_tokens, hidden]
        prompt_logprobs = self._prompt_logprobs(plan, slots, hidden)
        rows = [i for i, slot in enumerate(slots) if seq_lens[i] == self.slots.num_tokens[slot]]
        if not rows:
            return StepResult({}, {}, prompt_logprobs)
        logits = self.model.compute_logits(hidden[[last_rows[i] for i in rows]])  # [num_rows, vocab]
        row_slots = [slots[i] for i in rows]
        row_ids = [plan.req_ids[i] for i in rows]
        mask = None
        if callable(allowed_masks):
            allowed_masks = allowed_masks()
        if allowed_masks and any(r in allowed_masks for r in row_ids):
            mask = torch.ones_like(logits, dtype=torch.bool)
            for j, request_id in enumerate(row_ids):
                if request_id in allowed_masks:
                    mask[j] = allowed_masks[request_id].to(self.device)
        out = sample(logits, self._sampling_batch(row_slots, mask))
        self.slots.append_tokens(row_slots, out.token_ids)
        logprobs = {r: lp for r, lp in zip(row_ids, out.logprobs) if lp is not None}
        return StepResult(dict(zip(row_ids, out.token_ids)), logprobs, prompt_logprobs)

    def _prompt_logprobs(self, plan: SchedulerOutput, slots: list[int], hidden: torch.Tensor) -> dict:
        """Raw logprobs of the prompt tokens this step's chunks predict, for requests that asked.
        Logits are built PROMPT_LOGPROB_ROWS rows at a time, so a long chunk never holds
        [chunk, vocab] floats at once."""
        found = {}
        start_row = 0
        for request_id, slot, num_new, num_computed in zip(plan.req_ids, slots, plan.num_scheduled_tokens,
                                                           plan.num_computed_tokens):  # fmt: skip
            rows_here, start_row = start_row, start_row + num_new
            top_n = self.slots.params[slot].prompt_logprobs
            # Position p predicts prompt token p + 1; the last prompt position predicts the first output.
            count = min(num_new, self.slots.num_prompt_tokens[slot] - 1 - num_computed)
            if top_n is None or count <= 0:
                continue
            targets = self.slots.token_ids[slot, num_computed + 1 : num_computed + 1 + count].to(self.device)
            entries = []
            for lo in range(0, count, PROMPT_LOGPROB_ROWS):
                hi = min(lo + PROMPT_LOGPROB_ROWS, count)
                logprobs = self.model.compute_logits(hidden[rows_here + lo : rows_here + hi]).float().log_softmax(-1)
                chosen = logprobs.gather(1, targets[lo:hi].unsqueeze(1)).squeeze(1).tolist()
                if top_n:
                    top_vals, top_ids = logprobs.topk(top_n, dim=-1)
                    tops = zip(top_ids.tolist(), top_vals.tolist())
                else:
                    tops = (([], []) for _ in chosen)
                entries += [TokenLogprob(t, lp, ids, vals) for t, lp, (ids, vals)
                            in zip(targets[lo:hi].tolist(), chosen, tops)]  # fmt: skip
            found[request_id] = (num_computed, entries)
        return found
