"""Scheduler: token budget, chunked prefill mixed with decodes, preemption, abort."""

from engine.kv_cache import KVCacheManager
from engine.request import Request
from engine.scheduler import Scheduler
from schemas.engine import SamplingParams


def make(num_blocks=16, block_size=4, max_num_seqs=4, budget=8, max_len=64):
    return Scheduler(KVCacheManager(num_blocks, block_size), max_num_seqs, budget, max_len)


def req(rid, n, max_tokens=4):
    return Request(rid, list(range(1, n + 1)), SamplingParams(max_tokens=max_tokens), max_tokens, frozenset({0}))


def run_step(s, token=7):
    out = s.schedule()
    sampled = {}
    for rid, n, c in zip(out.req_ids, out.num_scheduled_tokens, out.num_computed_tokens):
        if c + n == s.requests[rid].num_tokens:
            sampled[rid] = token
    s.update(out, sampled)
    return out


def test_chunked_prefill_respects_budget_and_mixes_with_decode():
    s = make(budget=8)
    s.add(req("a", 3))
    out = run_step(s)
    assert out.num_scheduled_tokens == [3]
    s.add(req("b", 20))
    out = run_step(s)
    assert out.req_ids == ["a", "b"] and out.num_scheduled_tokens == [1, 7]
    out = run_step(s)
    assert out.num_scheduled_tokens == [1, 7]
    assert s.requests["b"].num_computed_tokens == 14


def test_max_num_seqs_limits_running():
    s = make(max_num_seqs=2, budget=100)
    for i in range(3):
        s.add(req(f"r{i}", 2))
    out = run_step(s)
    assert out.req_ids == ["r0", "r1"] and len(s.waiting) == 1


def test_preemption_by_recompute_when_blocks_run_out():
    s = make(num_blocks=4, block_size=4, budget=100)
    s.add(req("a", 7, max_tokens=8))
    s.add(req("b", 7, max_tokens=8))
    run_step(s)  # both admitted: 2 blocks each
    run_step(s)
    run_step(s)  # a needs a 3rd block: b, admitted last, is preempted
    assert s.num_preemptions == 1
    assert s.requests["b"].num_computed_tokens == 0 and s.waiting[0].request_id == "b"
    for _ in range(30):
        if not s.has_work():
            break
        run_step(s)
    assert not s.has_work()
    assert s.kv.num_free_blocks == 4


def test_finish_on_length_and_eos_frees_blocks():
    s = make()
    s.add(req("a", 3, max_tokens=2))
    run_step(s)
    run_step(s)
    assert "a" not in s.requests and s.kv.num_free_blocks == 16
    s.add(req("b", 3, max_tokens=5))
    run_step(s, token=0)  # EOS
    assert "b" not in s.requests


def test_abort_waiting_and_running():
    s = make(max_num_seqs=1)
    s.add(req("a", 3, max_tokens=10))
    s.add(req("b", 3))
    run_step(s)
    s.finish(s.requests["a"], "abort")
    s.finish(s.requests["b"], "abort")
    assert not s.has_work() and s.kv.num_free_blocks == 16
    out = s.schedule()
    assert set(out.freed_req_ids) == {"a", "b"}


def test_prefill_is_capped_while_others_decode():
    """With a request decoding, prompt tokens (a running chunk and admissions) share the cap;
    with nobody decoding a prompt gets the whole budget."""
    s = Scheduler(KVCacheManager(64, 4), 4, 32, 128, max_prefill_tokens_while_decoding=5)
    s.add(req("a", 20, max_tokens=8))
    out = run_step(s)
    assert out.num_scheduled_tokens == [20]  # nobody decodes yet: the whole prompt at once
    for rid, first in (("b", 100), ("c", 200)):  # tokens no cached block holds
        s.add(Request(rid, list(range(first, first + 9)), SamplingParams(max_tokens=8), 8, frozenset({0})))
    out = run_step(s)
    assert out.req_ids == ["a", "b"] and out.num_scheduled_tokens == [1, 5]
    out = run_step(s)  # b's last 4 prompt tokens, then c admitted with the cap's last one
    assert out.req_ids == ["a", "b", "c"] and out.num_scheduled_tokens == [1, 4, 1]
    out = run_step(s)
    assert out.num_scheduled_tokens == [1, 1, 5]
    assert sum(out.num_scheduled_tokens) <= 32


def test_prefill_cap_off_takes_the_whole_budget():
    s = Scheduler(KVCacheManager(64, 4), 4, 32, 128, max_prefill_tokens_while_decoding=None)
    s.add(req("a", 3, max_tokens=8))
    run_step(s)
    s.add(req("b", 40, max_tokens=8))
    out = run_step(s)
    assert out.num_scheduled_tokens == [1, 31]
