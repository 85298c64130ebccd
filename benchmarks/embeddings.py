"""Benchmark embeddings/s: our encoder vs sentence-transformers `encode`, same model, same run.

Batches of 1, 32 and 256 short texts (4-16 words) through all-MiniLM-L6-v2 (or --model):
our offline `Embedder` (this process), our encoder process through `AsyncEmbedder` (what the
server runs, pipe and msgpack included), and sentence-transformers' `encode` with its default
batch_size of 32. The systems take turns call by call, so machine load lands on all alike; each
figure is the median of the repeats. Every system gets the same number of torch threads.

    python benchmarks/embeddings.py                      # batches 1 32 256, 5 repeats
    python benchmarks/embeddings.py --batches 32 --repeats 9 --threads 2
    python benchmarks/embeddings.py --plot benchmarks/out/embeddings.png
"""
from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = ("the a model server token stream request reply batch vector search query text short long fast slow "
         "engine cache block layer pooling mean norm cosine sentence word embedding gateway agent tool call "
         "weather city paris london rain sun today tomorrow price market report user answer question").split()


def make_texts(num: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 16))).capitalize() + "." for _ in range(num)]


def _rate(num: int, seconds: float) -> float:
    return num / seconds if seconds > 0 else float("inf")


async def run(args) -> list[tuple]:
    import torch
    from sentence_transformers import SentenceTransformer

    from engine.embedding import AsyncEmbedder, Embedder, EmbeddingConfig

    torch.set_num_threads(args.threads)
    ours = Embedder(args.model, num_threads=args.threads)
    served = await AsyncEmbedder.start(EmbeddingConfig(model=args.model, num_threads=args.threads))
    st = SentenceTransformer(ours.info.path, device="cpu")
    print(f"model {ours.info.name} ({ours.info.dimensions} dims), {args.threads} torch thread(s), "
          f"sentence-transformers batch_size {args.st_batch_size}", flush=True)
    print_header()

    async def offline(texts: list[str]) -> None:
        ours.embed(texts)

    async def process(texts: list[str]) -> None:
        await served.embed(f"b{time.perf_counter_ns()}", served.tokenize(texts, served.info.max_seq_len))

    async def sentence_transformers(texts: list[str]) -> None:
        st.encode(texts, batch_size=args.st_batch_size, convert_to_numpy=True)

    systems = {"offline": offline, "process": process, "st": sentence_transformers}
    rows = []
    try:
        for batch in args.batches:
            rows.append(await _point(systems, batch, args))
            print_row(rows[-1])
    finally:
        await served.shutdown()
    return rows


async def _point(systems, batch: int, args) -> tuple:
    """Embeddings/s of each system at one batch size: median over the repeats, the systems taking turns."""
    calls = max(1, args.texts_per_point // batch)
    times: dict[str, list[float]] = {name: [] for name in systems}
    for repeat in range(args.repeats + 1):  # repeat 0 warms up
        texts = make_texts(batch * calls, seed=repeat)
        for name, embed in systems.items():
            start = time.perf_counter()
            for i in range(calls):
                await embed(texts[i * batch:(i + 1) * batch])
            if repeat:
                times[name].append(time.perf_counter() - start)
    rates = {name: _rate(batch * calls, statistics.median(t)) for name, t in times.items()}
    return batch, rates["offline"], rates["process"], rates["st"]


def print_header() -> None:
    print("| batch | ours offline emb/s | ours encoder process emb/s | sentence-transformers emb/s "
          "| offline / st | process / st |")
    print("|---:|---:|---:|---:|---:|---:|")


def print_row(row: tuple) -> None:
    batch, offline, process, st = row
    print(f"| {batch} | {offline:,.1f} | {process:,.1f} | {st:,.1f} | {offline / st:.2f}x | {process / st:.2f}x |",
          flush=True)


def plot(rows, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [str(r[0]) for r in rows]
    x = range(len(rows))
    for offset, (index, name) in zip((-0.27, 0, 0.27), ((1, "ours offline"), (2, "ours encoder process"),
                                                        (3, "sentence-transformers"))):  # fmt: skip
        ax.bar([i + offset for i in x], [r[index] for r in rows], width=0.25, label=name)
    ax.set_xticks(list(x), labels)
    ax.set_xlabel("texts per call")
    ax.set_ylabel("embeddings / s")
    ax.legend()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    print(f"plot saved to {path}")


def main() -> None:
    import os

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="a sentence-transformers / BERT folder (default: all-MiniLM-L6-v2)")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 32, 256])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--texts-per-point", type=int, default=256, help="texts embedded per system per repeat")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--st-batch-size", type=int, default=32, help="sentence-transformers' encode batch_size (its default)")
    ap.add_argument("--plot", default=None, help="save a PNG plot here")
    args = ap.parse_args()
    rows = asyncio.run(run(args))
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
