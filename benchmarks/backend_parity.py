"""Native vs transformers backend, same model, same engine, in one run: tok/s, TTFT, ITL and their ratio.

For each prompt length and concurrency N: N clients each keep one request in flight
(closed loop, `--requests-per-client` requests each) of PROMPT_LEN random prompt tokens
(fresh per run, so the prefix cache never hits) and OUTPUT_LEN output tokens (ignore_eos),
driven through the engine core step by step. Both backends are loaded once and, at every
point, run in lockstep: one engine step of each in turn, each timed on its own clock (its
own steps and client work only), so load on the shared machine slows both alike
(`--sequential`: one whole run after the other on the wall clock, alternating who goes
first; a load change during one run then lands on one backend only). Ratios are speed
ratios (transformers / native for tok/s, native / transformers for latencies): 1.0 is
parity, above 1 the transformers backend wins.

    .venv/bin/python benchmarks/backend_parity.py --plot parity.png          # full sweep (idle machine!)
    .venv/bin/python benchmarks/backend_parity.py --concurrency 1 8 --prompt-lens 128 --output-len 16 --repeats 1 --profile
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Run as a script, Python puts benchmarks/ first on sys.path, where benchmarks/grammar.py
# shadows the grammar package that the engine core imports (its vocabulary build fails).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import torch  # noqa: E402

from engine import LLM, ChoiceSpec, SamplingParams  # noqa: E402
from schemas.engine import EngineRequest  # noqa: E402

BACKENDS = ("native", "transformers")


@dataclass(slots=True)
class Point:
    backend: str
    prompt_len: int
    concurrency: int
    tok_s: float
    ttft_ms: float  # mean time to first token
    itl_ms: float  # mean inter-token latency


def make_prompts(num: int, prompt_len: int, vocab_size: int, seed: int) -> list[list[int]]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(100, vocab_size - 100, (num, prompt_len), generator=gen).tolist()


class ClosedLoop:
    """The clients of one run on one engine: `concurrency` of them each keep one request in
    flight until the prompts run out; records submit and token times on whatever clock the
    caller passes (wall time, or an engine's own busy time in lockstep runs)."""

    def __init__(self, llm: LLM, prompts: list[list[int]], output_len: int, ids) -> None:
        self.core = llm.core
        self.params = SamplingParams(max_tokens=output_len, temperature=0.0, ignore_eos=True)
        self.queue = list(prompts)
        self.ids = ids
        self.submitted: dict[str, float] = {}
        self.token_times: dict[str, list[float]] = {}

    def submit(self, now: float) -> None:
        request_id = f"bench-{next(self.ids)}"
        self.submitted[request_id], self.token_times[request_id] = now, []
        error = self.core.add_request(EngineRequest(request_id=request_id, prompt_token_ids=self.queue.pop(),
                                                    params=self.params))  # fmt: skip
        if error is not None:
            raise RuntimeError(error.error)

    def start(self, concurrency: int, now: float) -> None:
        for _ in range(min(concurrency, len(self.queue))):
            self.submit(now)

    def step(self, clock) -> None:
        """One engine step; `clock()` is read after it for the tokens' time and new submissions."""
        outputs = self.core.step()
        now = clock()
        for out in outputs:
            self.token_times[out.request_id].extend([now] * len(out.new_token_ids))
            if out.finish_reason is not None and self.queue:
                self.submit(now)

    def result(self, elapsed: float) -> tuple[float, float, float]:
        """(output tok/s, mean TTFT s, mean ITL s) over `elapsed` seconds."""
        times = self.token_times
        num_tokens = sum(len(t) for t in times.values())
        ttft = statistics.mean(t[0] - self.submitted[r] for r, t in times.items())
        spans = [(t[-1] - t[0]) / (len(t) - 1) for t in times.values() if len(t) > 1]
        return num_tokens / elapsed, ttft, statistics.mean(spans) if spans else 0.0


def run_point(llm: LLM, prompts: list[list[int]], output_len: int, concurrency: int, ids) -> tuple[float, float, float]:
    """One engine alone on the wall clock; returns (output tok/s, mean TTFT s, mean ITL s)."""
    loop = ClosedLoop(llm, prompts, output_len, ids)
    start = time.perf_counter()
    loop.start(concurrency, start)
    while loop.core.has_work():
        loop.step(time.perf_counter)
    return loop.result(time.perf_counter() - start)  # result uses time differences only


def run_lockstep(llms: dict[str, LLM], prompts: list[list[int]], output_len: int, concurrency: int,
                 ids) -> dict[str, tuple[float, float, float]]:
    """Both engines at once, one step of each in turn, each timed on its own clock (the sum of
    its own steps and client work): a change in machine load hits both within one step of each
    other instead of one whole run, so the ratio survives a noisy machine. The model weights
    (hundreds of MB) never fit in cache, so alternating costs neither engine its cache."""
    loops = {b: ClosedLoop(llm, prompts, output_len, ids) for b, llm in llms.items()}
    busy = dict.fromkeys(loops, 0.0)
    for loop in loops.values():
        loop.start(concurrency, 0.0)
    turn = 0
    while any(loop.core.has_work() for loop in loops.values()):
        order = list(loops) if turn % 2 == 0 else list(reversed(loops))  # neither always goes first
        turn += 1
        for backend in order:
            loop = loops[backend]
            if not loop.core.has_work():
                continue
            t0 = time.perf_counter()
            loop.step(lambda: busy[backend] + time.perf_counter() - t0)
            busy[backend] += time.perf_counter() - t0
    return {b: loop.result(busy[b]) for b, loop in loops.items()}


def sweep(llms: dict[str, LLM], args) -> list[Point]:
    points = []
    ids = itertools.count()
    vocab = llms["native"].info.vocab_size
    for prompt_len, concurrency in itertools.product(args.prompt_lens, args.concurrency):
        runs: dict[str, list[tuple[float, float, float]]] = {b: [] for b in BACKENDS}
        for repeat in range(args.repeats):
            prompts = make_prompts(concurrency * args.requests_per_client, prompt_len, vocab, seed=next(ids))
            if args.sequential:
                for backend in BACKENDS if repeat % 2 == 0 else reversed(BACKENDS):  # alternate who runs first
                    runs[backend].append(run_point(llms[backend], prompts, args.output_len, concurrency, ids))
            else:
                for backend, result in run_lockstep(llms, prompts, args.output_len, concurrency, ids).items():
                    runs[backend].append(result)
        for backend in BACKENDS:
            tok_s, ttft, itl = (statistics.median(r[i] for r in runs[backend]) for i in range(3))
            points.append(Point(backend, prompt_len, concurrency, tok_s, ttft * 1e3, itl * 1e3))
        pairs = list(zip(runs["native"], runs["transformers"]))
        each = " ".join(f"{t[0] / n[0]:.2f}" for n, t in pairs)
        native, trf = points[-2], points[-1]
        print(f"prompt {prompt_len:5d}  n={concurrency:3d}  native {native.tok_s:8.1f} tok/s  transformers {trf.tok_s:8.1f} "
              f"tok/s  ratios: tok/s {trf.tok_s / native.tok_s:5.2f} (each repeat: {each})  "
              f"TTFT {_ratio(native.ttft_ms, trf.ttft_ms)}  ITL {_ratio(native.itl_ms, trf.itl_ms)}  (load {_load()})",
              flush=True)  # fmt: skip
    return points


def print_table(points: list[Point], args) -> None:
    print(f"\n{args.output_len} output tokens per request, {args.requests_per_client} request(s) per client, "
          f"median of {args.repeats}; ratio = transformers speed / native speed")  # fmt: skip
    print("| prompt | clients | native tok/s | trf tok/s | ratio | native TTFT ms | trf TTFT ms | ratio "
          "| native ITL ms | trf ITL ms | ratio |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for native, trf in zip(points[0::2], points[1::2]):
        print(f"| {native.prompt_len} | {native.concurrency} | {native.tok_s:.1f} | {trf.tok_s:.1f} | {trf.tok_s / native.tok_s:.2f} "
              f"| {native.ttft_ms:.0f} | {trf.ttft_ms:.0f} | {native.ttft_ms / trf.ttft_ms:.2f} "
              f"| {native.itl_ms:.1f} | {trf.itl_ms:.1f} | {_ratio(native.itl_ms, trf.itl_ms)} |")  # fmt: skip


def _ratio(native: float, trf: float) -> str:
    return f"{native / trf:.2f}" if trf else "-"


def _load() -> str:
    """The 1, 5 and 15 minute load averages: timings on a busy machine are noisy."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def plot(points: list[Point], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prompt_lens = sorted({p.prompt_len for p in points})
    metrics = [("tok_s", "output tokens/s"), ("ttft_ms", "TTFT (ms)"), ("itl_ms", "ITL (ms)")]
    fig, axes = plt.subplots(len(prompt_lens), 4, figsize=(17, 3.6 * len(prompt_lens)), squeeze=False)
    for row, prompt_len in enumerate(prompt_lens):
        _plot_ratios(axes[row][3], [p for p in points if p.prompt_len == prompt_len], prompt_len)
        for col, (attr, label) in enumerate(metrics):
            ax = axes[row][col]
            for backend, style in zip(BACKENDS, ("-o", "--x")):
                series = [p for p in points if p.backend == backend and p.prompt_len == prompt_len]
                ax.plot([p.concurrency for p in series], [getattr(p, attr) for p in series], style, label=backend)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("concurrent requests")
            ax.set_title(f"{label}, prompt {prompt_len}")
            ax.legend()
    fig.suptitle("Native vs transformers backend, same engine (ratio: transformers speed / native speed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot saved to {path}")


def _plot_ratios(ax, points: list[Point], prompt_len: int) -> None:
    """Speed ratios transformers / native (latencies inverted) against the 0.95 target."""
    pairs = list(zip(points[0::2], points[1::2]))
    clients = [native.concurrency for native, _ in pairs]
    ax.plot(clients, [t.tok_s / n.tok_s for n, t in pairs], "-o", label="tok/s")
    ax.plot(clients, [n.ttft_ms / t.ttft_ms for n, t in pairs], "--s", label="TTFT")
    ax.plot(clients, [n.itl_ms / t.itl_ms if t.itl_ms else float("nan") for n, t in pairs], ":^", label="ITL")
    ax.axhline(0.95, color="grey", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrent requests")
    ax.set_title(f"speed ratio, prompt {prompt_len}")
    ax.legend()


def profile_decode_step(llms: dict[str, LLM], concurrency: int, prompt_len: int) -> None:
    """Prints where one decode step's CPU time goes in each backend, `concurrency` requests deep."""
    from torch.profiler import ProfilerActivity, profile

    for backend, llm in llms.items():
        core = llm.core
        params = SamplingParams(max_tokens=64, temperature=0.0, ignore_eos=True)
        request_ids = [f"profile-{backend}-{i}" for i in range(concurrency)]
        for request_id, prompt in zip(request_ids, make_prompts(concurrency, prompt_len, llm.info.vocab_size, seed=7)):
            core.add_request(EngineRequest(request_id=request_id, prompt_token_ids=prompt, params=params))
        while core.scheduler.waiting or any(r.num_computed_tokens < r.num_tokens - 1 for r in core.scheduler.running):
            core.step()  # prefill everything first
        core.step()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            core.step()
        print(f"\n{backend}: one decode step of {concurrency} requests")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
        core.abort(request_ids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="model path (default: the embedded SmolLM2-135M-Instruct)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    ap.add_argument("--prompt-lens", type=int, nargs="+", default=[128, 1024])
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--requests-per-client", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3, help="runs per point; the median is reported")
    ap.add_argument("--dtype", default=None, help="float32 / bfloat16 / float16 (default: the engine's)")
    ap.add_argument("--max-num-batched-tokens", type=int, default=2048)
    ap.add_argument("--plot", default=None, help="save a PNG plot here")
    ap.add_argument("--sequential", action="store_true",
                    help="run the backends one after the other on the wall clock instead of in lockstep")
    ap.add_argument("--profile", action="store_true", help="also profile one decode step per backend at the largest point")
    args = ap.parse_args()

    block_size = 16
    per_request = -(-(max(args.prompt_lens) + args.output_len) // block_size)
    llms = {
        backend: LLM(args.model, model_impl=backend, dtype=args.dtype, block_size=block_size,
                     max_num_seqs=max(args.concurrency), max_num_batched_tokens=args.max_num_batched_tokens,
                     num_kv_blocks=per_request * max(args.concurrency) + 8)  # fmt: skip
        for backend in BACKENDS
    }
    for llm in llms.values():  # warm-up
        llm.generate(make_prompts(2, 32, llm.info.vocab_size, seed=10**6), SamplingParams(max_tokens=4, ignore_eos=True))
        # The core builds the grammar vocabulary on a thread at start; until it is done it
        # competes with the step loop for the GIL (decode steps 3-4x slower). A constrained
        # request waits for that build, so the sweep starts on a quiet core.
        llm.generate([[100, 101]], SamplingParams(max_tokens=2, structured=ChoiceSpec(choice=["yes", "no"])))
    print(f"torch threads {torch.get_num_threads()}, load {_load()}", flush=True)
    start = time.perf_counter()
    points = sweep(llms, args)
    print_table(points, args)
    print(f"\nsweep took {time.perf_counter() - start:.0f} s, load at the end {_load()}")
    if args.plot:
        plot(points, args.plot)
    if args.profile:
        profile_decode_step(llms, max(args.concurrency), max(args.prompt_lens))


if __name__ == "__main__":
    main()
