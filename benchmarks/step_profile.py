"""Where one engine step's time goes, by phase, at several batch sizes (issue 14 lever 5).

    .venv/bin/python benchmarks/step_profile.py                      # 1, 16, 64 decoding requests
    .venv/bin/python benchmarks/step_profile.py --sizes 1 64 --context 300 --steps 20

Runs the offline engine on the default model (or --model), fills a batch of requests to
`--context` tokens, then times `--steps` decode steps, splitting each into: scheduling
(`Scheduler.schedule`), the step's inputs (slots -> flat lists, block tables, metadata), the
model's forward (on the CPU kernels: the whole decoder stack, attention included, in one C
call), the logits, sampling, and the rest (the scheduler's bookkeeping and the outputs).
Also a prefill of `--prefill` tokens, forward vs the rest. The baseline it compares against
is the step itself: every phase is a share of the measured step. Medians over the steps.
HTTP, IPC and detokenization happen outside the step (in the gateway process, overlapped
with the next step); `benchmarks/serve.py`'s ITL minus the step time bounds them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import engine.runner.model_runner as model_runner  # noqa: E402
from engine import LLM, SamplingParams  # noqa: E402
from engine.hardware import describe  # noqa: E402
from schemas.engine import EngineRequest  # noqa: E402

PHASES = ("schedule", "inputs", "forward", "logits", "sample", "rest")


class PhaseTimer:
    """Wraps methods so that each call adds its wall time to a phase."""

    def __init__(self) -> None:
        self.times: dict[str, float] = defaultdict(float)

    def wrap(self, owner, name: str, phase: str) -> None:
        inner = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.times[phase] += time.perf_counter() - start

        setattr(owner, name, timed)


def instrument(llm: LLM) -> PhaseTimer:
    timer = PhaseTimer()
    core = llm.core
    timer.wrap(core.scheduler, "schedule", "schedule")
    timer.wrap(core.runner, "_forward", "inputs+forward")
    timer.wrap(core.runner.model, "forward", "forward")
    timer.wrap(core.runner.model, "compute_logits", "logits")
    if core.runner.greedy_head is not None:  # greedy rows' cheap lm_head and exact candidates
        timer.wrap(core.runner.greedy_head, "pick", "logits")
    timer.wrap(model_runner, "sample", "sample")
    return timer


def add_requests(llm: LLM, num: int, context: int, tag: str, steps: int, salt: int = 0) -> list[str]:
    """`num` requests of `context` prompt tokens; prompts of another `salt` share no prefix with these."""
    ids = [f"{tag}{i}" for i in range(num)]
    for i, request_id in enumerate(ids):
        prompt = [(7 * i + 13 * j + salt) % 10_000 + 100 for j in range(context)]  # distinct, no shared prefix
        params = SamplingParams(max_tokens=steps + 8, temperature=0.0, ignore_eos=True)
        llm.core.add_request(EngineRequest(request_id=request_id, prompt_token_ids=prompt, params=params))
    return ids


def timed_steps(llm: LLM, timer: PhaseTimer, steps: int) -> dict[str, float]:
    """Median ms per phase over `steps` steps; inputs = gathering, block tables and attention metadata."""
    per_phase: dict[str, list[float]] = defaultdict(list)
    for _ in range(steps):
        timer.times.clear()
        start = time.perf_counter()
        llm.core.step()
        total = time.perf_counter() - start
        timer.times["inputs"] = timer.times.pop("inputs+forward", 0.0) - timer.times.get("forward", 0.0)
        known = sum(timer.times.get(p, 0.0) for p in PHASES[:-1])
        for phase in PHASES[:-1]:
            per_phase[phase].append(timer.times.get(phase, 0.0) * 1e3)
        per_phase["rest"].append((total - known) * 1e3)
        per_phase["step"].append(total * 1e3)
    return {phase: statistics.median(values) for phase, values in per_phase.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 64])
    ap.add_argument("--context", type=int, default=300, help="tokens each request holds when timing starts")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--prefill", type=int, default=1000, help="tokens of the timed prefill step")
    ap.add_argument("--num-threads", type=int, default=None)
    ap.add_argument("--no-cpu-kernels", action="store_true")
    ap.add_argument("--no-greedy-head", action="store_true",
                    help="greedy rows' logits in full (the baseline of engine/runner/greedy_head.py)")
    ap.add_argument("--linear-activations", default="auto", choices=["auto", "float32", "fixed24", "fixed16", "int8"],
                    help="what the int linears multiply with (auto: fixed24 on AVX512-VNNI)")
    args = ap.parse_args()
    llm = LLM(args.model, max_num_seqs=max(args.sizes), max_model_len=max(args.context, args.prefill) + 2 * args.steps + 64,
              max_num_batched_tokens=max(4096, args.prefill), num_threads=args.num_threads,
              cpu_kernels=not args.no_cpu_kernels, linear_activations=args.linear_activations,
              max_prefill_tokens_while_decoding=0)  # fmt: skip  (the batch fills at once: no prefill cap)
    print(f"{describe(llm.core.runner.device)}")
    print(f"engine: {llm.info.summary}")
    if args.no_greedy_head:
        llm.core.runner.greedy_head = None
    timer = instrument(llm)
    rows = []
    for size in args.sizes:
        ids = add_requests(llm, size, args.context, f"b{size}-", args.steps)
        while any(r.num_computed_tokens < args.context for r in llm.core.scheduler.requests.values()):
            llm.core.step()  # prefill (chunked) up to the context
        llm.core.step()
        rows.append((f"decode x{size}", timed_steps(llm, timer, args.steps), size))
        llm.core.abort(ids)
        llm.core.step()
    # a prompt no earlier request began with: the first decode batch's would be served from the prefix cache
    ids = add_requests(llm, 1, args.prefill, "prefill-", 1, salt=5_003)
    rows.append((f"prefill {args.prefill}", timed_steps(llm, timer, 1), 1))
    llm.core.abort(ids)
    print(f"\nms per step (median of {args.steps} decode steps; one prefill step), context {args.context} tokens")
    print("| step | total ms | " + " | ".join(PHASES) + " | tokens/s |")
    print("|---|---:|" + "---:|" * len(PHASES) + "---:|")
    for name, t, size in rows:
        tok_s = (args.prefill if name.startswith("prefill") else size) / (t["step"] / 1e3)
        shares = " | ".join(f"{t[p]:.2f} ({100 * t[p] / t['step']:.0f}%)" for p in PHASES)
        print(f"| {name} | {t['step']:.2f} | {shares} | {tok_s:.0f} |")


if __name__ == "__main__":
    main()
