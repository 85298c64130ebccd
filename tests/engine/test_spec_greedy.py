"""Speculative decoding keeps greedy output token for token: every proposer, with chunked prefill,
prefix caching, preemption, stop tokens inside an accepted run, max_tokens, logprobs, penalties
and grammar masks; the KV pools (target and draft) are whole again after each test."""

from __future__ import annotations

import pytest

from engine import JsonSchemaSpec, LLM, RegexSpec, SamplingParams
from engine.spec.policy import ObservedCost, StepCost
from compute_kernels.cpu.ops import load_ops
from tests.engine.conftest import assert_no_leak
from tests.engine.spec_models import make_tiny_model_with_vocab

pytestmark = pytest.mark.skipif(load_ops() is None, reason="no C compiler: greedy identity needs the batch-invariant kernels")

BASE = dict(max_model_len=512, num_kv_blocks=256, block_size=16, max_num_seqs=16)
REPEAT = [5, 17, 42, 9, 100, 3, 77, 12, 8, 250, 31, 64, 2, 90, 18, 44, 6, 130, 71, 15] * 3
PROMPTS = [REPEAT, list(range(40, 90)), [7, 8, 9] * 10, [300, 301]]
GREEDY = SamplingParams(max_tokens=40, temperature=0.0, ignore_eos=True, logprobs=2)


@pytest.fixture(scope="module")
def draft_dirs(tiny_llama_dir, tmp_path_factory):
    """Draft folders: the target itself (every draft accepted), and a model of another vocabulary."""
    other = make_tiny_model_with_vocab(tmp_path_factory.mktemp("tiny-vocab300"), vocab_size=300, seed=3)
    return {"self": tiny_llama_dir, "other_vocab": str(other)}


@pytest.fixture(scope="module")
def off(tiny_llama_dir):
    return LLM(tiny_llama_dir, **BASE)


@pytest.fixture(scope="module")
def engines(tiny_llama_dir, draft_dirs):
    """Speculating engines by name, built once each when first asked for."""
    built: dict[str, LLM] = {}
    kinds = {
        "ngram": dict(speculative="ngram", num_speculative_tokens=4),
        "ngram_auto": dict(speculative="ngram"),
        "draft": dict(speculative="draft", draft_model=draft_dirs["self"], num_speculative_tokens=3),
        "draft_auto": dict(speculative="draft", draft_model=draft_dirs["self"]),
        "tli": dict(speculative="tli", draft_model=draft_dirs["other_vocab"], num_speculative_tokens=4),
        "tli_self": dict(speculative="tli", draft_model=draft_dirs["self"], num_speculative_tokens=4),
    }

    def get(name: str, **overrides) -> LLM:
        key = name + repr(sorted(overrides.items()))
        if key not in built:
            built[key] = LLM(tiny_llama_dir, **{**BASE, **kinds[name], **overrides})
            policy = built[key].core.speculator.policy
            if name == "draft_auto":  # the draft is the target itself, as dear as it: make it look free so k > 0
                policy.draft_cost = StepCost([1], [0.0])
            if name.endswith("_auto"):  # timings on a loaded machine are noise: flat target costs keep k > 0
                policy.target_cost = ObservedCost(StepCost([1, 256], [0.01, 0.01]))
                policy.target_cost.record = lambda num_tokens, seconds: None
        return built[key]

    return get


def _same(on: LLM, off: LLM, prompts, params) -> list:
    want = off.generate(prompts, params)
    got = on.generate(prompts, params)
    for a, b in zip(want, got):
        assert b.token_ids == a.token_ids
        assert (b.finish_reason, b.stop_reason, b.text) == (a.finish_reason, a.stop_reason, a.text)
        if a.logprobs is not None:
            assert [(x.token_id, x.logprob, x.top_token_ids) for x in b.logprobs] == [
                (x.token_id, x.logprob, x.top_token_ids) for x in a.logprobs
            ]
    assert_no_leak(on)
    draft = on.core.speculator.draft
    if draft is not None:
        assert not draft.num_computed or all(r in on.core.scheduler.requests for r in draft.num_computed)
    return got


@pytest.mark.parametrize("name", ["ngram", "ngram_auto", "draft", "draft_auto", "tli", "tli_self"])
def test_greedy_output_is_identical(engines, off, name):
    got = _same(engines(name), off, PROMPTS, GREEDY)
    assert sum(out.num_draft_tokens for out in got) > 0, "nothing was proposed: the test tests nothing"


def test_a_draft_equal_to_the_target_is_always_accepted(engines, off):
    got = _same(engines("draft"), off, PROMPTS, GREEDY)
    assert all(out.num_accepted_tokens == out.num_draft_tokens > 0 for out in got)
    stats = engines("draft").core.stats()
    assert stats.spec_num_accepted_tokens == stats.spec_num_draft_tokens and stats.spec_num_rounds > 0


@pytest.mark.parametrize("name", ["ngram", "draft", "tli"])
def test_chunked_prefill_and_a_small_token_budget(engines, off, name):
    _same(engines(name, max_num_batched_tokens=6), off, PROMPTS, GREEDY)


def test_prefix_cache_hits(engines, off):
    llm = engines("draft")
    _same(llm, off, [REPEAT], GREEDY)
    hits = llm.core.kv.num_hit_tokens
    _same(llm, off, [REPEAT + [1, 2, 3]], GREEDY)
    assert llm.core.kv.num_hit_tokens > hits


@pytest.mark.parametrize("name", ["ngram", "draft", "tli"])
def test_preemption(engines, off, name):
    llm = engines(name, num_kv_blocks=14)
    _same(llm, off, PROMPTS, GREEDY)
    assert llm.core.scheduler.num_preemptions > 0


def test_stop_token_and_max_tokens_inside_an_accepted_run(engines, off):
    llm = engines("draft")
    plain = off.generate(PROMPTS, GREEDY)
    for out, prompt in zip(plain, PROMPTS):
        stop = out.token_ids[9]
        params = SamplingParams(max_tokens=40, temperature=0.0, stop_token_ids=[stop], logprobs=1)
        got = _same(llm, off, [prompt], params)[0]
        assert got.finish_reason == "stop" and got.token_ids[-1] == stop
    for max_tokens in (1, 2, 5, 7):
        params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
        assert all(len(o.token_ids) == max_tokens for o in _same(llm, off, PROMPTS, params))


def test_penalties_bias_and_min_tokens_see_the_drafts_before_them(engines, off):
    params = SamplingParams(max_tokens=30, temperature=0.0, repetition_penalty=1.3, frequency_penalty=0.5,
                            logit_bias={3: 2.0}, min_tokens=10, logprobs=0)  # fmt: skip
    _same(engines("draft"), off, PROMPTS, params)
    _same(engines("ngram"), off, PROMPTS, params)


def test_stop_strings_cut_a_multi_token_delta(engines, off):
    want = off.generate(PROMPTS, GREEDY)
    for out, prompt in zip(want, PROMPTS):
        text = out.text[len(out.text) // 2 :][:3]
        if text.strip():
            params = SamplingParams(max_tokens=40, temperature=0.0, ignore_eos=True, stop=[text])
            _same(engines("draft"), off, [prompt], params)


@pytest.mark.parametrize("name", ["ngram", "draft"])
def test_grammar_masks_and_matcher_rollback(engines, off, name):
    spec = JsonSchemaSpec(json_schema='{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}')
    params = SamplingParams(max_tokens=40, temperature=0.0, structured=spec)
    choice = SamplingParams(max_tokens=20, temperature=0.0, structured=RegexSpec(regex="(ab|cd)+x"))
    for p in (params, choice):
        _same(engines(name), off, PROMPTS, p)
