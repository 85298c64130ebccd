"""Benchmark the streaming parser: cost per character from 1 KB to 1 MB outputs, every format.

Feeds realistic outputs (reasoning, content, then a tool call whose arguments are half the
text) through parsing.open_stream one character and one token (4 characters) at a time,
prints microseconds per character and MB/s per format and size, the MB/s of plain content
and of arguments alone, the cost of a format's first use in a fresh process, and compares
with a naive baseline that re-parses the accumulated text on every delta (how legacy tool
parsers work). Targets: arguments >= 1 MB/s, 1 MB / 1 KB cost <= 1.5, first use < 1 ms.

    python benchmarks/parsing_stream.py                 # every format, 1 KB to 1 MB
    python benchmarks/parsing_stream.py --formats qwen3,pythonic --quick
    python benchmarks/parsing_stream.py --plot out.png  # also save a PNG
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import parsing  # noqa: E402

# CPU time of this thread: on a shared machine, waiting for a core is not the parser's cost
_clock = time.thread_time

SIZES = {"1KB": 1_000, "100KB": 100_000, "1MB": 1_000_000}
LINE = 'The model explains: use <b>bold</b>, {"k": [1, 2]} and "quotes" here, é 東京.\n'
TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}}}}]


def _fill(size: int) -> str:
    return (LINE * (size // len(LINE) + 1))[:size]


def _call(fmt: str, text: str) -> str:
    syn = parsing.call_syntax(fmt)
    if syn["args"] == "json":
        body = json.dumps({"path": "a.txt", "text": text}, ensure_ascii=False)
    else:
        body = "".join(syn["param_begin"].replace("{key}", k).replace("{string}", "true") + v
                       + syn["param_end"] for k, v in (("path", "a.txt"), ("text", text)))
    call = syn["begin"].replace("{name}", "write_file").replace("{index}", "0") + body + syn["end"]
    return syn.get("block_begin", "") + call + syn.get("block_end", "")


def _starts_only(fmt: str) -> bool:
    """Calls that open only as the answer's first text ("{", "["): the content comes after."""
    from parsing.compiled import COMPILED
    return parsing.call_syntax(fmt)["trigger"] in COMPILED[fmt].machine.fmt.keep_triggers


def make_output(fmt: str, size: int) -> str:
    """About `size` characters: a quarter reasoning, a quarter content, half arguments."""
    quarter = _fill(size // 4)
    call = _call(fmt, _fill(size // 2).replace("</", "< /"))
    if fmt == "gpt_oss":
        return (f"<|channel|>analysis<|message|>{quarter}<|end|><|start|>assistant<|channel|>final"
                f"<|message|>{quarter}<|end|><|start|>assistant") + call
    tags = parsing.reasoning_tags(fmt)
    head = f"{tags[0]}{quarter}{tags[1]}" if tags else ""
    return head + (call + quarter if _starts_only(fmt) else quarter + call)


def stream_seconds(fmt: str, text: str, chunk: int) -> float:
    chunks = [text[i:i + chunk] for i in range(0, len(text), chunk)]
    s = parsing.open_stream(fmt, TOOLS)
    feed = s.feed
    t0 = _clock()
    for c in chunks:
        feed(c)
    s.close()
    return _clock() - t0


def naive_seconds(fmt: str, text: str, chunk: int) -> float:
    """Legacy style: on every delta, parse all text so far and diff against what was sent."""
    sent: dict[int, int] = {}
    sent_content = 0
    t0 = _clock()
    for end in range(chunk, len(text) + chunk, chunk):
        parsed = parsing.parse(text[:end], fmt, TOOLS)
        content = parsed.content or ""
        _delta = content[sent_content:]
        sent_content = len(content)
        for i, call in enumerate(parsed.tool_calls):
            _delta = call.arguments[sent.get(i, 0):]
            sent[i] = len(call.arguments)
    return _clock() - t0


def us_per_char(fn, fmt: str, text: str, chunk: int, total: int) -> float:
    """Microseconds per input character over about `total` characters of work.

    Small outputs are repeated so that every size does the same amount of work; taking the
    best of many short runs would flatter the small sizes on a busy machine.
    """
    reps = max(1, total // len(text))
    seconds = sum(fn(fmt, text, chunk) for _ in range(reps))
    return seconds / (reps * len(text)) * 1e6


def run_stream_table(formats: list[str], sizes: dict[str, int], total: int) -> dict:
    results: dict = {}
    print(f"{'format':<24}{'delta':>7}" + "".join(f"{name + ' us/ch':>15}" for name in sizes)
          + f"{'MB/s@max':>10}{'max/1KB':>9}")
    for fmt in formats:
        for mode, chunk in (("char", 1), ("token", 4)):
            row = {name: us_per_char(stream_seconds, fmt, make_output(fmt, n), chunk, total)
                   for name, n in sizes.items()}
            results[(fmt, mode)] = row
            first, last = row[next(iter(sizes))], row[list(sizes)[-1]]
            print(f"{fmt:<24}{mode:>7}" + "".join(f"{row[name]:>15.3f}" for name in sizes)
                  + f"{1 / last:>10.2f}{last / first:>9.2f}")
    return results


def run_region_table(formats: list[str], size: int, runs: int = 3) -> None:
    """Throughput of plain content and of one call's string argument, 4-character deltas; the
    best of `runs` (every format reads the same size, so a busy machine only adds noise)."""
    print(f"\nMB/s by region, {size // 1000} KB, 4-character deltas, best of {runs} "
          "(targets: content >= 2, arguments >= 1)")
    print(f"{'format':<24}{'content':>9}{'arguments':>11}")
    for fmt in formats:
        content = _fill(size)
        if _starts_only(fmt):
            content = "Answer: " + content  # plain content, not a call at the start
        args = _call(fmt, _fill(size).replace("</", "< /"))
        if fmt == "gpt_oss":
            content = "<|channel|>final<|message|>" + content
        tags = parsing.reasoning_tags(fmt)
        if tags and _opened_by_prompt(fmt):  # the prompt opened reasoning: close it first
            content, args = tags[1] + content, tags[1] + args
        row = [len(text) / min(stream_seconds(fmt, text, 4) for _ in range(runs)) / 1e6 for text in (content, args)]
        print(f"{fmt:<24}{row[0]:>9.2f}{row[1]:>11.2f}")


def _opened_by_prompt(fmt: str) -> bool:
    """The format starts in reasoning whatever the request says (Step-3, ERNIE thinking)."""
    from parsing.compiled import COMPILED
    r = COMPILED[fmt].machine.fmt.reasoning
    return bool(r and r.starts_open)


_FIRST_USE = """
import sys, time
t0 = time.perf_counter()
import parsing
t1 = time.perf_counter()
sys.path.insert(0, {bench!r})
from parsing_stream import TOOLS, make_output
text = make_output({fmt!r}, 1000)
c0 = time.thread_time()
s = parsing.open_stream({fmt!r}, TOOLS)
for i in range(0, len(text), 4):
    s.feed(text[i:i + 4])
s.close()
first = time.thread_time() - c0
c0 = time.thread_time()
s = parsing.open_stream({fmt!r}, TOOLS)
for i in range(0, len(text), 4):
    s.feed(text[i:i + 4])
s.close()
print(t1 - t0, first, time.thread_time() - c0)
"""


def run_first_use_table(formats: list[str], runs: int = 3) -> None:
    """A format's first 1 KB reply in a fresh process (after `import parsing`) against its
    second: the difference is what a first use costs (compiling is done at import)."""
    print(f"\nfirst use, fresh processes (median of {runs}): import parsing (wall ms), first and second "
          "1 KB reply and their difference (CPU ms, 4-character deltas; target: first use < 1 ms)")
    print(f"{'format':<24}{'import':>8}{'first':>8}{'second':>8}{'first use':>11}")
    bench = str(Path(__file__).resolve().parent)
    root = str(Path(__file__).resolve().parent.parent)
    for fmt in formats:
        code = _FIRST_USE.format(bench=bench, fmt=fmt)
        rows = []
        for _ in range(runs):
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
            rows.append([float(x) * 1e3 for x in out.stdout.split()])
        imp, first, second = (sorted(col)[len(col) // 2] for col in zip(*rows))
        print(f"{fmt:<24}{imp:>8.1f}{first:>8.3f}{second:>8.3f}{first - second:>11.3f}")


def run_naive_table(fmt: str, sizes: list[int]) -> dict:
    print(f"\nnaive re-parse baseline vs stream ({fmt}, 4-character deltas)")
    print(f"{'size':>8}{'naive us/ch':>14}{'stream us/ch':>14}{'speedup':>10}")
    results = {}
    for n in sizes:
        text = make_output(fmt, n)
        naive = us_per_char(naive_seconds, fmt, text, 4, 8_000)
        stream = us_per_char(stream_seconds, fmt, text, 4, 200_000)
        results[n] = (naive, stream)
        print(f"{n:>8}{naive:>14.2f}{stream:>14.3f}{naive / stream:>10.1f}")
    return results


def plot(path: str, stream: dict, naive: dict, sizes: dict[str, int]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    xs = list(sizes.values())
    for (fmt, mode), row in stream.items():
        if mode == "token":
            ax.plot(xs, [row[k] for k in sizes], marker="o", label=f"{fmt} (stream)")
    nx = sorted(naive)
    ax.plot(nx, [naive[n][0] for n in nx], marker="x", linestyle="--", color="black",
            label="naive re-parse (qwen3)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("output size (characters)")
    ax.set_ylabel("microseconds per character (4-char deltas)")
    ax.set_title("Streaming parser cost per character")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", default="all", help="comma list, or 'all' (the default)")
    ap.add_argument("--quick", action="store_true", help="1 KB and 100 KB only")
    ap.add_argument("--plot", metavar="PNG", help="save a plot")
    ap.add_argument("--tables", default="stream,regions,first_use,naive",
                    help="comma list of the tables to run (default: all)")
    args = ap.parse_args()
    tables = set(args.tables.split(","))
    formats = parsing.formats() if args.formats == "all" else args.formats.split(",")
    sizes = dict(SIZES)
    if args.quick:
        sizes.pop("1MB")
    print(f"python {sys.version.split()[0]}; us/ch = CPU microseconds per character "
          "(each cell averages the same amount of work)\n")
    stream = run_stream_table(formats, sizes, 100_000 if args.quick else 300_000) if "stream" in tables else {}
    if "regions" in tables:
        run_region_table(formats, 100_000 if args.quick else 300_000)
    if "first_use" in tables:
        run_first_use_table(formats)
    naive = {}
    if "naive" in tables:
        naive = run_naive_table("qwen3", [1_000, 4_000, 16_000] if args.quick else [1_000, 4_000, 16_000, 32_000])
    if args.plot and stream and naive:
        plot(args.plot, stream, naive, sizes)


if __name__ == "__main__":
    main()
