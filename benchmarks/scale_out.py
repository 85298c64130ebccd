"""Scale-out on Ray (issue 40): the Ray hop's cost, prefix routing vs round-robin, replicas vs threads,
and a projection past one machine.

    python benchmarks/scale_out.py                                    # the default model, every part
    python benchmarks/scale_out.py --model /path/to/tiny --quick      # a fast smoke run
    python benchmarks/scale_out.py --parts hop,routing --json out.json --plot docs/bench/scale_out.png

Runs in one process against a local Ray instance that it starts on 127.0.0.1 (2 CPUs unless
--ray-cpus): the gateway's own EnginePool and Router over engine clients, no HTTP (the HTTP layer
is the same whichever replica a request goes to).

(a) hop: ITL p50 of one stream (`--hop-tokens` greedy tokens, `ignore_eos`) through one Ray replica
    vs one local engine-core process, both with one thread; `--repeats` runs alternating.
(b) routing: `--tenants` tenants, each a ~`--system-tokens` system prompt of its own, `--rounds`
    requests each with a new question, `--concurrency` at once (each round's tenants in a shuffled
    order, the same for both policies: a fixed interleaving would let round-robin pin tenants), on two Ray
    replicas, with --routing prefix and then round-robin (fresh prompts and cleared caches for each):
    TTFT p50/p99 and the prefix hit rate (cached prompt tokens / prompt tokens).
(c) threads: `--tp-requests` concurrent requests of `--tp-tokens` tokens each on 2 replicas x 1 thread
    vs 1 replica x 2 threads: output tokens/s.
Then a projection to 4, 16 and 64 replicas: tokens/s = replicas x the measured tokens/s of one
one-thread replica x (1 - routing time per request / request time), and the hit rate of replaying a
multi-tenant stream (4 tenants per replica, each replica's cache holding `--cache-tenants` tenant
prefixes, LRU) through the real Router with each policy. It is a model, not a measurement: it
assumes replicas that do not share cores and a Ray hop that stays what (a) measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from collections import OrderedDict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from serve import WORDS, machine_line, percentile  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="HF folder or GGUF (default: the embedded SmolLM2-135M-Instruct)")
    p.add_argument("--parts", default="hop,routing,threads", help="comma list of hop, routing, threads")
    p.add_argument("--ray-cpus", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--hop-tokens", type=int, default=128)
    p.add_argument("--tenants", type=int, default=8)
    p.add_argument("--system-tokens", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--answer-tokens", type=int, default=16)
    p.add_argument("--tp-requests", type=int, default=16)
    p.add_argument("--tp-tokens", type=int, default=64)
    p.add_argument("--cache-tenants", type=int, default=6, help="simulation: tenant prefixes one replica's cache holds")
    p.add_argument("--max-model-len", type=int, default=2048)
    p.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    p.add_argument("--json", default=None, help="write the figures here")
    p.add_argument("--plot", default=None, help="write the projection's plot here (matplotlib)")
    args = p.parse_args(argv)
    if args.quick:
        args.repeats, args.hop_tokens, args.tenants, args.system_tokens = 1, 32, 4, 200
        args.rounds, args.tp_requests, args.tp_tokens = 2, 4, 16
    return args


def _config(args, threads: int):
    from engine import EngineConfig

    return EngineConfig(model=args.model, num_threads=threads, max_model_len=args.max_model_len)


async def _stream(pool_or_llm, request_id, prompt, params) -> tuple[list[float], int, int]:
    """(arrival times of deltas, output tokens, cached prompt tokens) of one request."""
    stream = await pool_or_llm.submit(request_id, prompt, params)
    times, tokens, cached = [], 0, 0
    try:
        async for out in stream:
            times.append(time.perf_counter())
            tokens += len(out.token_ids)
            cached = max(cached, out.num_cached_tokens)
    finally:
        await stream.aclose()
    return times, tokens, cached


async def part_hop(args, tokenizer) -> dict:
    from engine import AsyncLLM, SamplingParams
    from engine.ray_client import RayEngine

    prompt = tokenizer.encode("Write a long story about a fox who learns to sail.")
    params = SamplingParams(max_tokens=args.hop_tokens, temperature=0, ignore_eos=True)
    local = await AsyncLLM.start(_config(args, 1))
    remote = await RayEngine.start(_config(args, 1))
    itl = {"local": [], "ray": []}
    try:
        for llm in (local, remote):  # warm-up
            await _stream(llm, "warm", prompt, params)
        for r in range(args.repeats):
            for name, llm in (("local", local), ("ray", remote)) if r % 2 == 0 else (("ray", remote), ("local", local)):
                times, _, _ = await _stream(llm, f"{name}-{r}", prompt, params)
                gaps = [b - a for a, b in zip(times, times[1:])]
                itl[name].append(statistics.median(gaps) * 1000)
    finally:
        await local.shutdown()
        await remote.shutdown()
    out = {name: statistics.median(values) for name, values in itl.items()}
    out["added_ms"] = out["ray"] - out["local"]
    out["runs_ms"] = itl
    return out


def _tenant_prompt(tokenizer, tenant: int, seed: int, system_tokens: int, question: int) -> list[int]:
    rng = random.Random(seed * 1000 + tenant)
    system = f"Tenant {seed}-{tenant}. You are the assistant of team {tenant}. Notes: " + " ".join(
        rng.choice(WORDS) for _ in range(int(system_tokens * 0.75)))  # ~4/3 tokens per word
    ids = tokenizer.encode(system)[:system_tokens]
    return ids + tokenizer.encode(f"\nQuestion {question}: what should we do next about item {rng.randint(0, 9999)}?")


async def part_routing(args, tokenizer, factory) -> dict:
    from engine import SamplingParams
    from gateway.engine_pool import EnginePool
    from gateway.routing import RoutingConfig

    engines = await asyncio.gather(factory(0), factory(1))
    results = {}
    try:
        for seed, policy in enumerate(("prefix", "round-robin"), start=1):
            pool = EnginePool(list(engines), None, max_queued=1024, routing=RoutingConfig(policy=policy))
            for llm in engines:
                await llm.reset_prefix_cache()
            order = random.Random(7)  # arrivals: each round's tenants in a shuffled order (the same for both)
            jobs = [(t, q) for q in range(args.rounds) for t in order.sample(range(args.tenants), args.tenants)]
            params = SamplingParams(max_tokens=args.answer_tokens, temperature=0, ignore_eos=True)
            ttfts, prompt_tokens, cached_tokens = [], 0, 0
            queue: asyncio.Queue = asyncio.Queue()
            for job in jobs:
                queue.put_nowait(job)

            async def worker() -> None:
                nonlocal prompt_tokens, cached_tokens
                while not queue.empty():
                    tenant, question = queue.get_nowait()
                    prompt = _tenant_prompt(tokenizer, tenant, seed, args.system_tokens, question)
                    start = time.perf_counter()
                    times, _, cached = await _stream(pool, f"{policy}-{tenant}-{question}", prompt, params)
                    ttfts.append((times[0] - start) * 1000)
                    prompt_tokens += len(prompt)
                    cached_tokens += cached

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(args.concurrency)))
            results[policy] = {"ttft_p50_ms": percentile(ttfts, 50), "ttft_p99_ms": percentile(ttfts, 99),
                               "hit_rate": cached_tokens / prompt_tokens, "seconds": time.perf_counter() - started,
                               "requests": len(jobs), "decisions": dict(pool.router.decisions)}  # fmt: skip
    finally:
        await asyncio.gather(*(llm.shutdown() for llm in engines))
    return results


async def part_threads(args, tokenizer, factory_of) -> dict:
    from engine import SamplingParams
    from gateway.engine_pool import EnginePool
    from gateway.routing import RoutingConfig

    params = SamplingParams(max_tokens=args.tp_tokens, temperature=0, ignore_eos=True)
    results = {}
    for name, replicas, threads in (("2x1", 2, 1), ("1x2", 1, 2)):
        engines = await asyncio.gather(*(factory_of(threads)(i) for i in range(replicas)))
        try:
            pool = EnginePool(list(engines), None, max_queued=1024, routing=RoutingConfig(policy="least-loaded"))
            prompts = [tokenizer.encode(f"Request {i}: list the steps to bake bread, number {i}.")
                       for i in range(args.tp_requests)]  # fmt: skip
            await _stream(pool, "warm", prompts[0], params)
            best = 0.0
            for r in range(args.repeats):
                started = time.perf_counter()
                done = await asyncio.gather(*(_stream(pool, f"{name}-{r}-{i}", p, params) for i, p in enumerate(prompts)))
                best = max(best, sum(tokens for _, tokens, _ in done) / (time.perf_counter() - started))
            results[name] = {"tokens_per_s": best}
        finally:
            await asyncio.gather(*(llm.shutdown() for llm in engines))
    return results


def simulate(per_replica_tps: float, request_s: float, cache_tenants: int, block_size: int = 16) -> list[dict]:
    """Replays 4 tenants per replica through the real Router (both policies) over LRU tenant caches."""
    from gateway.routing import Router, RoutingConfig

    rows = []
    for replicas in (4, 16, 64):
        tenants = 4 * replicas
        rng = random.Random(replicas)
        prefixes = [[(t * 7919 + i) % 30000 for i in range(1024)] for t in range(tenants)]
        row = {"replicas": replicas}
        for policy in ("prefix", "round-robin"):
            router = Router(RoutingConfig(policy=policy, block_size=block_size))
            caches = [OrderedDict() for _ in range(replicas)]
            load = [0] * replicas  # tokens in flight (4 requests per replica): uncached prompt + 64 generated
            inflight: list[tuple[int, int]] = []
            hits = total = 0
            overhead = []
            for n in range(50 * tenants):
                tenant = rng.randrange(tenants)
                t0 = time.perf_counter()
                hashes = router.hashes(prefixes[tenant] + [n % 30000])
                choice = router.choose({i: load[i] for i in range(replicas)}, hashes)
                router.record(choice.key, hashes)
                overhead.append(time.perf_counter() - t0)
                cache = caches[choice.key]
                total += 1
                if tenant in cache:
                    hits += 1
                    cache.move_to_end(tenant)
                else:
                    cache[tenant] = None
                    if len(cache) > cache_tenants:
                        cache.popitem(last=False)
                cost = 1024 - choice.matched_blocks * block_size + 64
                load[choice.key] += cost
                inflight.append((choice.key, cost))
                if len(inflight) > 4 * replicas:  # a random request in flight finishes
                    key, done = inflight.pop(rng.randrange(len(inflight)))
                    load[key] -= done
            route_s = statistics.median(overhead)
            row[policy] = {"hit_rate": hits / total, "route_us": route_s * 1e6,
                           "tokens_per_s": replicas * per_replica_tps * (1 - route_s / request_s)}  # fmt: skip
        rows.append(row)
    return rows


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    xs = [r["replicas"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.plot(xs, [r["prefix"]["tokens_per_s"] for r in rows], marker="o")
    left.set(xscale="log", yscale="log", xlabel="replicas", ylabel="projected output tokens/s", xticks=xs)
    left.set_xticklabels([str(x) for x in xs])
    left.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    for policy in ("prefix", "round-robin"):
        right.plot(xs, [r[policy]["hit_rate"] for r in rows], marker="o", label=policy)
    right.set(xscale="log", xlabel="replicas", ylabel="prefix hit rate (simulated)", ylim=(0, 1), xticks=xs)
    right.set_xticklabels([str(x) for x in xs])
    right.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    right.legend()
    fig.suptitle("Scale-out projection from one machine's measurements (benchmarks/scale_out.py)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


async def main(args) -> dict:
    from engine import ray_client
    from engine.loader import resolve_model
    from engine.tokenizer import load_tokenizer

    ray_client.connect(None, num_cpus=args.ray_cpus)  # on 127.0.0.1 only
    files = resolve_model(args.model, _config(args, 1).cache_dir)
    tokenizer = load_tokenizer(files.folder)
    parts = set(args.parts.split(","))
    figures: dict = {"machine": machine_line(), "model": args.model or "SmolLM2-135M-Instruct (default)"}

    def factory_of(threads: int):
        async def factory(index: int):
            return await ray_client.RayEngine.start(_config(args, threads))
        return factory

    if "hop" in parts:
        figures["hop"] = hop = await part_hop(args, tokenizer)
        print(f"(a) ITL p50, one stream: local core {hop['local']:.2f} ms, Ray replica {hop['ray']:.2f} ms "
              f"(+{hop['added_ms']:.2f} ms)", flush=True)
    if "routing" in parts:
        figures["routing"] = routing = await part_routing(args, tokenizer, factory_of(1))
        for policy, r in routing.items():
            print(f"(b) {policy:12s} TTFT p50 {r['ttft_p50_ms']:8.1f} ms  p99 {r['ttft_p99_ms']:8.1f} ms  "
                  f"prefix hit rate {r['hit_rate']:.2f}  ({r['requests']} requests in {r['seconds']:.1f} s)", flush=True)
    if "threads" in parts:
        figures["threads"] = threads = await part_threads(args, tokenizer, factory_of)
        print(f"(c) 2 replicas x 1 thread {threads['2x1']['tokens_per_s']:.1f} tok/s, "
              f"1 replica x 2 threads {threads['1x2']['tokens_per_s']:.1f} tok/s", flush=True)
        per_replica = threads["2x1"]["tokens_per_s"] / 2
        request_s = args.tp_tokens * args.tp_requests / 2 / per_replica
        figures["projection"] = rows = simulate(per_replica, request_s, args.cache_tenants)
        print("    replicas  tokens/s (prefix)  hit rate prefix / round-robin  routing us/request")
        for r in rows:
            print(f"    {r['replicas']:8d}  {r['prefix']['tokens_per_s']:17.0f}  "
                  f"{r['prefix']['hit_rate']:15.2f} / {r['round-robin']['hit_rate']:.2f}  {r['prefix']['route_us']:18.1f}")
        if args.plot:
            plot(rows, args.plot)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    arguments = parse_args()
    try:
        asyncio.run(main(arguments))
    finally:
        import ray

        ray.shutdown()
