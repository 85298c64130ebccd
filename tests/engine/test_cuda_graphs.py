"""Decode replay from graphs, driven on the CPU through a fake graph backend.

The fake captures by running the step once and replays by running the same captured call
again into the same output tensor: everything a replay may read is what a real CUDA graph
would read (the persistent buffers and the host values frozen at capture). The model's
attention is the C kernel, which, like the Triton kernel, reads lengths and block tables
from tensors, so a step that leaned on a host value would give wrong tokens here too.
"""

from __future__ import annotations

import pytest
import torch

from engine import LLM, SamplingParams
from engine.runner import ModelRunner
from engine.runner.cuda_graphs import DecodeGraphs, capture_sizes
from compute_kernels import cpu_kernels_available


class FakeGraph:
    def __init__(self, fn, out: torch.Tensor) -> None:
        self.fn, self.out, self.replays = fn, out, 0

    def replay(self) -> None:
        self.out.copy_(self.fn())
        self.replays += 1


class FakeGraphBackend:
    def __init__(self) -> None:
        self.graphs: list[FakeGraph] = []

    def capture(self, fn):
        out = fn()
        self.graphs.append(FakeGraph(fn, out))
        return self.graphs[-1], out

    def synchronize(self) -> None:
        pass

    @property
    def replays(self) -> int:
        return sum(g.replays for g in self.graphs)


def test_capture_sizes():
    assert capture_sizes(1) == [1]
    assert capture_sizes(3) == [1, 2, 3]
    assert capture_sizes(20) == [1, 2, 4, 8, 16, 20]
    assert capture_sizes(64) == [1, 2, 4] + list(range(8, 65, 8))
    assert capture_sizes(2000)[-1] == 512


def test_padding_and_which_steps_fit():
    graphs = DecodeGraphs(None, [], FakeGraphBackend(), [8, 1, 4, 2], 4, 8, 10, torch.device("cpu"))  # not captured
    assert [graphs.padded_size(n) for n in (1, 2, 3, 5, 8, 9)] == [1, 2, 4, 8, 8, None]
    assert graphs.fits([1, 1, 1]) and not graphs.fits([1, 5, 1]) and not graphs.fits([1] * 9)


def _swap_runner(llm: LLM, backend) -> ModelRunner:
    """A fresh runner (a fresh cache: no prefix caching) on the same model, attention through the C kernel."""
    core, old = llm.core, llm.core.runner
    core.runner = ModelRunner(old.model, core.kv.num_blocks, old.block_size, core.scheduler.max_num_seqs,
                              core.info.max_model_len, core.info.eos_token_ids, torch.device("cpu"), torch.float32,
                              use_cpu_kernels=True, graph_backend=backend)  # fmt: skip
    return core.runner


@pytest.fixture(scope="module")
def native_llm(tiny_llama_dir):
    if not cpu_kernels_available():
        pytest.skip("the fake graphs read attention through the C kernel, not built here")
    return LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=64, block_size=8, max_num_seqs=8,
               cpu_kernels=False, dtype="float32", enable_prefix_caching=False)  # fmt: skip


def _generate(llm: LLM, prompts, max_tokens):
    params = [SamplingParams(max_tokens=m, temperature=0.0, ignore_eos=True) for m in max_tokens]
    return [out.token_ids for out in llm.generate(prompts, params)]


def test_replayed_decode_gives_the_eager_tokens(native_llm):
    prompts = [[5 + i, 17, 30 + 3 * i, 9] * (1 + i) for i in range(6)]
    max_tokens = [3, 12, 5, 9, 7, 14]  # the batch shrinks 6 -> 1: replays padded to 8, 4, 2 and 1
    _swap_runner(native_llm, None)
    eager = _generate(native_llm, prompts, max_tokens)
    backend = FakeGraphBackend()
    runner = _swap_runner(native_llm, backend)
    assert sorted(runner.graphs.captured) == [1, 2, 4, 8]
    replayed = _generate(native_llm, prompts, max_tokens)
    assert replayed == eager
    assert backend.replays >= 10
    # padded rows wrote their keys into the scratch block past the pool's last block
    k_cache = runner.kv_caches[0][0]
    assert k_cache.shape[0] == (native_llm.core.kv.num_blocks + 1) * runner.block_size
    assert k_cache[-runner.block_size :].abs().sum() > 0


def test_prefill_steps_run_eagerly(native_llm):
    backend = FakeGraphBackend()
    _swap_runner(native_llm, backend)
    _generate(native_llm, [[3, 4, 5, 6, 7]] * 3, [1, 1, 1])  # one prefill step samples every token
    assert backend.replays == 0


def test_a_model_that_reads_host_values_is_never_captured(native_llm):
    class HostModel:
        kv_shape, max_position_embeddings = native_llm.core.runner.model.kv_shape, 256

    backend = FakeGraphBackend()
    runner = ModelRunner(HostModel(), 8, 8, 4, 64, [0], torch.device("cpu"), torch.float32, graph_backend=backend)
    assert runner.graphs is None and not backend.graphs
