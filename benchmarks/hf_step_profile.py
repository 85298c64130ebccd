"""One model forward, native vs transformers backend, on the same flattened batch: per-step ms and their ratio.

Loads the model twice (native, transformers with its load-time speed-ups; `--plain` adds
the transformers backend without them) and times `model.forward` alone (no scheduler, no
sampler, no logits) on decode batches of several row counts and one prefill chunk. The
implementations are timed interleaved, round after round, so load on the machine changes
both alike; each gets its median per-step time and its time ratio to native (below 1:
faster than native). `--shrink` runs a copy of the model's architecture with tiny widths
and random weights: compute all but vanishes and what is left is Python and dispatch
overhead. `--profile` counts torch ops and Python calls of one step instead of timing.

    .venv/bin/python benchmarks/hf_step_profile.py                    # default model
    .venv/bin/python benchmarks/hf_step_profile.py --shrink --plain --rounds 15
    .venv/bin/python benchmarks/hf_step_profile.py --shrink --decode 8 --prefill 0 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

# benchmarks/grammar.py would shadow the grammar package (see backend_parity.py)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import torch  # noqa: E402

from engine.config import default_cache_dir  # noqa: E402
from engine.loader.resolve import resolve_model  # noqa: E402
from engine.loader.weights import load_native_model  # noqa: E402
from engine.models.transformers_backend import load_transformers_model  # noqa: E402
from compute_kernels.attention import build_attention_metadata  # noqa: E402

BLOCK_SIZE = 16


def shrunken_copy(folder: Path, out: Path) -> Path:
    """The folder's architecture (same layer count) at tiny widths, random weights, saved to `out`."""
    import transformers

    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  vocab_size=512)  # fmt: skip
    hf_config = transformers.AutoConfig.for_model(config.pop("model_type"), **config)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(hf_config).save_pretrained(str(out))
    return out


def load(folder: Path, config: dict, plain: bool) -> dict[str, torch.nn.Module]:
    cpu, dtype = torch.device("cpu"), torch.float32
    models = {"native": load_native_model(folder, config, cpu, dtype),
              "transformers": load_transformers_model(folder, cpu, dtype)}  # fmt: skip
    if plain:
        models["trf-plain"] = load_transformers_model(folder, cpu, dtype, fuse=False)
    return models


def make_batch(query_lens: list[int], context: int, vocab_size: int):
    """Inputs of one step: each request has `context` tokens cached and `query_len` new ones."""
    seq_lens = [context + q for q in query_lens]
    blocks_per_req = -(-max(seq_lens) // BLOCK_SIZE)
    block_tables = torch.arange(len(query_lens) * blocks_per_req).view(len(query_lens), blocks_per_req)
    slots, positions = [], []
    for i, (q, s) in enumerate(zip(query_lens, seq_lens)):
        pos = torch.arange(s - q, s)
        positions.append(pos)
        slots.append(block_tables[i][pos // BLOCK_SIZE] * BLOCK_SIZE + pos % BLOCK_SIZE)
    slot_mapping, positions = torch.cat(slots), torch.cat(positions)
    meta = build_attention_metadata(query_lens, seq_lens, block_tables, slot_mapping, BLOCK_SIZE)
    input_ids = torch.randint(0, vocab_size, (len(positions),), generator=torch.Generator().manual_seed(0))
    return input_ids, positions, meta, len(query_lens) * blocks_per_req


def kv_caches(model, num_blocks: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    num_layers, num_kv_heads, head_dim = model.kv_shape
    shape = (num_blocks * BLOCK_SIZE, num_kv_heads, head_dim)
    return [(torch.randn(shape), torch.randn(shape)) for _ in range(num_layers)]


def time_shape(models, query_lens, context, rounds, steps, vocab_size) -> dict[str, float]:
    """Median ms of one forward per implementation, the implementations interleaved round by round."""
    input_ids, positions, meta, num_blocks = make_batch(query_lens, context, vocab_size)
    caches = {name: kv_caches(m, num_blocks) for name, m in models.items()}
    times: dict[str, list[float]] = {name: [] for name in models}
    with torch.inference_mode():
        for name, model in models.items():  # warm-up
            model(input_ids, positions, caches[name], meta)
        for _ in range(rounds):
            for name, model in models.items():
                start = time.perf_counter()
                for _ in range(steps):
                    model(input_ids, positions, caches[name], meta)
                times[name].append((time.perf_counter() - start) / steps * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def profile_shape(models, query_lens, context, vocab_size) -> None:
    """Torch op count and Python call count of one forward per implementation, top functions by calls."""
    input_ids, positions, meta, num_blocks = make_batch(query_lens, context, vocab_size)
    for name, model in models.items():
        caches = kv_caches(model, num_blocks)
        with torch.inference_mode():
            model(input_ids, positions, caches, meta)
            with torch.profiler.profile() as prof:
                model(input_ids, positions, caches, meta)
            pr = cProfile.Profile()
            pr.enable()
            model(input_ids, positions, caches, meta)
            pr.disable()
        events = prof.key_averages()
        num_ops = sum(e.count for e in events if e.key.startswith("aten::"))
        stats = pstats.Stats(pr)
        print(f"\n== {name}: {num_ops} aten ops (incl. nested), {stats.total_calls} Python calls, "
              f"{stats.prim_calls} primitive")  # fmt: skip
        stats.sort_stats("ncalls").print_stats(25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="HF folder or GGUF (default: the embedded SmolLM2-135M-Instruct)")
    ap.add_argument("--shrink", action="store_true", help="the same architecture at tiny widths (overhead only)")
    ap.add_argument("--decode", type=int, nargs="*", default=[1, 8, 32], help="decode batch row counts")
    ap.add_argument("--context", type=int, default=128, help="cached tokens per decoding request")
    ap.add_argument("--prefill", type=int, default=1024, help="prefill chunk length (0: none)")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--steps", type=int, default=5, help="forwards per timed round")
    ap.add_argument("--plain", action="store_true", help="also time the transformers backend without its speed-ups")
    ap.add_argument("--profile", action="store_true", help="count ops and Python calls instead of timing")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    files = resolve_model(args.model, default_cache_dir())
    folder, tmp = files.folder, None
    if args.shrink:
        tmp = tempfile.TemporaryDirectory()
        folder = shrunken_copy(folder, Path(tmp.name))
    config = json.loads((folder / "config.json").read_text())
    models = load(folder, config, args.plain)
    shapes = [(f"decode x{n}", [1] * n, args.context) for n in args.decode]
    if args.prefill:
        shapes.append((f"prefill {args.prefill}", [args.prefill], 0))
    print(f"model {files.name}{' (shrunken)' if args.shrink else ''}, torch threads {torch.get_num_threads()}")
    for label, query_lens, context in shapes:
        if args.profile:
            print(f"\n######## {label}")
            profile_shape(models, query_lens, context, config["vocab_size"])
            continue
        steps = max(1, args.steps // 4) if len(query_lens) == 1 and query_lens[0] > 1 and not args.shrink else args.steps
        ms = time_shape(models, query_lens, context, args.rounds, steps, config["vocab_size"])
        # time ratio: below 1, the transformers backend's forward is the faster (speed ratio = 1 / this)
        others = "  ".join(f"{name} {t:7.2f} ms (time x{t / ms['native']:.3f})" for name, t in ms.items() if name != "native")
        print(f"{label:>14}: native {ms['native']:7.2f} ms  {others}", flush=True)


if __name__ == "__main__":
    main()
