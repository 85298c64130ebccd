"""Prefix caching, side by side: time to first token at one stream with a ~1,000-token system
prompt that every request shares, against one that is unique to each request.

    python benchmarks/prefix_ttft.py --spawn --url vllm=http://127.0.0.1:8101 --url llama.cpp=http://127.0.0.1:8102

Each target gets one warm-up request that puts the shared system prompt in its cache, then
`--requests` requests with the shared prompt and as many with a unique one (a different
text of the same length), one at a time, 8 output tokens each; the two kinds alternate so
that load lands on both alike. The unique column is the server's prefill speed (prompt
tokens / TTFT); the shared column is what prefix caching saves. Medians over `--repeats`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serve import (  # noqa: E402
    WORDS, RequestResult, add_target_args, machine_line, one_request, server_model, start_targets, stop_server,
)


def system_prompt(seed: int, num_words: int) -> str:
    """A deterministic system prompt of ~4/3 tokens per word."""
    rng = random.Random(seed)
    return "You are the assistant of a research team. Background notes: " + " ".join(
        rng.choice(WORDS) for _ in range(num_words)
    )


def messages(system: str, index: int) -> list[dict]:
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"Question {index}: which three words in the notes matter most, and why?"}]  # fmt: skip


async def measure(url: str, model: str, args, headers: dict[str, str]) -> tuple[list[RequestResult], list[RequestResult]]:
    """(shared-prefix results, unique-prefix results) for one target."""
    shared_system = system_prompt(-1, args.prefix_words)
    shared, unique = [], []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
        await one_request(session, url, model, messages(shared_system, -1), args.output_len, headers)  # fills the cache
        for i in range(args.requests):
            shared.append(await one_request(session, url, model, messages(shared_system, i), args.output_len, headers))
            own = system_prompt(args.seed * 100_000 + i, args.prefix_words)
            unique.append(await one_request(session, url, model, messages(own, i), args.output_len, headers))
    return shared, unique


def ttft_ms(results: list[RequestResult]) -> float:
    ok = [r.ttft_s for r in results if r.ok]
    return statistics.median(ok) * 1e3 if ok else float("nan")


def prefill_tok_s(results: list[RequestResult]) -> float:
    ok = [r.num_prompt_tokens / r.ttft_s for r in results if r.ok and r.ttft_s > 0 and r.num_prompt_tokens]
    return statistics.median(ok) if ok else float("nan")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(p)
    p.add_argument("--prefix-words", type=int, default=950, help="~1,000 tokens of system prompt with the default")
    p.add_argument("--requests", type=int, default=4, help="requests of each kind per repeat")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--output-len", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    headers, targets, proc = start_targets(args, 8)
    rows: dict[str, tuple[list, list]] = {name: ([], []) for name, _ in targets}
    try:
        models = {name: server_model(url, headers) for name, url in targets}
        print(machine_line())
        for rep in range(args.repeats):
            order = targets if rep % 2 == 0 else targets[::-1]
            for name, url in order:
                args.seed += 1  # fresh unique prompts every run
                shared, unique = asyncio.run(measure(url, models[name], args, headers))
                rows[name][0].extend(shared)
                rows[name][1].extend(unique)
                print(f"  {name:>10} run {rep + 1}: shared TTFT p50 {ttft_ms(shared):7.0f} ms, unique "
                      f"{ttft_ms(unique):7.0f} ms ({prefill_tok_s(unique):.0f} prompt tok/s)", flush=True)
    finally:
        if proc is not None:
            stop_server(proc)
    ours = targets[0][0]
    print()
    print(machine_line())
    print("| target | prompt tokens | TTFT p50 shared prefix ms | TTFT p50 unique ms | unique prefill tok/s | errors |"
          + "".join(f" {ours}/{n} TTFT shared / unique |" for n, _ in targets[1:]))
    print("|---|---:|---:|---:|---:|---:|" + "---:|" * (len(targets) - 1))
    for name, _ in targets:
        shared, unique = rows[name]
        tokens = statistics.median([r.num_prompt_tokens for r in unique if r.ok] or [0])
        errors = sum(not r.ok for r in shared + unique)
        ratios = "".join(
            f" {ttft_ms(rows[ours][0]) / ttft_ms(rows[n][0]):.2f} / {ttft_ms(rows[ours][1]) / ttft_ms(rows[n][1]):.2f} |"
            if name == ours else " |" for n, _ in targets[1:])  # fmt: skip
        print(f"| {name} | {tokens:.0f} | {ttft_ms(shared):,.0f} | {ttft_ms(unique):,.0f} | "
              f"{prefill_tok_s(unique):.0f} | {errors} |{ratios}")
    for name, _ in targets:
        for r in (x for x in rows[name][0] + rows[name][1] if not x.ok):
            print(f"  {name}: {r.error}")
            break


if __name__ == "__main__":
    main()
