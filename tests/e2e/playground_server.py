"""Test-only launcher: the real gateway app (gateway.app.create_app) over the scripted fake engine.

The browser tests need replies a random model cannot write: a reasoning trace, a tool call, an answer
to a tool result, a long slow stream to stop, and a fleet of replicas on named nodes, one of which a
prompt can kill (the first to receive "crash a replica" dies before its first token: the pool moves the
request to another and restarts the dead one, slowly, so that the page can see it restarting). Run as
`python -m tests.e2e.playground_server --port N --tokenizer DIR [--api-key KEY] [--replicas N]`; it
prints "Serving model ..." when ready, like `python -m gateway serve`, and stops on SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from gateway.app import create_app
from gateway.parser_config import ParserConfig
from gateway.engine_pool import EnginePool
from gateway.state import GatewaySettings, Services
from schemas.engine import SamplingParams
from tests.gateway.fake_engine import FakeLLM

CALL = ["<think>", "The user asks", " about the weather.", " I should call", " get_weather.", "</think>",
        "<tool_call>", '{"name": "get_weather", ', '"arguments": {', '"city": ', '"Par', 'is", ', '"unit": ',
        '"celsius"}}', "</tool_call>"]
ANSWER = ["<think>", "The tool", " answered;", " I can reply.", "</think>", "It is", " 18 °C", " and sunny", " in Paris."]
GREETING = ["<think>", "A greeting.", "</think>", "Hello!", " I am", " a scripted", " fake model."]
SLOW_WORDS = 400  # "count slowly": one word per step, long enough to be stopped
CRASH = "crash a replica"


def make_script(tokenizer: Any, replica: int = 0, crash: Callable[[], bool] = lambda: False
                ) -> Callable[[list[int], SamplingParams], list[str]]:  # fmt: skip
    """The reply to a prompt, chosen by what the rendered prompt holds (the tiny model's chat template).
    `crash()` kills the replica running the script and says whether it did (the first time only)."""

    def script(prompt_token_ids: list[int], params: SamplingParams) -> list[str]:
        prompt = tokenizer.decode(prompt_token_ids)
        last_turn = prompt.rsplit("<|im_start|>", 2)[-2]
        if CRASH in last_turn:
            if crash():
                return ["never sent"]  # the replica is dead: its next step raises before this streams
            return [f"Replica {replica}", " answered", " instead."]
        if last_turn.startswith("tool"):
            return list(ANSWER)
        if "count slowly" in last_turn:
            return [f" {i}" for i in range(1, SLOW_WORDS + 1)]
        if "You may call tools" in prompt:
            return list(CALL)
        return list(GREETING)

    return script


def build_app(tokenizer_dir: str, api_key: str | None, step_delay_s: float, replicas: int = 1,
              restart_delay_s: float = 3.0) -> web.Application:  # fmt: skip
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    settings = GatewaySettings(api_keys=(api_key,) if api_key else (), parsers=ParserConfig(tool_parser="qwen3", reasoning_parser="qwen3"))
    crashed: list[int] = []  # the replica killed by CRASH, once per server

    def make_fake(index: int) -> FakeLLM:
        def crash() -> bool:
            if crashed:
                return False
            crashed.append(index)
            fake.kill()
            return True

        fake = FakeLLM(tokenizer, script=make_script(tokenizer, index, crash), max_model_len=4096, num_blocks=1024,
                       step_delay_s=step_delay_s)
        fake.location = f"node-{'abc'[index % 3]}"  # what /metrics labels a replica's node with (Ray's is ip/id)
        return fake

    async def restart(index: int) -> FakeLLM:  # a replacement takes a while to load, as a real one does
        await asyncio.sleep(restart_delay_s)
        return make_fake(index)

    async def start_pool() -> EnginePool:
        return EnginePool([make_fake(i) for i in range(replicas)], restart, max_queued=16 * replicas,
                          max_queued_per_replica=16)  # fmt: skip

    def on_ready(services: Services) -> None:
        print(f"Serving model {services.model_name} (scripted fake engine)", flush=True)

    return create_app(settings, start_pool, on_ready=on_ready)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokenizer", required=True, help="a folder with a Hugging Face tokenizer (the tiny model's)")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--step-delay", type=float, default=0.06, help="seconds between streamed pieces")
    parser.add_argument("--replicas", type=int, default=1, help="fake engine replicas, on nodes node-a, node-b, ...")
    parser.add_argument("--restart-delay", type=float, default=3.0, help="seconds a dead replica takes to come back")
    args = parser.parse_args(argv)
    app = build_app(args.tokenizer, args.api_key, args.step_delay, args.replicas, args.restart_delay)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, handler_cancellation=True, access_log=None,
                shutdown_timeout=5)


if __name__ == "__main__":
    main()
