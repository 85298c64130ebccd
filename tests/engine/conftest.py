"""Engine fixtures: a shared offline LLM on the tiny model, with a KV leak check after every test."""

from __future__ import annotations

import pytest

from engine import LLM


def assert_no_leak(llm: LLM) -> None:
    core = llm.core
    assert not core.scheduler.has_work(), "requests left in the scheduler"
    assert core.kv.num_free_blocks == core.kv.num_blocks, "KV blocks leaked"
    assert not core.kv.reqs, "block tables left behind"
    assert not core.runner.slots.slot_of, "runner slots left behind"


@pytest.fixture(scope="module")
def tiny_llm(tiny_llama_dir) -> LLM:
    return LLM(tiny_llama_dir, max_model_len=512, num_kv_blocks=256, block_size=16, max_num_seqs=32)


@pytest.fixture
def llm(tiny_llm):
    yield tiny_llm
    assert_no_leak(tiny_llm)
