"""Serving benchmark: load an OpenAI-compatible server at several concurrencies, compare with the offline engine.

    python benchmarks/serve.py --spawn                       # start our gateway on the default model
    python benchmarks/serve.py --url http://127.0.0.1:8000   # any OpenAI-compatible server
    python benchmarks/serve.py --spawn --concurrency 1 4 --num-requests 8 --prompt-len 32 --output-len 16

Each level runs a closed loop of `concurrency` streaming /v1/completions requests with fixed
prompt and output lengths (ignore_eos) and reports TTFT and inter-token latency p50/p99,
output tokens/s and errors. The same prompts then run through the offline engine
(`engine.LLM`) in waves of `concurrency`, and the table shows HTTP/offline throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class RequestResult:
    ok: bool
    ttft_s: float = 0.0
    itls_s: list[float] = field(default_factory=list)
    num_output_tokens: int = 0
    error: str = ""


@dataclass
class LevelResult:
    concurrency: int
    num_requests: int
    results: list[RequestResult]
    elapsed_s: float
    offline_tok_s: float | None = None

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


def make_prompts(num: int, prompt_len: int, seed: int, low: int = 10, high: int = 10000) -> list[list[int]]:
    """Distinct random token-id prompts (so the prefix cache does not flatter TTFT)."""
    rng = random.Random(seed)
    return [[rng.randrange(low, high) for _ in range(prompt_len)] for _ in range(num)]


async def one_request(session: aiohttp.ClientSession, url: str, model: str, prompt: list[int], output_len: int,
                      headers: dict[str, str]) -> RequestResult:
    payload = {"model": model, "prompt": prompt, "max_tokens": output_len, "temperature": 0.0,
               "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
    start = time.perf_counter()
    last, result, num_chunks = None, RequestResult(ok=False), 0
    try:
        async with session.post(url + "/v1/completions", json=payload, headers=headers) as resp:
            if resp.status != 200:
                return RequestResult(ok=False, error=f"HTTP {resp.status}: {(await resp.text())[:200]}")
            buffer = b""
            async for data in resp.content.iter_any():
                buffer += data
                while b"\n\n" in buffer:
                    raw, buffer = buffer.split(b"\n\n", 1)
                    if not raw.startswith(b"data: ") or raw == b"data: [DONE]":
                        continue
                    event = json.loads(raw[6:])
                    if "error" in event:
                        return RequestResult(ok=False, error=str(event["error"])[:200])
                    if event.get("usage"):
                        result.num_output_tokens = event["usage"]["completion_tokens"]
                    if event.get("choices") and event["choices"][0].get("text"):
                        now = time.perf_counter()
                        if last is None:
                            result.ttft_s = now - start
                        else:
                            result.itls_s.append(now - last)
                        last, num_chunks = now, num_chunks + 1
    except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
        return RequestResult(ok=False, error=repr(exc))
    result.ok = last is not None
    result.num_output_tokens = result.num_output_tokens or num_chunks
    return result


async def run_level(url: str, model: str, prompts: list[list[int]], concurrency: int, output_len: int,
                    headers: dict[str, str]) -> LevelResult:
    queue: asyncio.Queue = asyncio.Queue()
    for prompt in prompts:
        queue.put_nowait(prompt)
    results: list[RequestResult] = []
    timeout = aiohttp.ClientTimeout(total=3600)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        async def worker() -> None:
            while not queue.empty():
                prompt = queue.get_nowait()
                results.append(await one_request(session, url, model, prompt, output_len, headers))

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    return LevelResult(concurrency, len(prompts), results, elapsed)


async def server_model(url: str, headers: dict[str, str]) -> str:
    async with aiohttp.ClientSession() as session:
        async with session.get(url + "/v1/models", headers=headers) as resp:
            return (await resp.json())["data"][0]["id"]


def offline_throughput(llm, prompts: list[list[int]], concurrency: int, output_len: int) -> float:
    """Output tokens/s of the offline engine on the same prompts, in waves of `concurrency`."""
    from engine import SamplingParams

    params = SamplingParams(max_tokens=output_len, temperature=0.0, ignore_eos=True)
    num_tokens, start = 0, time.perf_counter()
    for i in range(0, len(prompts), concurrency):
        outputs = llm.generate(prompts[i:i + concurrency], params)
        num_tokens += sum(len(out.token_ids) for out in outputs)
    return num_tokens / (time.perf_counter() - start)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    """Starts `python -m gateway serve` on a free port and waits for /health."""
    import urllib.request

    port = free_port()
    cmd = [sys.executable, "-m", "gateway", "serve", "--port", str(port),
           "--max-num-seqs", str(max(args.concurrency)), "--max-model-len", str(args.max_model_len)]
    if args.model:
        cmd += ["--model", args.model]
    if args.num_threads:
        cmd += ["--num-threads", str(args.num_threads)]
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


def print_table(levels: list[LevelResult]) -> None:
    head = (f"{'conc':>5} {'reqs':>5} {'errors':>6} {'ttft_p50_ms':>11} {'ttft_p99_ms':>11} {'itl_p50_ms':>10} "
            f"{'itl_p99_ms':>10} {'http_tok/s':>10} {'offline_tok/s':>13} {'ratio':>6}")
    print(head)
    print("-" * len(head))
    for lv in levels:
        offline = f"{lv.offline_tok_s:13.1f}" if lv.offline_tok_s else f"{'-':>13}"
        ratio = f"{lv.output_tok_s / lv.offline_tok_s:6.2f}" if lv.offline_tok_s else f"{'-':>6}"
        print(f"{lv.concurrency:5d} {lv.num_requests:5d} {lv.num_errors:6d} {lv.ttft(50) * 1e3:11.1f} "
              f"{lv.ttft(99) * 1e3:11.1f} {lv.itl(50) * 1e3:10.1f} {lv.itl(99) * 1e3:10.1f} "
              f"{lv.output_tok_s:10.1f} {offline} {ratio}")
    for lv in levels:
        for r in lv.results:
            if not r.ok:
                print(f"  error at concurrency {lv.concurrency}: {r.error}")
                break


def plot(levels: list[LevelResult], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    conc = [lv.concurrency for lv in levels]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    axes[0].plot(conc, [lv.output_tok_s for lv in levels], "o-", label="HTTP (gateway)")
    if any(lv.offline_tok_s for lv in levels):
        axes[0].plot(conc, [lv.offline_tok_s or float("nan") for lv in levels], "s--", label="offline engine")
    axes[0].set(title="output tokens/s", xlabel="concurrent streams")
    for ax, name, fn in ((axes[1], "TTFT (ms)", LevelResult.ttft), (axes[2], "inter-token latency (ms)", LevelResult.itl)):
        ax.plot(conc, [fn(lv, 50) * 1e3 for lv in levels], "o-", label="p50")
        ax.plot(conc, [fn(lv, 99) * 1e3 for lv in levels], "s--", label="p99")
        ax.set(title=name, xlabel="concurrent streams")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="base URL of a running OpenAI-compatible server")
    target.add_argument("--spawn", action="store_true", help="start our gateway for the run")
    parser.add_argument("--model", default=None, help="model path for --spawn and the offline engine (default model)")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--num-requests", type=int, default=None, help="per level (default: waves x concurrency, >= 4)")
    parser.add_argument("--waves", type=int, default=2, help="requests per level as a multiple of the concurrency")
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument("--max-model-len", type=int, default=2048, help="for --spawn")
    parser.add_argument("--no-offline", action="store_true", help="skip the offline-engine comparison")
    parser.add_argument("--plot", nargs="?", const="serve_benchmark.png", default=None, help="write a PNG plot")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-threads", type=int, default=None, help="torch threads of the engine (both runs)")
    parser.add_argument("--max-token-id", type=int, default=10000, help="prompts use random ids in [10, this)")
    return parser.parse_args(argv)


def load_offline(args: argparse.Namespace):
    """The offline engine on the same model and thread count, or None with --no-offline."""
    if args.no_offline:
        return None
    sys.path.insert(0, str(ROOT))
    from engine import LLM

    llm = LLM(model=args.model, max_num_seqs=max(args.concurrency), max_model_len=args.max_model_len,
              num_threads=args.num_threads)
    offline_throughput(llm, make_prompts(1, args.prompt_len, -1, high=args.max_token_id), 1, 4)  # warm-up
    return llm


def main(argv: list[str] | None = None) -> None:
    """Per level: the HTTP run, then the offline run on the same prompts (interleaved, so that
    load from elsewhere on the machine drifts less between the two)."""
    args = parse_args(argv)
    if args.num_threads is None:  # the gateway's CPU default, used for both runs so they compare
        args.num_threads = max(1, (os.cpu_count() or 1) - 1)
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    proc, url = spawn_server(args) if args.spawn else (None, args.url.rstrip("/"))
    levels: list[LevelResult] = []
    try:
        model = asyncio.run(server_model(url, headers))
        print(f"server {url}, model {model}, prompt {args.prompt_len} tokens, output {args.output_len} tokens")
        asyncio.run(run_level(url, model, make_prompts(1, args.prompt_len, -1, high=args.max_token_id), 1, 4,
                              headers))  # warm-up
        llm = load_offline(args)
        for i, conc in enumerate(args.concurrency):
            num = args.num_requests or max(4, args.waves * conc)
            prompts = make_prompts(num, args.prompt_len, args.seed + i, high=args.max_token_id)
            level = asyncio.run(run_level(url, model, prompts, conc, args.output_len, headers))
            if llm is not None:
                level.offline_tok_s = offline_throughput(llm, prompts, conc, args.output_len)
            offline = f", offline {level.offline_tok_s:.1f} tok/s" if level.offline_tok_s else ""
            print(f"  concurrency {conc}: HTTP {level.output_tok_s:.1f} tok/s, {level.num_errors} errors{offline}",
                  flush=True)
            levels.append(level)
    finally:
        if proc is not None:
            stop_server(proc)
    print()
    print_table(levels)
    if args.plot:
        plot(levels, args.plot, f"{model}: prompt {args.prompt_len}, output {args.output_len} tokens (ignore_eos)")


if __name__ == "__main__":
    main()
