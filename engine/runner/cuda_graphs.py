"""Decode steps replayed from CUDA graphs: one graph per captured batch size over persistent inputs.

A step whose requests all run one token (a decode step) is padded to the next captured
size and replayed: the runner's host lists are copied into persistent device buffers
(token ids, positions, cache slots, context lengths, block tables), which are what every
captured graph reads. Padded rows write their keys into a scratch block that no request
owns and read one key from it, so they stay finite and touch no request's cache. Prefill
and mixed steps, and batches above the largest size, run eagerly.

The graph machinery is a small backend (`CudaGraphBackend` on CUDA); the tests drive the
same capture and replay logic through a fake one on the CPU.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch

from compute_kernels import AttentionMetadata

MAX_CAPTURE_SIZE = 512


def capture_sizes(max_num_seqs: int) -> list[int]:
    """1, 2, 4, then every multiple of 8, up to max_num_seqs (itself included), at most 512."""
    top = min(max_num_seqs, MAX_CAPTURE_SIZE)
    sizes = [s for s in (1, 2, 4) if s <= top] + list(range(8, top + 1, 8))
    return sizes if sizes[-1] == top else sizes + [top]


class CudaGraphBackend:
    """torch.cuda graphs sharing one memory pool (capture the largest size first)."""

    def __init__(self) -> None:
        self.pool = None

    def capture(self, fn: Callable[[], torch.Tensor]):
        """Runs `fn` once under capture; returns (the graph, the output tensor it refills)."""
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            out = fn()
        return graph, out

    def synchronize(self) -> None:
        torch.cuda.synchronize()


@dataclass(slots=True)
class _Captured:
    graph: object  # has replay()
    hidden: torch.Tensor  # [size, hidden] refilled by each replay
    meta: AttentionMetadata


class DecodeGraphs:
    """Owned by the model runner; `run` is called by it for each decode step that `fits`."""

    def __init__(self, model, kv_caches, backend, sizes: list[int], max_blocks_per_req: int, block_size: int,
                 scratch_block: int, device: torch.device, use_cpu_kernels: bool = False) -> None:  # fmt: skip
        self.model, self.kv_caches, self.backend = model, kv_caches, backend
        self.sizes = sorted(sizes)
        self.block_size = block_size
        self.scratch_slot = scratch_block * block_size
        self.use_cpu_kernels = use_cpu_kernels
        max_size = self.sizes[-1]
        # rows: token ids, positions, cache slots, context lengths; one host-to-device copy per step
        self.step_inputs = torch.zeros(4, max_size, dtype=torch.long, device=device)  # [4, max_size]
        self.step_inputs[2] = self.scratch_slot
        self.step_inputs[3] = 1
        pinned = device.type == "cuda"
        self.staging = torch.zeros(4, max_size, dtype=torch.long, pin_memory=pinned)  # [4, max_size] host
        self.query_start = torch.arange(max_size + 1, device=device)  # [max_size + 1]: one token each
        self.block_tables = torch.full((max_size, max_blocks_per_req), scratch_block, dtype=torch.long, device=device)
        self.captured: dict[int, _Captured] = {}

    def _meta(self, size: int) -> AttentionMetadata:
        """Metadata over the buffers' first `size` rows; its host lists are never read on replay."""
        return AttentionMetadata([1] * size, [1] * size, self.query_start[: size + 1], self.step_inputs[3, :size],
                                 self.block_tables[:size], self.step_inputs[2, :size], self.block_size,
                                 self.use_cpu_kernels)  # fmt: skip

    def _forward(self, size: int, meta: AttentionMetadata) -> torch.Tensor:
        return self.model(self.step_inputs[0, :size], self.step_inputs[1, :size], self.kv_caches, meta)

    @torch.inference_mode()
    def capture(self) -> None:
        """Captures every size, largest first (smaller graphs reuse the pool). Called once, at start."""
        for size in reversed(self.sizes):
            meta = self._meta(size)
            self._forward(size, meta)  # warm-up: kernels compiled and tuned outside the capture
            self.backend.synchronize()
            graph, hidden = self.backend.capture(functools.partial(self._forward, size, meta))
            self.captured[size] = _Captured(graph, hidden, meta)
        self.backend.synchronize()

    def padded_size(self, num_reqs: int) -> int | None:
        """The smallest captured size that holds `num_reqs` rows, or None (run eagerly)."""
        i = bisect.bisect_left(self.sizes, num_reqs)
        return self.sizes[i] if i < len(self.sizes) else None

    def fits(self, num_scheduled_tokens: list[int]) -> bool:
        """A decode step (one token per request) of a captured size."""
        return self.padded_size(len(num_scheduled_tokens)) is not None and all(n == 1 for n in num_scheduled_tokens)

    def run(self, input_ids: list[int], positions: list[int], slot_mapping: list[int], seq_lens: list[int],
            block_tables: torch.Tensor) -> torch.Tensor:  # fmt: skip
        """Replays the padded graph for one decode step; block_tables [num_reqs, width] on the host.
        Returns the hidden states [num_reqs, hidden], valid until the next replay."""
        num_reqs = len(input_ids)
        size = self.padded_size(num_reqs)
        pad = size - num_reqs
        rows = (input_ids + [0] * pad, positions + [0] * pad, slot_mapping + [self.scratch_slot] * pad, seq_lens + [1] * pad)
        self.staging[:, :size] = torch.tensor(rows, dtype=torch.long)
        self.step_inputs[:, :size].copy_(self.staging[:, :size], non_blocking=True)
        width = block_tables.shape[1]
        # padded rows keep whatever block ids an earlier step left (valid ones): they read one key and
        # write only the scratch slot, so their garbage never reaches a request
        self.block_tables[:num_reqs, :width].copy_(block_tables, non_blocking=True)
        captured = self.captured[size]
        captured.graph.replay()
        return captured.hidden[:num_reqs]
