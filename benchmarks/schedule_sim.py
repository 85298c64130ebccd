"""Scheduling policies judged without the machine: the real Scheduler driven by a step-cost model.

    python benchmarks/schedule_sim.py                       # the BF16 machine's costs (2026-12-05)
    python benchmarks/schedule_sim.py --policy fixed:128 --policy paced:1.0 --concurrency 4 16 64

Why: how prompt tokens share a step with decodes decides TTFT and ITL under load, and the
serving benchmark can only judge a policy on the machine it runs on; a session on another CPU
(an AVX2 one) still needs to know what a policy does on the project's AVX-512 BF16 machine.
This runs engine/scheduler.py itself (its budget, its prefill cap or pacer, its KV blocks) on a
virtual clock: each step costs what the cost model says for its decode rows and prompt tokens,
and the workload is benchmarks/serve.py's (closed loop, ~200-token prompts, 128 output tokens,
`--waves` requests per stream). The default costs are the BF16 machine's `benchmarks/step_profile.py`
figures of 2026-12-05 (decode 5.3 / 29 / 100 ms at 1 / 16 / 64 rows, prefill 0.93 ms a token at 1,000 tokens, 1.15 ms in a mixed step: with it the simulated fixed cap of 128
reproduces the measured ITL p99 at 4 and 16 streams within 3 % and ITL p50 at 64 within 6 %);
`--decode-ms` and `--prefill-ms` take another machine's. With the pacer, the simulated engine
feeds it the step times as the engine core does, so its online cost estimate is exercised too.
The simulated figures are a model: serve.py on the machine is the judge, this picks what to run there.
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import random
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.kv_cache import KVCacheManager  # noqa: E402
from engine.prefill_pacing import PrefillPacer  # noqa: E402
from engine.request import Request  # noqa: E402
from engine.scheduler import Scheduler  # noqa: E402
from schemas.engine import SamplingParams  # noqa: E402

# vLLM CPU 0.32 on the same BF16 machine, same workload (README table of 2026-12-05 13:04)
VLLM_BF16 = {1: (37.2, 167, 170, 26.1, 34.4), 4: (131.8, 591, 592, 25.8, 37.0),
             16: (252.1, 1525, 2128, 46.2, 66.5), 64: (367.7, 2678, 8496, 107.7, 1323.4)}  # fmt: skip


@dataclass
class CostModel:
    """Step time in ms: decode rows by linear interpolation of measured points, plus prompt tokens."""

    decode_points: list[tuple[int, float]]
    prefill_ms: float
    step_overhead_ms: float = 1.0

    def step_ms(self, num_decode: int, num_prefill: int) -> float:
        xs = [x for x, _ in self.decode_points]
        ys = [y for _, y in self.decode_points]
        if num_decode == 0:
            base = ys[0] * 0.6  # the weights are streamed once even with no decode row
        elif num_decode <= xs[0]:
            base = ys[0]
        elif num_decode >= xs[-1]:
            base = ys[-1] + (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]) * (num_decode - xs[-1])
        else:
            i = bisect.bisect_left(xs, num_decode)
            base = ys[i - 1] + (ys[i] - ys[i - 1]) * (num_decode - xs[i - 1]) / (xs[i] - xs[i - 1])
        return base + self.prefill_ms * num_prefill + self.step_overhead_ms


@dataclass
class Stream:
    submitted: float = 0.0
    last: float | None = None
    ttfts: list[float] = field(default_factory=list)
    itls: list[float] = field(default_factory=list)


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))] if xs else float("nan")


def make_scheduler(policy: str, budget: int) -> Scheduler:
    kind, _, arg = policy.partition(":")
    kv = KVCacheManager(4096, 16, enable_prefix_caching=False)
    if kind == "fixed":
        return Scheduler(kv, 64, budget, 4096, max_prefill_tokens_while_decoding=int(arg) or None)
    if kind == "paced":
        return Scheduler(kv, 64, budget, 4096, max_prefill_tokens_while_decoding=128, pacer=PrefillPacer(float(arg)))
    raise SystemExit(f"unknown policy {policy!r}: fixed:N or paced:RATIO")


def warm(sched: Scheduler, cost: CostModel, rng: random.Random) -> None:
    """A server has run steps before a benchmark level: the pacer has seen their costs."""
    if sched.pacer is None:
        return
    for _ in range(200):
        d, p = rng.choice([(rng.randint(1, 64), 0), (0, rng.randint(50, 2048)), (rng.randint(1, 64), rng.randint(1, 256))])
        sched.pacer.observe(d, p, cost.step_ms(d, p) / 1e3)


def simulate(policy: str, cost: CostModel, concurrency: int, waves: int, output_len: int, seed: int,
             client_ms: float = 20.0, budget: int = 2048) -> dict:  # fmt: skip
    """One closed-loop level; returns tok/s, TTFT and ITL percentiles in ms."""
    rng = random.Random(seed)
    sched = make_scheduler(policy, budget)
    warm(sched, cost, rng)
    total = max(4, waves * concurrency)  # as benchmarks/serve.py
    params = SamplingParams(max_tokens=output_len, ignore_eos=True, min_tokens=output_len)
    streams: dict[str, Stream] = {}
    now, issued, done, out_tokens = 0.0, 0, 0, 0
    arrivals: list[tuple[float, int]] = []

    def issue(at: float) -> None:
        nonlocal issued
        rid = f"r{issued}"
        prompt = [rng.randrange(1, 30000) for _ in range(rng.randint(185, 215))]
        sched.add(Request(rid, prompt, params, output_len, frozenset({0})))
        streams[rid] = Stream(submitted=at)
        issued += 1

    for _ in range(min(concurrency, total)):  # the clients' requests reach the engine a few ms apart
        heapq.heappush(arrivals, (rng.uniform(0, client_ms) / 1e3, -1))
    while done < total:
        while arrivals and arrivals[0][0] <= now:
            heapq.heappop(arrivals)
            if issued < total:
                issue(now)
        if not sched.has_work():
            if arrivals:
                now = arrivals[0][0]
            continue
        plan = sched.schedule()
        ms = cost.step_ms(plan.num_decode_tokens, plan.num_prefill_tokens)
        now += ms / 1e3
        if sched.pacer is not None:
            sched.pacer.observe(plan.num_decode_tokens, plan.num_prefill_tokens, ms / 1e3)
        sampled = {rid: 7 for rid, n, c in zip(plan.req_ids, plan.num_scheduled_tokens, plan.num_computed_tokens)
                   if c + n == sched.requests[rid].num_tokens}  # fmt: skip
        for p in sched.update(plan, sampled):
            st = streams[p.request.request_id]
            if st.last is None:
                st.ttfts.append(now - st.submitted)
            else:
                st.itls.append(now - st.last)
            st.last = now
            out_tokens += len(p.token_ids)
            if p.request.finish_reason is not None:
                done += 1
                heapq.heappush(arrivals, (now + rng.uniform(0, client_ms) / 1e3, done))
    ttfts = [t for s in streams.values() for t in s.ttfts]
    itls = [t for s in streams.values() for t in s.itls]
    return {"tok/s": out_tokens / now, "ttft50": percentile(ttfts, 50) * 1e3, "ttft99": percentile(ttfts, 99) * 1e3,
            "itl50": percentile(itls, 50) * 1e3, "itl99": percentile(itls, 99) * 1e3}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--policy", action="append", default=[], help="fixed:N (N prompt tokens a step while decoding; "
                   "0 = no cap) or paced:RATIO (engine/prefill_pacing.py); repeatable")  # fmt: skip
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    p.add_argument("--waves", type=int, default=2)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--decode-ms", default="1:5.3,16:29,64:100", help="ROWS:MS points of a decode step")
    p.add_argument("--prefill-ms", type=float, default=1.15, help="ms a prompt token adds to a step")
    p.add_argument("--client-ms", type=float, default=20.0,
                   help="a request reaches the engine up to this long after its client sends it (uniform)")
    p.add_argument("--seeds", type=int, default=3, help="runs per cell (prompt lengths vary); medians shown")
    args = p.parse_args()
    policies = args.policy or ["fixed:128", "paced:2.5"]
    points = [(int(r), float(m)) for r, m in (x.split(":") for x in args.decode_ms.split(","))]
    cost = CostModel(points, args.prefill_ms)
    print(f"cost model: decode {args.decode_ms} (rows:ms), prompt token {args.prefill_ms} ms; "
          f"closed loop, ~200-token prompts, {args.output_len} output tokens, {args.waves} waves; medians of {args.seeds}")
    print("| policy | streams | tok/s | TTFT p50 / p99 ms | ITL p50 / p99 ms | vLLM BF16 measured: tok/s, TTFT p50 / p99, ITL p50 / p99 |")
    print("|---|---:|---:|---:|---:|---|")
    for level in args.concurrency:
        for policy in policies:
            runs = [simulate(policy, cost, level, args.waves, args.output_len, seed, args.client_ms) for seed in range(args.seeds)]
            m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            v = VLLM_BF16.get(level)
            ref = f"{v[0]:.0f}, {v[1]:,} / {v[2]:,}, {v[3]} / {v[4]:,}" if v else ""
            print(f"| {policy} | {level} | {m['tok/s']:.1f} | {m['ttft50']:,.0f} / {m['ttft99']:,.0f} | "
                  f"{m['itl50']:.1f} / {m['itl99']:.1f} | {ref} |")  # fmt: skip


if __name__ == "__main__":
    main()
