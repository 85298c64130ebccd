"""AsyncLLM: streaming deltas from a core on a thread and in its own process; abort; a dying core."""

from __future__ import annotations

import asyncio

import pytest

from engine import LLM, AsyncLLM, EngineConfig, EngineDeadError, SamplingParams

GREEDY = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)


async def collect(llm: AsyncLLM, request_id: str, prompt: list[int], params: SamplingParams):
    text, ids, last = "", [], None
    async for delta in llm.generate(request_id, prompt, params):
        text += delta.text
        ids += delta.token_ids
        last = delta
    return text, ids, last


async def wait_for(predicate, timeout=30.0):
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return False


async def test_in_process_stream_equals_offline(tiny_llama_dir):
    config = EngineConfig(model=tiny_llama_dir, max_model_len=256, num_kv_blocks=64)
    offline = LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=64)
    prompts = [[5, 6, 7, 8], list(range(10, 40))]
    expected = offline.generate(prompts, GREEDY)
    llm = await AsyncLLM.start(config, in_process=True)
    try:
        assert "full GC passes" not in llm.model_info.summary  # a core on a thread leaves its host's heap alone
        results = await asyncio.gather(*(collect(llm, f"r{i}", p, GREEDY) for i, p in enumerate(prompts)))
        for (text, ids, last), exp in zip(results, expected):
            assert ids == exp.token_ids and text == exp.text
            assert last.finished and last.finish_reason == "length"
        assert llm.num_inflight == 0
    finally:
        await llm.shutdown()


async def test_closing_the_stream_aborts_and_frees_blocks(tiny_llama_dir):
    config = EngineConfig(model=tiny_llama_dir, max_model_len=256, num_kv_blocks=64)
    llm = await AsyncLLM.start(config, in_process=True)
    try:
        gen = llm.generate("long", list(range(10, 60)), SamplingParams(max_tokens=200, temperature=0, ignore_eos=True))
        await gen.__anext__()
        assert llm.stats.num_free_blocks < 64
        await gen.aclose()
        assert await wait_for(lambda: llm.stats.num_free_blocks == 64 and llm.stats.num_running == 0)
        with pytest.raises(ValueError, match="max_tokens"):
            await collect(llm, "bad", [5, 6], SamplingParams(max_tokens=0))
        text, ids, last = await collect(llm, "after", [5, 6, 7], GREEDY)
        assert len(ids) == 16
    finally:
        await llm.shutdown()


async def test_core_process_serves_and_its_death_is_reported(tiny_llama_dir):
    config = EngineConfig(model=tiny_llama_dir, max_model_len=256, num_kv_blocks=64)
    llm = await AsyncLLM.start(config)
    try:
        assert llm.client.process is not None and llm.is_alive
        assert "startup objects kept out of full GC passes" in llm.model_info.summary  # engine/heap.py
        _, ids, _ = await collect(llm, "a", [5, 6, 7], GREEDY)
        assert len(ids) == 16
        gen = llm.generate("b", [5, 6, 7], SamplingParams(max_tokens=200, temperature=0, ignore_eos=True))
        await gen.__anext__()
        llm.client.process.kill()
        with pytest.raises(EngineDeadError):
            async for _ in gen:
                pass
        assert not llm.is_alive
        with pytest.raises(EngineDeadError):
            await collect(llm, "c", [5, 6, 7], GREEDY)
    finally:
        await llm.shutdown()


async def test_start_reports_a_bad_model_as_value_error(tmp_path):
    with pytest.raises(ValueError, match="model"):
        await AsyncLLM.start(EngineConfig(model=str(tmp_path / "missing")))
