"""Routing over replicas: prefix affinity on the prefix cache's own block hashes, the load margin,
least-loaded and round-robin; and the pool's autoscaling on fake engines."""

from __future__ import annotations

import asyncio

import pytest

from engine.kv_cache import KVCacheManager
from gateway.engine_pool import EnginePool, PoolLimits, ScalingPolicy
from gateway.routing import Router, RoutingConfig, prefix_block_hashes
from schemas.engine import SamplingParams
from tests.gateway.fake_engine import FakeLLM
from tests.helpers.waiting import wait_until


def test_hashes_are_the_prefix_caches_own():
    prompt = list(range(100, 150))  # 3 full blocks of 16, and 2 tokens
    kv = KVCacheManager(num_blocks=8, block_size=16)
    kv.find_cached_prefix("r", prompt)
    assert prefix_block_hashes(prompt, 16, 64) == kv.reqs["r"].block_hashes
    assert prefix_block_hashes(prompt, 16, 2) == kv.reqs["r"].block_hashes[:2]
    assert prefix_block_hashes(prompt[:16], 16, 64) == []  # the last token is always computed: no full block


def test_prefix_affinity_until_the_margin():
    router = Router(RoutingConfig(policy="prefix", block_size=4, load_margin_tokens=100))
    tenant_a, tenant_b = [1] * 12 + [7], [2] * 12 + [7]
    ha, hb = router.hashes(tenant_a), router.hashes(tenant_b)
    first = router.choose({0: 0, 1: 0}, ha)
    assert first.reason == "least-loaded" and first.key == 0
    router.record(0, ha)
    assert router.choose({0: 50, 1: 0}, ha) == router.choose({0: 100, 1: 0}, ha)
    assert router.choose({0: 100, 1: 0}, ha).key == 0 and router.choose({0: 100, 1: 0}, ha).matched_blocks == 3
    over = router.choose({0: 101, 1: 0}, ha)
    assert over.key == 1 and over.reason == "overloaded"
    assert router.choose({0: 5, 1: 0}, hb).key == 1  # another tenant: no prefix held, least loaded
    router.record(1, hb[:1])  # a longer match wins over a shorter one
    router.record(0, hb)
    assert router.choose({0: 20, 1: 0}, hb).key == 0
    router.forget(0)
    assert router.choose({0: 20, 1: 0}, ha).reason == "least-loaded"


def test_round_robin_and_least_loaded():
    rr = Router(RoutingConfig(policy="round-robin"))
    assert [rr.choose({0: 9, 1: 0, 2: 0}, []).key for _ in range(4)] == [0, 1, 2, 0]
    ll = Router(RoutingConfig(policy="least-loaded"))
    assert ll.hashes(list(range(100))) == []
    assert ll.choose({0: 9, 1: 3, 2: 5}, []).key == 1
    with pytest.raises(ValueError, match="--routing"):
        RoutingConfig(policy="random")


async def _drain(stream) -> list[int]:
    tokens = []
    try:
        async for out in stream:
            tokens += out.token_ids
    finally:
        await stream.aclose()
    return tokens


async def test_pool_sends_a_shared_prefix_to_one_replica_and_round_robin_does_not(tokenizer):
    prompts = [[tenant] * 40 + [100 + i] for i in range(6) for tenant in (3, 4, 5)]  # three tenants, interleaved
    for policy in ("prefix", "round-robin"):
        engines = [FakeLLM(tokenizer), FakeLLM(tokenizer)]
        pool = EnginePool(engines, None, max_queued=64, routing=RoutingConfig(policy=policy))
        for i, prompt in enumerate(prompts):
            await _drain(await pool.submit(f"r{i}", prompt, SamplingParams(max_tokens=3)))
        tenants_of = [{req[1][0] for req in engine.requests} for engine in engines]
        if policy == "round-robin":
            assert tenants_of == [{3, 4, 5}, {3, 4, 5}]
        else:  # each tenant's requests all on one replica, and both replicas used
            assert not tenants_of[0] & tenants_of[1] and tenants_of[0] | tenants_of[1] == {3, 4, 5}
            assert all(tenants_of)
        assert all(e.num_free_blocks == e.num_total_blocks for e in engines)
        assert all(slot.load_tokens == 0 for slot in pool._slots)


async def test_autoscaling_adds_under_a_queue_and_removes_when_idle(tokenizer):
    made: list[FakeLLM] = []

    async def factory(index: int) -> FakeLLM:
        if len(made) == 2:
            raise RuntimeError("the cluster has 0 CPUs free")
        made.append(FakeLLM(tokenizer))
        return made[-1]

    first = FakeLLM(tokenizer)
    first.pause()
    pool = EnginePool([first], factory, max_queued=8, limits=PoolLimits(heartbeat_timeout_s=None),
                      scaling=ScalingPolicy(min_replicas=1, max_replicas=4, scale_up_wait_s=0.05,
                                            scale_down_idle_s=0.2, retry_unplaceable_s=3600),
                      max_queued_per_replica=2)  # fmt: skip
    supervisor = asyncio.create_task(pool.supervise(interval_s=0.02))
    try:
        held = await pool.submit("held", [1, 2, 3], SamplingParams(max_tokens=3))
        held_task = asyncio.create_task(_drain(held))
        await wait_until(lambda: pool.size == 2)  # the queue (a request without a token) added one
        assert pool.max_queued == 10
        made[0].pause()
        late = asyncio.create_task(_drain(await pool.submit("late", [9, 9, 9], SamplingParams(max_tokens=3))))
        await wait_until(lambda: pool.size == 3)
        late2 = asyncio.create_task(_drain(await pool.submit("late2", [8, 8], SamplingParams(max_tokens=3))))
        await wait_until(lambda: pool.scaling_problem is not None)  # reported, not retried in a loop
        assert "0 CPUs free" in pool.scaling_problem and pool.size == 3
        for engine in made:  # the added replicas finish first, then the first one (whose "held" waits):
            engine.resume()  # the first is idle last, so which replica stays does not race the machine
        await wait_until(lambda: all(e.num_inflight == 0 for e in made))
        first.resume()
        await asyncio.gather(held_task, late, late2)
        await wait_until(lambda: pool.size == 1)  # idle replicas go, newest first, down to the minimum
        assert pool.num_scale_ups == 2 and pool.num_scale_downs == 2 and pool.max_queued == 8
        assert [slot.llm for slot in pool._slots] == [first]
        assert all(not e.is_alive for e in made)  # shut down once their streams were done
    finally:
        supervisor.cancel()
        await pool.shutdown()
