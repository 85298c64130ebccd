"""benchmarks/serve.py's client: a request whose keep-alive connection the server closed before any
response is retried on a new connection (as the official clients do), so an anchor that closes idle
connections (llama.cpp's server) is not charged errors the user would never see; a request that
failed after its response began is never retried."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import aiohttp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_serve():
    spec = importlib.util.spec_from_file_location("bench_serve", ROOT / "benchmarks" / "serve.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def sse_response(num_tokens: int) -> bytes:
    events = [{"choices": [{"delta": {"content": f"t{i} "}}]} for i in range(num_tokens)]
    events.append({"choices": [], "usage": {"completion_tokens": num_tokens, "prompt_tokens": 7}})
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n")  # fmt: skip
    return head + body


async def read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    await reader.readexactly(length)


async def serve(plan: list[str]):
    """A raw HTTP server acting out `plan`, one entry per connection: 'close' (read the request,
    close without a byte), 'ok' (answer 4 tokens), 'cut' (send the head and one event, then close)."""
    connections = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        what = plan[len(connections)] if len(connections) < len(plan) else "ok"
        connections.append(what)
        await read_request(reader)
        if what == "ok":
            writer.write(sse_response(4))
            await writer.drain()
        elif what == "cut":
            full = sse_response(4)
            writer.write(full[: full.index(b"\n\n", full.index(b"\r\n\r\n") + 4) + 2])
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", connections


async def request(serve_mod, url: str):
    async with aiohttp.ClientSession() as session:
        messages = [{"role": "user", "content": "hi"}]
        return await serve_mod.one_request(session, url, "m", messages, 4, {})


@pytest.mark.parametrize("closes", [1, 2])
async def test_a_connection_closed_before_any_response_is_retried(closes):
    serve_mod = load_serve()
    server, url, connections = await serve(["close"] * closes + ["ok"])
    async with server:
        result = await request(serve_mod, url)
    assert result.ok and result.error == ""
    assert result.num_output_tokens == 4 and len(result.itls_s) == 3
    assert connections == ["close"] * closes + ["ok"]


async def test_a_server_that_keeps_closing_is_an_error_after_the_retries():
    serve_mod = load_serve()
    server, url, connections = await serve(["close"] * 10)
    async with server:
        result = await request(serve_mod, url)
    assert not result.ok and "Disconnected" in result.error
    assert len(connections) == serve_mod.CONNECT_RETRIES + 1


async def test_a_stream_cut_after_its_response_began_is_not_retried():
    serve_mod = load_serve()
    server, url, connections = await serve(["cut", "ok"])
    async with server:
        result = await request(serve_mod, url)
    assert connections == ["cut"]
    assert not result.ok and "Payload" in result.error


def load_agent_workload():
    load_serve()  # agent_workload imports serve's client from benchmarks/
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_agents", ROOT / "benchmarks" / "agent_workload.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_agent_tables_survive_a_target_whose_every_turn_failed(capsys):
    agents = load_agent_workload()
    ok = agents.RequestResult(True, ttft_s=0.5, num_output_tokens=40, num_prompt_tokens=1500)
    failed = agents.RequestResult(False, error="HTTP 400: request exceeds the available context size")
    runs = {"ours": [agents.Run("ours", [agents.Turn(0, 0, ok), agents.Turn(0, 1, ok)], 2.0)],
            "llama.cpp": [agents.Run("llama.cpp", [agents.Turn(0, 0, failed), agents.Turn(0, 1, failed)], 2.0)]}
    agents.print_tables(["ours", "llama.cpp"], runs, {"ours": True, "llama.cpp": False}, 2)
    out = capsys.readouterr().out
    assert "| ours / llama.cpp | n/a | n/a | n/a | n/a | n/a | n/a |" in out
    assert "llama.cpp: agent 0 turn 1: HTTP 400" in out
    assert agents.ratio(1.0, 2.0) == "0.50"
