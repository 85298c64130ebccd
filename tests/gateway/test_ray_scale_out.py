"""Engine replicas as Ray actors on a real multi-node Ray cluster on this machine (ray.cluster_utils.Cluster,
one CPU per node, the tiny model): spread over nodes, greedy parity with a local core, prefix routing vs
round-robin, failover of a killed replica, autoscaling, no KV block leaks, and no Ray listener off loopback.

Each test starts its own cluster (in its own short temp dir) and shuts it down, so a Ray left behind by
one test never captures the next one's `ray.init`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import tempfile
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from engine import AsyncLLM, EngineConfig  # noqa: E402
from engine import ray_client  # noqa: E402
from gateway.app import create_app  # noqa: E402
from gateway.engine_pool import EnginePool, PoolLimits, ScalingPolicy  # noqa: E402
from gateway.routing import Router, RoutingConfig  # noqa: E402
from gateway.state import SERVICES, GatewaySettings  # noqa: E402
from schemas.engine import SamplingParams  # noqa: E402
from tests.helpers.waiting import frozen, wait_for, wait_until  # noqa: E402

CHAT = "/v1/chat/completions"


@pytest.fixture
def ray_cluster(monkeypatch):
    """start(num_nodes) -> a Cluster of one-CPU nodes on 127.0.0.1, joined by this process."""
    from ray.cluster_utils import Cluster

    from ray._private import ray_constants

    # Every node on 127.0.0.1 (Ray 2.60): the variable for the Ray processes the cluster starts, the
    # constant Ray computed from it at import for this one.
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
    temp_dir = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths live under it
    # Cluster() writes the head's address to $RAY_TMPDIR/ray/ray_current_cluster (default /tmp/ray) without
    # creating the folder: on a fresh machine it does not exist; here it is the test's own
    os.makedirs(os.path.join(temp_dir, "ray"))
    monkeypatch.setenv("RAY_TMPDIR", temp_dir)
    clusters = []

    def start(num_nodes: int):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                                "temp_dir": temp_dir})  # fmt: skip
        clusters.append(cluster)
        for _ in range(num_nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray_client.connect(cluster.address)
        return cluster

    yield start
    ray.shutdown()
    for cluster in clusters:
        cluster.shutdown()
    shutil.rmtree(temp_dir, ignore_errors=True)


def _config(model: str, max_model_len: int = 256) -> EngineConfig:
    return EngineConfig(model=model, num_threads=1, max_model_len=max_model_len,
                        num_kv_blocks=max(64, 2 * max_model_len // 16), block_size=16)  # fmt: skip


async def _gateway(config: EngineConfig, size: int, **pool_kwargs) -> TestClient:
    async def factory(index: int):
        return await ray_client.RayEngine.start(config)

    async def start_pool() -> EnginePool:
        return await EnginePool.start(factory, size, max_queued=64,
                                      limits=PoolLimits(heartbeat_timeout_s=120.0), **pool_kwargs)  # fmt: skip

    client = TestClient(TestServer(create_app(GatewaySettings(), start_pool)))
    await client.start_server()
    return client


def _pool(client: TestClient) -> EnginePool:
    return client.server.app[SERVICES].pool


def _no_leaks(pool: EnginePool) -> bool:
    return all(r["num_free_blocks"] == r["num_total_blocks"] and r["inflight"] == 0 for r in pool.replicas())


def _listeners_off_loopback() -> list[str]:
    """LISTEN sockets of this process and its descendants (the Ray head, raylets, workers) not on loopback."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    ours, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        ours.add(pid)
        todo.extend(children.get(pid, []))
    inodes = set()
    for pid in ours:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    loopback = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}
    bad = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes and address.split(":")[0] not in loopback:
                bad.append(address)
    assert ours and inodes, "found no process or socket to check"
    return bad


async def _collect(stream) -> list[list[int]]:
    try:
        return [out.token_ids async for out in stream]
    finally:
        await stream.aclose()


async def _chat(client: TestClient, content: str, **extra) -> dict:
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": 8, "temperature": 0, **extra}
    resp = await client.post(CHAT, json=body)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_replicas_on_two_nodes_route_by_prefix_and_match_the_local_engine(ray_cluster, tiny_llama_dir):
    ray_cluster(2)
    config = _config(tiny_llama_dir)
    client = await _gateway(config, 2, routing=RoutingConfig(policy="prefix", block_size=16))
    try:
        pool = _pool(client)
        health = await (await client.get("/health")).json()
        nodes = {r["node"] for r in health["replicas"]}
        assert health["engines_alive"] == 2 and len(nodes) == 2  # one replica per node
        assert _listeners_off_loopback() == []

        # Requests spread over both replicas; greedy output is the local engine's.
        prompts = [f"Question {i}: what comes next?" for i in range(4)]
        remote = await asyncio.gather(*(_chat(client, p) for p in prompts))
        assert all(r["num_total_blocks"] == 64 for r in pool.replicas())
        assert all(llm.stats.num_prompt_tokens > 0 for llm in (s.llm for s in pool._slots))
        local = await AsyncLLM.start(config, in_process=True)
        try:
            greedy = SamplingParams(max_tokens=12, temperature=0, ignore_eos=True)
            for i, prompt in enumerate(prompts):
                tokenized = await client.post("/tokenize", json={"messages": [{"role": "user", "content": prompt}]})
                ids = (await tokenized.json())["tokens"]
                assert [t for out in await _collect(await pool.submit(f"ray-{i}", ids, greedy)) for t in out] == \
                    [t for out in await _collect(await local.submit(f"local-{i}", ids, greedy)) for t in out]
        finally:
            await local.shutdown()

        # A shared-prefix workload: three tenants, each a long system prompt, two rounds.
        async def rounds(tag: str) -> list[int]:
            cached = []
            for round_ in range(2):
                for tenant in range(3):
                    system = f"{tenant} {tag}: " + "you are a careful assistant. " * 3
                    reply = await _chat(client, f"turn {round_}", max_tokens=2,
                                        messages=[{"role": "system", "content": system},
                                                  {"role": "user", "content": f"turn {round_}"}])  # fmt: skip
                    cached.append(reply["usage"]["prompt_tokens_details"]["cached_tokens"] if round_ else None)
            return [c for c in cached if c is not None]

        assert all(c >= 48 for c in await rounds("prefix"))  # every second-round request hit its cache
        pool.router = Router(RoutingConfig(policy="round-robin"))
        assert any(c == 0 for c in await rounds("round-robin"))  # some landed where their prefix was not
        await wait_until(lambda: _no_leaks(pool))
        metrics = await (await client.get("/metrics")).text()
        assert metrics.count("gateway_replica_up{") == 2 and 'gateway_routing_decisions{reason="prefix"}' in metrics
        assert _listeners_off_loopback() == []
    finally:
        await client.close()


async def test_killed_replica_loses_only_started_streams_and_is_replaced(ray_cluster, tiny_llama_dir):
    """The victim streams one request (its first delta handed on) and then is frozen with a second request of
    the same prompt (prefix routing sends it there) unanswered in its inbox; SIGKILL: the first ends
    with an error event, the second completes on the other node, and a new replica takes the place."""
    ray_cluster(2)
    config = _config(tiny_llama_dir, max_model_len=1024)  # a stream of ~1,000 tokens: seconds, not the ms the test needs
    client = await _gateway(config, 2, routing=RoutingConfig(policy="prefix", block_size=16))
    try:
        pool = _pool(client)
        long = {"messages": [{"role": "user", "content": "Tell a long story about a fox and a dog."}],
                "max_tokens": 900, "ignore_eos": True, "temperature": 0, "stream": True}  # fmt: skip
        started = await client.post(CHAT, json=long)
        await wait_until(lambda: not pool._waiting)  # its first delta went to the handler: it has started
        busy = [s for s in pool._slots if s.llm.num_inflight == 1]
        assert len(busy) == 1, (pool.replicas(), (await started.read())[-600:])
        (victim,) = busy
        pid = victim.llm.client.where["pid"]
        with frozen(pid):
            waiting = asyncio.create_task(client.post(CHAT, json={**long, "max_tokens": 5, "stream": False}))
            await wait_until(lambda: victim.llm.num_inflight == 2)
            os.kill(pid, signal.SIGKILL)
        events = (await started.read()).decode()
        assert "after streaming part of this response" in events and events.endswith("data: [DONE]\n\n")
        moved = await waiting
        assert moved.status == 200 and (await moved.json())["choices"][0]["finish_reason"] == "length"
        assert pool.num_failovers == 1

        async def replaced() -> bool:
            health = await (await client.get("/health")).json()
            return health["engines_alive"] == 2 and pool.num_restarts == 1

        await wait_for(replaced)
        await asyncio.gather(*(_chat(client, f"after {i}") for i in range(2)))
        await wait_until(lambda: _no_leaks(pool))
    finally:
        await client.close()


async def test_scales_up_under_a_queue_reports_a_full_cluster_and_scales_down_when_idle(ray_cluster, tiny_llama_dir):
    ray_cluster(2)
    scaling = ScalingPolicy(min_replicas=1, max_replicas=3, scale_up_wait_s=0.3, scale_down_idle_s=1.0,
                            retry_unplaceable_s=3600)  # fmt: skip
    client = await _gateway(_config(tiny_llama_dir), 1, scaling=scaling, max_queued_per_replica=8)
    try:
        pool = _pool(client)
        first = pool._slots[0].llm
        with frozen(first.client.where["pid"]):
            held = asyncio.create_task(_chat(client, "held"))
            await wait_until(lambda: pool.size == 2 and pool._slots[1].llm.is_alive)  # the queue added one
            second = pool._slots[1].llm
            assert second.location != first.location  # on the other node: the head's CPU is taken
            await _chat(client, "served by the new replica")
            with frozen(second.client.where["pid"]):
                late = asyncio.create_task(_chat(client, "late"))

                async def reported() -> bool:
                    return (await (await client.get("/health")).json()).get("scaling")

                problem = await wait_for(reported)  # the cluster has no CPU for a third: said, not retried
                assert "has 0 CPUs" in problem and "needs 1 CPUs" in problem and pool.size == 2
        await asyncio.gather(held, late)
        await wait_until(lambda: pool.size == 1 and not second.is_alive)  # idle: the added replica goes
        assert pool._slots[0].llm is first and pool.num_scale_downs == 1
        await wait_until(lambda: _no_leaks(pool))
    finally:
        await client.close()
