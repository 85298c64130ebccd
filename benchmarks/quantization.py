"""Weight formats on CPU: speed and quality of each `quantization` mode, the torch path as baseline.

    .venv/bin/python benchmarks/quantization.py                  # every mode on the default model
    .venv/bin/python benchmarks/quantization.py --modes auto none --repeats 3 --plot out.png

For each mode (auto: exact int4/int8 grids; none: float32; int8 and int4 forced; `+float32` /
`+int8` after a mode: what the int linears multiply with, default fixed24 where the CPU has
AVX512-VNNI) and the torch
reference path (`--no-cpu-kernels`, the engine's default dtype: bfloat16 where the CPU has BF16
units, as vLLM's CPU backend computes): decode tokens/s at one stream, prefill tokens/s
of one 512-token prompt, the bytes of weights, and quality against the float32 model on a fixed
text shipped in tests/data/quality_text.txt: the mean log-prob of its tokens, and top-1
agreement (teacher-forced: at every position, does the mode predict the same next token as
float32?). Also the greedy run length: tokens generated from three prompts before the first
difference from float32.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import LLM, SamplingParams  # noqa: E402
from engine.hardware import describe  # noqa: E402

TEXT = (ROOT / "tests" / "data" / "quality_text.txt").read_text()
PROMPTS = ["The history of the printing press", "def fibonacci(n):", "Dear committee, I am writing to"]


def speed(llm: LLM, repeats: int) -> tuple[float, float]:
    """(decode tok/s at one stream, prefill tok/s of a 512-token prompt), medians."""
    decode, prefill = [], []
    ids = llm.tokenizer.encode(TEXT * 3)[:512]
    for rep in range(repeats):
        start = time.perf_counter()
        llm.generate([ids[:8] + [rep]], SamplingParams(max_tokens=128, temperature=0.0, ignore_eos=True))
        decode.append(128 / (time.perf_counter() - start))
        start = time.perf_counter()
        llm.generate([[rep + 1] + ids[1:]], SamplingParams(max_tokens=1, temperature=0.0))  # no prefix-cache hit
        prefill.append(len(ids) / (time.perf_counter() - start))
    return statistics.median(decode), statistics.median(prefill)


def quality(llm: LLM) -> tuple[float, list[int], list[list[int]]]:
    """(mean log-prob of the text, top-1 next-token ids per position, greedy runs of PROMPTS)."""
    ids = llm.tokenizer.encode(TEXT)
    out = llm.generate([ids], SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1))[0]
    entries = out.prompt_logprobs
    mean = statistics.fmean(e.logprob for e in entries)
    top1 = [e.top_token_ids[0] for e in entries]
    runs = [o.token_ids for o in llm.generate(PROMPTS, SamplingParams(max_tokens=200, temperature=0.0, ignore_eos=True))]
    return mean, top1, runs


def first_difference(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None)
    ap.add_argument("--modes", nargs="+", default=["torch", "none", "auto", "auto+float32", "auto+int8", "int8", "int4"],
                    help="quantization modes, each optionally +ACTIVATIONS (--linear-activations: float32, fixed16, "
                         "int8; without it the default, fixed24 where the CPU has VNNI); 'torch' is the reference "
                         "path without the C kernels")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--num-threads", type=int, default=None)
    ap.add_argument("--plot", default=None)
    args = ap.parse_args()
    rows, reference = [], None
    for mode in ["none"] + [m for m in args.modes if m != "none"]:
        quantization, _, activations = mode.partition("+")
        options = {"cpu_kernels": False} if mode == "torch" else {"quantization": quantization}
        if activations:
            options["linear_activations"] = activations
        llm = LLM(args.model, max_model_len=2048, num_threads=args.num_threads, **options)
        mean, top1, runs = quality(llm)
        reference = reference or (mean, top1, runs)
        agree = sum(a == b for a, b in zip(top1, reference[1])) / len(top1)
        lengths = [first_difference(r, ref) for r, ref in zip(runs, reference[2])]
        dec, pre = speed(llm, args.repeats)
        weights = getattr(llm.core.runner.model, "report", None)
        mib = weights.nbytes / 2**20 if weights is not None else float("nan")
        rows.append((mode, dec, pre, mib, mean, agree, lengths))
        print(f"{mode:>6}: decode {dec:6.1f} tok/s, prefill {pre:6.1f} tok/s, weights {mib:6.1f} MiB, "
              f"mean log-prob {mean:.4f}, top-1 agreement {agree:.4f}, greedy equal for {lengths} tokens", flush=True)
        del llm
    print(f"\n{describe(torch.device('cpu'))}, {torch.get_num_threads()} threads, medians of {args.repeats}; "
          f"text: {len(reference[1]) + 1} tokens")
    print("| mode | decode tok/s (1 stream) | prefill tok/s (512) | linear weights MiB | mean log-prob | "
          "top-1 agreement with float32 | greedy tokens equal (3 prompts, of 200) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for mode, dec, pre, mib, mean, agree, lengths in rows:
        print(f"| {mode} | {dec:.1f} | {pre:.1f} | {mib:.0f} | {mean:.4f} | {agree:.2%} | {', '.join(map(str, lengths))} |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        names = [r[0] for r in rows]
        axes[0].bar(names, [r[1] for r in rows])
        axes[0].set(title="decode tokens/s, 1 stream")
        axes[1].bar(names, [r[5] * 100 for r in rows])
        axes[1].set(title="top-1 agreement with float32 (%)", ylim=(90, 100.5))
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
