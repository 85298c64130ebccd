"""Executes one scheduled step: sync slots, gather inputs by index mapping, forward (decode steps
replayed from CUDA graphs where captured), sample."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.runner.cuda_graphs import DecodeGraphs, capture_sizes
from engine.runner.sampling_rows import sampling_batch
from engine.runner.slots import RequestSlots
from engine.runner.greedy_head import GreedyHead
from engine.sampler import SamplerOutput, SamplingBatch, plain_greedy_rows, sample, verify
from engine.scheduler import SchedulerOutput
from schemas.engine import TokenLogprob

PROMPT_LOGPROB_ROWS = 256  # prompt positions whose logits are materialized at once

# Grammar masks for a step (engine.structured.GrammarRows: packed rows and each request's first row),
# or a function that waits for them.
MaskSource = Any | Callable[[], Any] | None
from compute_kernels import build_attention_metadata


@dataclass(slots=True)
class StepResult:
    """New tokens per request that reached the end of its known tokens (one, or its accepted
    drafts and one more), with one logprobs entry per token for requests that asked."""

    token_ids: dict[str, list[int]]
    logprobs: dict[str, list[tuple[float, list[int], list[float]]]]
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
        # greedy rows' tokens in two passes (a cheap lm_head, then the candidates exactly) where the
        # model's lm_head is a VNNI linear with fixed-point activations: the CPU kernels' default
        lm_head = getattr(model, "lm_head", None)
        self.greedy_head = GreedyHead(lm_head) if use_cpu_kernels and GreedyHead.supports(lm_head) else None
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
        """The step's flat inputs as host lists, read from the slots' lists (a few list ops per
        request); a request's draft tokens follow its known tokens."""
        bs = self.block_size
        input_ids: list[int] = []
        positions: list[int] = []
        slot_mapping: list[int] = []
        seq_lens, last_rows = [], []
        for req_id, slot, num_new, start in zip(plan.req_ids, slots, plan.num_scheduled_tokens, plan.num_computed_tokens):
            end = start + num_new
            blocks = self.slots.block_lists[slot]
            spec = plan.spec_token_ids.get(req_id)
            input_ids += self.slots.token_lists[slot][start : end - len(spec)] + spec if spec else self.slots.token_lists[slot][start:end]
            positions += range(start, end)
            slot_mapping += [blocks[p // bs] * bs + p % bs for p in range(start, end)]
            seq_lens.append(end)
            last_rows.append(len(input_ids) - 1)
        return input_ids, positions, slot_mapping, seq_lens, last_rows

    @torch.inference_mode()
    def execute(self, plan: SchedulerOutput, grammar_rows: MaskSource = None) -> StepResult:
        """Runs the plan; `grammar_rows` holds the constrained requests' packed masks (one row, or
        1 + num_drafts rows for a request verifying drafts), or is a function returning them,
        called only after the forward pass (masks computed meanwhile)."""
        self._sync(plan)
        if not plan.req_ids:
            return StepResult({}, {})
        slots = [self.slots.slot_of[r] for r in plan.req_ids]
        hidden, seq_lens, last_rows = self._forward(plan, slots)  # [num_tokens, hidden]
        prompt_logprobs = self._prompt_logprobs(plan, slots, hidden)
        spec = plan.spec_token_ids
        rows = [i for i, (slot, r) in enumerate(zip(slots, plan.req_ids))
                if seq_lens[i] - len(spec.get(r, ())) == self.slots.num_tokens[slot]]  # fmt: skip
        if not rows:
            return StepResult({}, {}, prompt_logprobs)
        row_ids = [plan.req_ids[i] for i in rows]
        drafts = [spec.get(r, []) for r in row_ids]
        hidden_rows = [last_rows[i] - len(d) + j for i, d in zip(rows, drafts) for j in range(len(d) + 1)]
        row_slots = [slots[i] for i in rows]
        if callable(grammar_rows):
            grammar_rows = grammar_rows()
        bitmask = self._bitmask(row_ids, drafts, grammar_rows)
        batch = sampling_batch(self.slots, row_slots, drafts, bitmask, self.device)
        if any(drafts):
            token_ids, logprobs = verify(self.model.compute_logits(hidden[hidden_rows]), batch, drafts)
        else:
            out = self._sample(hidden[hidden_rows], batch)
            token_ids, logprobs = [[t] for t in out.token_ids], [None if lp is None else [lp] for lp in out.logprobs]
        self.slots.append_tokens(row_slots, token_ids)
        found = {r: lp for r, lp in zip(row_ids, logprobs) if lp is not None}
        return StepResult(dict(zip(row_ids, token_ids)), found, prompt_logprobs)

    def _sample(self, hidden: torch.Tensor, batch: SamplingBatch) -> SamplerOutput:
        """One token per row of hidden [num_rows, hidden]: plain greedy rows through the two-pass
        greedy head where the model has one (engine/runner/greedy_head.py, the same tokens), the
        other rows from their full logits."""
        num_rows = hidden.shape[0]
        greedy = plain_greedy_rows(batch) if self.greedy_head is not None else []
        picked = self.greedy_head.pick(hidden[greedy], batch, greedy) if greedy else {}
        if len(picked) == num_rows:
            return SamplerOutput([picked[r] for r in range(num_rows)], [None] * num_rows)
        if not picked:
            return sample(self.model.compute_logits(hidden), batch)  # [num_rows, vocab] logits
        rest = [r for r in range(num_rows) if r not in picked]
        out = sample(self.model.compute_logits(hidden[rest]), batch.select(rest))
        token_ids, logprobs = dict(picked), dict.fromkeys(picked)
        token_ids.update(zip(rest, out.token_ids))
        logprobs.update(zip(rest, out.logprobs))
        return SamplerOutput([token_ids[r] for r in range(num_rows)], [logprobs[r] for r in range(num_rows)])

    def _bitmask(self, row_ids: list[str], drafts: list[list[int]], grammar_rows) -> torch.Tensor | None:
        """The step's packed bitmask, one row per logits row (all bits set where unconstrained), built
        by one index copy from the grammar's rows; None when no row is constrained."""
        if grammar_rows is None or not any(r in grammar_rows.start for r in row_ids):
            return None
        source = grammar_rows.bitmask
        dst, src, row = [], [], 0
        for request_id, d in zip(row_ids, drafts):
            first = grammar_rows.start.get(request_id)
            if first is not None:
                dst += range(row, row + len(d) + 1)
                src += range(first, first + len(d) + 1)
            row += len(d) + 1
        bitmask = torch.full((row, source.shape[1]), -1, dtype=torch.int32)
        bitmask[dst] = source[src]
        return bitmask.to(self.device, non_blocking=True)

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
