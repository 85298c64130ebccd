"""Prefill pacing: the step-cost fit, the budget it gives, the scheduler and engine core using it."""

from __future__ import annotations

import random
import time

import pytest

from engine import LLM
from engine.kv_cache import KVCacheManager
from engine.prefill_pacing import IDLE_STEP_SECONDS, QUEUE_PER_DECODE, PrefillPacer
from engine.request import Request
from engine.scheduler import PROMPT_AGING, PROMPT_CLASS_SECONDS, Scheduler
from schemas.engine import SamplingParams
from tests.engine.conftest import assert_no_leak

A, B, C = 4e-3, 1.5e-3, 0.9e-3  # seconds: a step, a decode row, a prompt token


def cost(d: int, p: int) -> float:
    return A + B * d + C * p


def feed(pacer: PrefillPacer, steps: int = 200, seed: int = 0, noise: float = 0.0) -> None:
    rng = random.Random(seed)
    for _ in range(steps):
        d, p = rng.choice([(rng.randint(1, 64), 0), (0, rng.randint(16, 2048)), (rng.randint(1, 64), rng.randint(1, 256))])
        pacer.observe(d, p, cost(d, p) * (1 + rng.uniform(-noise, noise)))


def test_the_fit_recovers_the_step_costs_and_the_budget_follows_the_ratio():
    pacer = PrefillPacer(stall_ratio=2.0)
    feed(pacer)
    a, b, c = pacer.costs
    assert a == pytest.approx(A, rel=0.02) and b == pytest.approx(B, rel=0.02) and c == pytest.approx(C, rel=0.02)
    assert pacer.budget(1) == 16  # the floor: 2 x 5.5 ms of decode buys 12 tokens
    for rows in (4, 16, 64):
        assert pacer.budget(rows) == pytest.approx(2.0 * cost(rows, 0) / C, abs=2)
    assert pacer.budget(4) < pacer.budget(16) < pacer.budget(64)  # more rows decoding, a longer step to share


def test_a_queue_much_longer_than_the_decode_batch_widens_the_budget():
    pacer = PrefillPacer(stall_ratio=2.0, min_tokens=1)
    feed(pacer)
    plain = pacer.budget(2)
    assert pacer.budget(2, num_waiting=QUEUE_PER_DECODE * 2) == plain  # up to the threshold: the ratio as set
    assert pacer.budget(2, num_waiting=QUEUE_PER_DECODE * 2 * 3) == pytest.approx(3 * plain, abs=2)
    assert pacer.budget(64, num_waiting=30) == pacer.budget(64)  # a big batch with a short queue: unchanged


def test_noisy_steps_still_give_a_budget_near_the_truth():
    pacer = PrefillPacer(stall_ratio=1.0)
    feed(pacer, steps=400, noise=0.3)
    assert pacer.budget(16) == pytest.approx(cost(16, 0) / C, rel=0.15)


def test_the_fit_follows_a_machine_that_slows_down():
    """Costs move (another process takes a core): the fit forgets the old steps."""
    pacer = PrefillPacer(stall_ratio=1.0)
    feed(pacer)
    rng = random.Random(1)
    for _ in range(400):  # every cost doubled
        d, p = rng.randint(1, 64), rng.choice([0, rng.randint(1, 256)])
        pacer.observe(d, p, 2 * cost(d, p))
    assert pacer.costs[2] == pytest.approx(2 * C, rel=0.05)


def test_fallback_until_both_kinds_of_step_are_seen_then_a_floor():
    pacer = PrefillPacer(stall_ratio=1.0, fallback_tokens=77, min_tokens=16)
    assert pacer.budget(8) == 77
    for _ in range(50):  # decode steps only: the prompt token's cost is still unknown
        pacer.observe(8, 0, cost(8, 0))
    assert pacer.budget(8) == 77
    for _ in range(10):
        pacer.observe(0, 500, cost(0, 500))
    assert pacer.learned and pacer.budget(8) == int(cost(8, 0) / pacer.costs[2])
    pacer.observe(0, 0, 1.0)  # an empty step teaches nothing
    cheap = PrefillPacer(stall_ratio=0.01, min_tokens=16)
    feed(cheap)
    assert cheap.budget(1) == 16  # prompts always move forward


def test_a_bad_ratio_is_refused():
    with pytest.raises(ValueError):
        PrefillPacer(stall_ratio=0)


def _req(rid: str, first: int, n: int, max_tokens: int = 8) -> Request:
    return Request(rid, list(range(first, first + n)), SamplingParams(max_tokens=max_tokens), max_tokens, frozenset({0}))


def test_the_scheduler_gives_prompts_what_the_pacer_allows_while_others_decode():
    pacer = PrefillPacer(stall_ratio=1.0, min_tokens=4)
    feed(pacer)
    s = Scheduler(KVCacheManager(256, 4), 8, 512, 1024, max_prefill_tokens_while_decoding=128, pacer=pacer)
    s.add(_req("a", 1, 30))
    out = s.schedule()
    assert out.num_scheduled_tokens == [30] and (out.num_decode_tokens, out.num_prefill_tokens) == (0, 30)
    s.update(out, {"a": 7})
    s.add(_req("b", 1000, 300))
    out = s.schedule()
    allowed = pacer.budget(1)
    assert out.req_ids == ["a", "b"] and out.num_scheduled_tokens == [1, allowed]
    assert (out.num_decode_tokens, out.num_prefill_tokens) == (1, allowed)  # what the core reports to the pacer
    assert allowed == int(cost(1, 0) / pacer.costs[2]) and allowed < 128  # not the fixed cap
    for i in range(3 * QUEUE_PER_DECODE):  # a crowd arrives while one stream decodes
        s.add(_req(f"w{i}", 2000 + 400 * i, 300))
    s.update(out, {"a": 8})
    out = s.schedule()
    waiting = 1 + 3 * QUEUE_PER_DECODE  # b is still in its prompt
    assert out.num_prefill_tokens == pacer.budget(1, waiting) > allowed


def test_the_engine_paces_by_default_on_cpu_and_a_cap_alone_turns_it_off(tiny_llama_dir):
    paced = LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=64)
    assert paced.core.scheduler.pacer is not None and paced.core.scheduler.pacer.stall_ratio == 2.5
    assert "paced" in paced.core.info.summary
    params = SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True)
    prompts = [[1 + (i * 7 + j) % 200 for j in range(20 + 9 * i)] for i in range(6)]
    first = [o.token_ids for o in paced.generate(prompts, params)]
    pacer = paced.core.scheduler.pacer
    assert pacer._seen_decode > 0 and pacer._seen_prefill > 0  # the core reports its steps
    assert_no_leak(paced)
    capped = LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=64, max_prefill_tokens_while_decoding=8)
    assert capped.core.scheduler.pacer is None and "8 tokens a step" in capped.core.info.summary
    assert [o.token_ids for o in capped.generate(prompts, params)] == first  # pacing changes no token
    off = LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=64, prefill_stall_ratio=0)
    assert off.core.scheduler.pacer is None


def test_with_the_pacer_the_prompt_that_finishes_first_is_admitted_first_aged_by_its_wait():
    pacer = PrefillPacer(stall_ratio=1.0)
    feed(pacer)
    kv = KVCacheManager(256, 4)
    s = Scheduler(kv, 8, 64, 1024, pacer=pacer)
    # a finished turn leaves its prompt cached; the next turn shares it
    s.add(_req("turn1", 1, 200, max_tokens=1))
    while s.has_work():
        out = s.schedule()
        s.update(out, {rid: 0 for rid in out.req_ids if s.requests[rid].num_computed_tokens + 1 >= s.requests[rid].num_tokens})
    now = time.time()
    cold = _req("cold", 5000, 700)  # 0.63 s of prefill: a longer slice than turn2's
    cold.arrival_time = now - 0.01
    turn2 = Request("turn2", list(range(1, 201)) + [7, 8, 9], SamplingParams(max_tokens=8), 8, frozenset({0}))
    turn2.arrival_time = now
    s.add(cold)
    s.add(turn2)
    out = s.schedule()
    assert out.req_ids[0] == "turn2"  # 3 uncached tokens beat 700, though it came later
    assert s.requests["turn2"].num_cached_tokens >= 196
    # a long prompt that has waited longer than PROMPT_AGING times its own prefill time goes first
    s2 = Scheduler(KVCacheManager(256, 4), 8, 16, 1024, pacer=pacer)
    old = _req("old", 1, 700)
    old.arrival_time = now - PROMPT_AGING * (700 * pacer.costs[2] + 1.0)
    short = _req("short", 9000, 4)
    short.arrival_time = now
    s2.add(old)
    s2.add(short)
    assert s2.schedule().req_ids[0] == "old"
    # prompts within one PROMPT_CLASS_SECONDS slice keep their arrival order, the shorter one later
    s4 = Scheduler(KVCacheManager(256, 4), 8, 16, 1024, pacer=pacer)
    for rid, first, n, t in (("first", 1, 250, now - 0.5), ("shorter", 9000, 150, now)):
        r = _req(rid, first, n)
        r.arrival_time = t
        s4.add(r)
    assert (250 - 150) * pacer.costs[2] < PROMPT_CLASS_SECONDS and s4.schedule().req_ids[0] == "first"
    # without the pacer: first come, first served
    s3 = Scheduler(KVCacheManager(256, 4), 8, 16, 1024)
    s3.add(_req("long", 1, 300))
    s3.add(_req("tiny", 9000, 4))
    assert s3.schedule().req_ids[0] == "long"
    for sched in (s, s2, s3, s4):
        for rid in list(sched.requests):
            sched.finish(sched.requests[rid], "abort")
        assert sched.kv.num_free_blocks == sched.kv.num_blocks


def test_a_short_prompt_goes_before_a_long_one_already_under_way_until_that_one_has_waited():
    """With the pacer, prompt tokens go to the running prompts and the waiting ones together,
    the soonest to finish first: an agent's next turn does not wait for a cold prompt's whole
    prefill, and a running prompt passed over long enough (PROMPT_AGING times its own prefill
    time) comes first."""
    pacer = PrefillPacer(stall_ratio=1.0)
    feed(pacer)
    kv = KVCacheManager(512, 4)
    s = Scheduler(kv, 8, 64, 2048, pacer=pacer)
    now = time.time()
    cold = _req("cold", 1, 1000)
    cold.arrival_time = now - 0.01
    s.add(cold)
    out = s.schedule()
    assert out.req_ids == ["cold"] and out.num_scheduled_tokens == [64]  # under way: 936 tokens to go
    s.update(out, {})
    turn = _req("turn", 5000, 20)
    turn.arrival_time = now
    s.add(turn)
    out = s.schedule()
    assert out.req_ids == ["turn", "cold"] and out.num_scheduled_tokens == [20, 44]  # the short one first
    s.update(out, {"turn": 9})
    late = _req("late", 6000, 40)
    late.arrival_time = time.time()
    cold.arrival_time = time.time() - PROMPT_AGING * (1000 * pacer.costs[2] + 1.0)  # passed over long enough
    s.add(late)
    out = s.schedule()
    assert out.req_ids[:2] == ["turn", "cold"] and "late" not in out.req_ids[:2]  # the decode, then the aged prompt
    assert s.requests["turn"].num_computed_tokens == 20
    # without a learned pacer the running prompt keeps its place ahead of any admission
    s2 = Scheduler(KVCacheManager(512, 4), 8, 64, 2048, pacer=PrefillPacer(stall_ratio=1.0))
    s2.add(_req("cold", 1, 1000))
    s2.update(s2.schedule(), {})
    s2.add(_req("turn", 5000, 20))
    assert s2.schedule().req_ids == ["cold"]
    for sched in (s, s2):
        for rid in list(sched.requests):
            sched.finish(sched.requests[rid], "abort")
        assert sched.kv.num_free_blocks == sched.kv.num_blocks


def test_with_nobody_decoding_a_step_takes_about_half_a_second_of_prompt_once_learned():
    """A request arriving while prompts run alone waits for a step of IDLE_STEP_SECONDS, not for
    the whole 2,048-token budget; before the costs are learned the budget is whole."""
    pacer = PrefillPacer(stall_ratio=2.0)
    feed(pacer)
    idle = pacer.idle_budget()
    assert idle == pytest.approx((IDLE_STEP_SECONDS - A) / C, abs=3)
    s = Scheduler(KVCacheManager(1024, 4), 8, 2048, 4096, pacer=pacer)
    s.add(_req("long", 1, 2000))
    out = s.schedule()
    assert out.num_scheduled_tokens == [idle] and cost(0, idle) <= IDLE_STEP_SECONDS * 1.01
    fresh = PrefillPacer(stall_ratio=2.0)
    assert fresh.idle_budget() is None
    s2 = Scheduler(KVCacheManager(1024, 4), 8, 2048, 4096, pacer=fresh)
    s2.add(_req("long", 1, 2000))
    assert s2.schedule().num_scheduled_tokens == [2000]
    for sched in (s, s2):
        for rid in list(sched.requests):
            sched.finish(sched.requests[rid], "abort")
        assert sched.kv.num_free_blocks == sched.kv.num_blocks


def test_a_full_batch_ranks_no_waiting_prompts():
    """The admission order (a prefix lookup per waiting prompt) is worked out only on a step that
    can admit: with every sequence slot taken, the waiting queue is left as it is."""
    pacer = PrefillPacer(stall_ratio=1.0)
    feed(pacer)
    kv = KVCacheManager(256, 4)
    s = Scheduler(kv, 2, 64, 1024, pacer=pacer)
    lookups = []
    looked_up = kv.cached_prefix_len
    kv.cached_prefix_len = lambda rid, ids: lookups.append(rid) or looked_up(rid, ids)
    for rid, first in (("a", 1), ("b", 100)):
        s.add(_req(rid, first, 8))
    out = s.schedule()
    s.update(out, {"a": 7, "b": 7})
    for i in range(5):
        s.add(_req(f"w{i}", 1000 + 50 * i, 20))
    lookups.clear()
    out = s.schedule()
    assert out.req_ids == ["a", "b"] and lookups == []  # both slots decode; nobody ranked
    s.finish(s.requests["a"], "stop")
    out = s.schedule()
    assert len(lookups) == 5 and len(out.req_ids) == 2  # a slot freed: the queue is ranked, one admitted
    for rid in list(s.requests):
        s.finish(s.requests[rid], "abort")
    assert kv.num_free_blocks == kv.num_blocks
