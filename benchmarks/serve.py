"""Serving benchmark: the same chat workload against several OpenAI-compatible servers, side by side.

    python benchmarks/serve.py --spawn                                   # our gateway alone
    python benchmarks/serve.py --spawn --url vllm=http://127.0.0.1:8001 --url llama.cpp=http://127.0.0.1:8002
    python benchmarks/serve.py --url ours=http://127.0.0.1:8000 --concurrency 1 4 --repeats 2 --plot out.png

Workload (issue 14): streaming /v1/chat/completions, every request its own ~200-token chat
prompt (a unique system line first, so no server gets prefix-cache hits it would not get in
production), 128 output tokens (`ignore_eos` + `min_tokens`), temperature 0, a closed loop
at each concurrency level. Targets run one after another within each level (never at the
same time: they share the cores), and each level is repeated `--repeats` times with the
target order alternating; the table shows medians and the ratio of the first target (ours)
to each other one. Start competitors with their own commands (see the README).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = """time year people way day man thing woman life child world school state family student group country
problem hand part place case week company system program question work government number night point home water
room mother area money story fact month lot right study book eye job word business issue side kind head house
service friend father power hour game line end member law car city community name president team minute idea kid
body information back parent face others level office door health person art war history party result change
morning reason research girl guy moment air teacher force education river mountain engine token stream server
weather report summary schedule garden kitchen window letter market price travel train station museum picture
music doctor patient energy planet ocean forest animal science theory language culture dinner breakfast coffee""".split()
VERBS = "explain describe compare summarize list analyze plan outline review translate rewrite evaluate".split()


def chat_prompt(index: int, seed: int, num_words: int = 150) -> list[dict]:
    """A deterministic chat request of ~200 tokens whose first line is unique to (seed, index)."""
    rng = random.Random(seed * 1_000_003 + index)
    body = " ".join(rng.choice(WORDS) for _ in range(num_words))
    system = f"Session {seed}-{index} ({rng.randrange(10**9)}): you are a careful assistant who answers in detail."
    user = f"Please {rng.choice(VERBS)} the following notes, point by point: {body}."
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@dataclass
class RequestResult:
    ok: bool
    ttft_s: float = 0.0
    itls_s: list[float] = field(default_factory=list)
    num_output_tokens: int = 0
    num_prompt_tokens: int = 0
    error: str = ""
    stale_connection: bool = False  # failed before any response: worth a retry on a new connection


@dataclass
class LevelResult:
    target: str
    concurrency: int
    results: list[RequestResult]
    elapsed_s: float

    @property
    def ok(self) -> list[RequestResult]:
        return [r for r in self.results if r.ok]

    @property
    def num_errors(self) -> int:
        return len(self.results) - len(self.ok)

    @property
    def output_tok_s(self) -> float:
        return sum(r.num_output_tokens for r in self.ok) / self.elapsed_s if self.elapsed_s else 0.0

    def ttft(self, q: float) -> float:
        return percentile([r.ttft_s for r in self.ok], q)

    def itl(self, q: float) -> float:
        return percentile([x for r in self.ok for x in r.itls_s], q)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


async def one_request(session: aiohttp.ClientSession, url: str, model: str, messages: list[dict], output_len: int,
                      headers: dict[str, str]) -> RequestResult:  # fmt: skip
    payload = {"model": model, "messages": messages, "max_tokens": output_len, "temperature": 0.0,
               "ignore_eos": True, "min_tokens": output_len, "stream": True,
               "stream_options": {"include_usage": True}}  # fmt: skip
    start = time.perf_counter()
    for attempt in range(CONNECT_RETRIES + 1):
        result = await _stream_once(session, url, payload, headers, start)
        if not result.stale_connection or attempt == CONNECT_RETRIES:
            return result
    return result


# A keep-alive connection the server closed between two requests fails before any response (llama.cpp's
# server does this); the official clients retry such a request on a new connection, and so does this one.
CONNECT_RETRIES = 2


async def _stream_once(session: aiohttp.ClientSession, url: str, payload: dict, headers: dict[str, str],
                       start: float) -> RequestResult:  # fmt: skip
    last, result, num_chunks, resp = None, RequestResult(ok=False), 0, None
    try:
        async with session.post(url + "/v1/chat/completions", json=payload, headers=headers) as resp:
            if resp.status != 200:
                return RequestResult(ok=False, error=f"HTTP {resp.status}: {(await resp.text())[:200]}")
            buffer = b""
            async for data in resp.content.iter_any():
                buffer += data
                while b"\n\n" in buffer:
                    raw, buffer = buffer.split(b"\n\n", 1)
                    raw = raw.strip()
                    if not raw.startswith(b"data:") or raw == b"data: [DONE]":
                        continue
                    event = json.loads(raw[5:])
                    if "error" in event:
                        return RequestResult(ok=False, error=str(event["error"])[:200])
                    if event.get("usage"):
                        result.num_output_tokens = event["usage"].get("completion_tokens") or 0
                        result.num_prompt_tokens = event["usage"].get("prompt_tokens") or 0
                    delta = (event.get("choices") or [{}])[0].get("delta") or {}
                    if delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"):
                        now = time.perf_counter()
                        if last is None:
                            result.ttft_s = now - start
                        else:
                            result.itls_s.append(now - last)
                        last, num_chunks = now, num_chunks + 1
    except (aiohttp.ClientError, asyncio.TimeoutError, json.JSONDecodeError) as exc:
        stale = resp is None and isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError))
        return RequestResult(ok=False, error=repr(exc), stale_connection=stale)
    result.ok = last is not None
    result.num_output_tokens = result.num_output_tokens or num_chunks
    return result


async def run_level(name: str, url: str, model: str, prompts: list[list[dict]], concurrency: int, output_len: int,
                    headers: dict[str, str]) -> LevelResult:  # fmt: skip
    queue: asyncio.Queue = asyncio.Queue()
    for prompt in prompts:
        queue.put_nowait(prompt)
    results: list[RequestResult] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3600), connector=connector) as session:
        async def worker() -> None:
            while not queue.empty():
                results.append(await one_request(session, url, model, queue.get_nowait(), output_len, headers))

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    return LevelResult(name, concurrency, results, elapsed)


def server_model(url: str, headers: dict[str, str]) -> str:
    request = urllib.request.Request(url + "/v1/models", headers=headers)
    with urllib.request.urlopen(request, timeout=30) as resp:
        return json.load(resp)["data"][0]["id"]


GAUGES = ("gateway_kv_cache_free_blocks", "gateway_kv_cache_total_blocks", "gateway_engine_resident_bytes")


def engine_gauges(url: str, wanted: tuple[str, ...] = GAUGES) -> dict[str, float]:
    """Our gateway's KV and memory gauges (or the `wanted` ones) from /metrics ({} for servers without them)."""
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
            lines = resp.read().decode().splitlines()
    except OSError:
        return {}
    return {name: float(line.split()[-1]) for line in lines for name in wanted if line.startswith(name + " ")}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn_server(extra: list[str], max_num_seqs: int) -> tuple[subprocess.Popen, str]:
    """Starts `python -m gateway serve` (defaults plus `extra`) on a free port; waits for /health."""
    port = free_port()
    cmd = [sys.executable, "-m", "gateway", "serve", "--port", str(port), "--max-num-seqs", str(max_num_seqs), *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as resp:
                if resp.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the server did not become healthy")


def stop_server(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def machine_line() -> str:
    from engine.hardware import describe

    import torch

    return f"{platform.node()}: {describe(torch.device('cpu'))}; load {os.getloadavg()[0]:.2f}"


def median_of(runs: list[LevelResult], fn) -> float:
    values = [fn(r) for r in runs]
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def print_table(targets: list[str], levels: list[int], runs: dict[tuple[str, int], list[LevelResult]]) -> None:
    ours = targets[0]
    print("| target | streams | tok/s (median) | tok/s per run | TTFT p50 / p99 ms | ITL p50 / p99 ms | errors |"
          + "".join(f" {ours}/{t} tok/s |" for t in targets[1:]))
    print("|---|---:|---:|---|---:|---:|---:|" + "---:|" * (len(targets) - 1))
    for conc in levels:
        base = median_of(runs[(ours, conc)], lambda r: r.output_tok_s)
        for name in targets:
            rs = runs[(name, conc)]
            tok = median_of(rs, lambda r: r.output_tok_s)
            per_run = ", ".join(f"{r.output_tok_s:.1f}" for r in rs)
            ttft = (median_of(rs, lambda r: r.ttft(50)) * 1e3, median_of(rs, lambda r: r.ttft(99)) * 1e3)
            itl = (median_of(rs, lambda r: r.itl(50)) * 1e3, median_of(rs, lambda r: r.itl(99)) * 1e3)
            errors = sum(r.num_errors for r in rs)
            ratios = "".join(f" {base / median_of(runs[(t, conc)], lambda r: r.output_tok_s):.2f} |"
                             if name == ours else " |" for t in targets[1:])  # fmt: skip
            print(f"| {name} | {conc} | {tok:.1f} | {per_run} | {ttft[0]:,.0f} / {ttft[1]:,.0f} | "
                  f"{itl[0]:.1f} / {itl[1]:.1f} | {errors} |{ratios}")
    for (name, conc), rs in runs.items():
        for r in (x for lv in rs for x in lv.results if not x.ok):
            print(f"  {name} at {conc} streams: {r.error}")
            break


def plot(targets, levels, runs, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    panels = (("output tokens/s", lambda r: r.output_tok_s), ("TTFT p50 (ms)", lambda r: r.ttft(50) * 1e3),
              ("inter-token latency p50 (ms)", lambda r: r.itl(50) * 1e3))  # fmt: skip
    for ax, (label, fn) in zip(axes, panels):
        for name in targets:
            ax.plot(levels, [median_of(runs[(name, c)], fn) for c in levels], "o-", label=name)
        ax.set(title=label, xlabel="concurrent streams")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")


def add_target_args(p: argparse.ArgumentParser) -> None:
    """The flags that name the servers to measure (shared with prefix_ttft.py)."""
    p.add_argument("--url", action="append", default=[], metavar="NAME=URL", help="a running server (repeatable)")
    p.add_argument("--spawn", action="store_true", help="start our gateway (listed first, as 'ours')")
    p.add_argument("--spawn-args", default="", help="extra flags for the spawned gateway, one string")
    p.add_argument("--api-key", default=None)


def start_targets(args: argparse.Namespace, max_num_seqs: int):
    """(headers, [(name, url)], spawned process or None) from add_target_args' flags."""
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    targets: list[tuple[str, str]] = []
    proc = None
    if args.spawn:
        proc, url = spawn_server(args.spawn_args.split(), max_num_seqs)
        targets.append(("ours", url))
    for spec in args.url:
        name, _, url = spec.partition("=") if "=" in spec else (f"server{len(targets)}", "", spec)
        targets.append((name, url.rstrip("/")))
    if not targets:
        if proc is not None:
            stop_server(proc)
        raise SystemExit("give --spawn and/or --url NAME=URL")
    return headers, targets, proc


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(p)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    p.add_argument("--waves", type=int, default=2, help="requests per level as a multiple of the concurrency (>= 4)")
    p.add_argument("--repeats", type=int, default=1, help="runs of each level per target; medians are shown")
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--prompt-words", type=int, default=150, help="~200 tokens of chat prompt with the default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default=None, help="write a PNG plot here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    headers, targets, proc = start_targets(args, max(args.concurrency))
    try:
        models = {name: server_model(url, headers) for name, url in targets}
        print(machine_line())
        print(f"targets: {', '.join(f'{n} ({models[n]} at {u})' for n, u in targets)}")
        for name, url in targets:  # warm-up: first requests compile, allocate, fill caches
            asyncio.run(run_level(name, url, models[name], [chat_prompt(i, -1, args.prompt_words) for i in range(2)],
                                  2, 16, headers))  # fmt: skip
        gauges_before = {name: engine_gauges(url) for name, url in targets}
        runs: dict[tuple[str, int], list[LevelResult]] = {(n, c): [] for n, _ in targets for c in args.concurrency}
        for i, conc in enumerate(args.concurrency):
            num = max(4, args.waves * conc)
            for rep in range(args.repeats):
                prompts = [chat_prompt(j, args.seed * 1000 + i * 100 + rep, args.prompt_words) for j in range(num)]
                order = targets if rep % 2 == 0 else targets[::-1]
                for name, url in order:
                    level = asyncio.run(run_level(name, url, models[name], prompts, conc, args.output_len, headers))
                    runs[(name, conc)].append(level)
                    print(f"  {name:>10} x{conc:<3} run {rep + 1}: {level.output_tok_s:7.1f} tok/s, TTFT p50 "
                          f"{level.ttft(50) * 1e3:7.0f} ms, ITL p50 {level.itl(50) * 1e3:6.1f} ms, "
                          f"{level.num_errors} errors", flush=True)
        for name, url in targets:  # every block back in the pool, memory flat (our gateway reports both)
            before, after = gauges_before[name], engine_gauges(url)
            if before and after:
                total = sum(len(r) for (n, _), rs in runs.items() if n == name for lv in rs for r in [lv.results])
                print(f"{name}: {total} requests; free KV blocks {before['gateway_kv_cache_free_blocks']:.0f} -> "
                      f"{after['gateway_kv_cache_free_blocks']:.0f} of {after['gateway_kv_cache_total_blocks']:.0f}; "
                      f"engine resident {before['gateway_engine_resident_bytes'] / 2**20:.0f} -> "
                      f"{after['gateway_engine_resident_bytes'] / 2**20:.0f} MiB")
    finally:
        if proc is not None:
            stop_server(proc)
    names = [n for n, _ in targets]
    print()
    print(machine_line())
    print_table(names, args.concurrency, runs)
    if args.plot:
        plot(names, args.concurrency, runs, args.plot,
             f"chat, ~200-token prompts, {args.output_len} output tokens, medians of {args.repeats}")


if __name__ == "__main__":
    main()
