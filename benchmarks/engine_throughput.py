"""Engine throughput vs transformers `generate`, same model, prompts and dtype, in one run.

For each dtype and batch size: N requests of ~PROMPT_LEN prompt tokens and OUTPUT_LEN
output tokens (ignore_eos), through this engine (offline LLM) and through transformers'
batched `generate` with left padding. Prints output tokens/s of each and the ratio;
`--plot FILE.png` saves a plot; `--profile` prints where one decode step's time goes.

    .venv/bin/python benchmarks/engine_throughput.py                    # full sweep
    .venv/bin/python benchmarks/engine_throughput.py --sizes 1 8 --dtypes float32 --repeats 1
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from engine import LLM, SamplingParams


def make_prompts(tokenizer, num: int, prompt_len: int) -> list[list[int]]:
    """Distinct chat-like prompts cut to exactly prompt_len tokens (no shared prefix beyond the first words)."""
    words = "the engine schedules tokens per step while requests stream their outputs to clients".split()
    prompts = []
    for i in range(num):
        text = " ".join(words[(i + j) % len(words)] + (str(i) if j % 7 == 0 else "") for j in range(prompt_len * 2))
        prompts.append(tokenizer.encode(text, add_special_tokens=False)[:prompt_len])
    return prompts


def run_engine(llm: LLM, prompts, output_len: int) -> float:
    params = SamplingParams(max_tokens=output_len, temperature=0.0, ignore_eos=True)
    start = time.perf_counter()
    outs = llm.generate(prompts, params)
    elapsed = time.perf_counter() - start
    assert all(len(o.token_ids) == output_len for o in outs)
    return sum(len(o.token_ids) for o in outs) / elapsed


def run_transformers(model, prompts, output_len: int, pad_id: int) -> float:
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=mask, max_new_tokens=output_len, min_new_tokens=output_len,
                             do_sample=False, pad_token_id=pad_id)  # fmt: skip
    elapsed = time.perf_counter() - start
    return (out.shape[1] - width) * len(prompts) / elapsed


def profile_step(llm: LLM, prompts, output_len: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    from schemas.engine import EngineRequest

    core = llm.core
    for i, p in enumerate(prompts):
        params = SamplingParams(max_tokens=output_len, temperature=0.0, ignore_eos=True)
        core.add_request(EngineRequest(request_id=f"p{i}", prompt_token_ids=p, params=params))
    for _ in range(3):
        core.step()  # prefill and warm-up
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        core.step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
    core.abort([f"p{i}" for i in range(len(prompts))])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="model path (default: the embedded SmolLM2-135M-Instruct)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 8, 32, 64])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3, help="runs per point; the median is reported")
    ap.add_argument("--plot", default=None, help="save a PNG plot here")
    ap.add_argument("--profile", action="store_true", help="profile one decode step at the largest size")
    ap.add_argument("--threads", type=int, default=None, help="torch threads for both (default: torch's own)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from transformers import AutoModelForCausalLM

    rows = []
    for dtype in args.dtypes:
        llm = LLM(args.model, dtype=dtype, max_num_seqs=max(args.sizes), max_model_len=args.prompt_len + args.output_len + 16,
                  max_num_batched_tokens=4096, num_threads=args.threads)  # fmt: skip
        hf = AutoModelForCausalLM.from_pretrained(llm.info.path, dtype=getattr(torch, dtype)).eval()
        pad_id = llm.tokenizer.pad_token_id if llm.tokenizer.pad_token_id is not None else 0
        run_engine(llm, make_prompts(llm.tokenizer, 2, 16), 4)  # warm-up
        for size in args.sizes:
            prompts = make_prompts(llm.tokenizer, size, args.prompt_len)
            ours, theirs = [], []
            for _ in range(args.repeats):
                ours.append(run_engine(llm, prompts, args.output_len))
                theirs.append(run_transformers(hf, prompts, args.output_len, pad_id))
            row = (dtype, size, statistics.median(ours), statistics.median(theirs))
            rows.append(row)
            print(f"{dtype:9s} n={size:3d}  engine {row[2]:8.1f} tok/s  transformers {row[3]:8.1f} tok/s  ratio {row[2] / row[3]:5.2f}x", flush=True)
        if args.profile:
            profile_step(llm, make_prompts(llm.tokenizer, max(args.sizes), args.prompt_len), args.output_len)
        del llm, hf
    print_table(rows, args)
    if args.plot:
        plot(rows, args.plot)


def print_table(rows, args) -> None:
    threads = args.threads or torch.get_num_threads()
    print(f"\nOutput tokens/s, {args.prompt_len} prompt + {args.output_len} output tokens per request, "
          f"{threads} torch thread(s), median of {args.repeats}")
    print("| dtype | requests | engine tok/s | transformers tok/s | ratio |")
    print("|---|---:|---:|---:|---:|")
    for dtype, size, ours, theirs in rows:
        print(f"| {dtype} | {size} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x |")


def plot(rows, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for dtype in dict.fromkeys(r[0] for r in rows):
        sizes = [r[1] for r in rows if r[0] == dtype]
        ax.plot(sizes, [r[2] for r in rows if r[0] == dtype], marker="o", label=f"engine {dtype}")
        ax.plot(sizes, [r[3] for r in rows if r[0] == dtype], marker="x", linestyle="--", label=f"transformers {dtype}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrent requests")
    ax.set_ylabel("output tokens/s")
    ax.set_title("Engine vs transformers generate (CPU)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot saved to {path}")


if __name__ == "__main__":
    main()
