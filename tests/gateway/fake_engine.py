"""A scripted fake of engine.AsyncLLM for gateway tests: same interface, canned text, real tokenizer."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.client import RequestRefused
import engine.structured
from engine.structured import build_vocabulary, start_thread
from engine.validation import Limits, admit
from schemas.engine import EngineStats, SamplingParams, TokenLogprob

DEFAULT_PIECES = ["Hello", ",", " world", "!", " How", " are", " you", " today", "?", " Fine", "."]

Script = Callable[[list[int], SamplingParams], list[str]]


class FakeEngineDead(Exception):
    """What the fake raises in every in-flight generate() when killed (EngineDeadError's stand-in)."""


@dataclass
class FakeModelInfo:
    name: str = "fake-model"
    path: Path | None = None
    max_model_len: int = 256
    vocab_size: int = 0
    eos_token_ids: list[int] = field(default_factory=list)


@dataclass
class FakeOutput:
    token_ids: list[int]
    text: str
    logprobs: list[TokenLogprob] | None
    finished: bool
    finish_reason: str | None
    stop_reason: int | str | None
    num_prompt_tokens: int
    num_cached_tokens: int = 0
    prompt_logprobs: list[TokenLogprob] | None = None


def default_script(prompt_token_ids: list[int], params: SamplingParams) -> list[str]:
    """Greedy: the fixed pieces; sampled with a seed: a seed-dependent shuffle of them."""
    if params.temperature == 0 or params.seed is None:
        return list(DEFAULT_PIECES)
    pieces = list(DEFAULT_PIECES)
    random.Random(params.seed).shuffle(pieces)
    return pieces


class _FakeStream:
    """An admitted request's deltas; `aclose` is idempotent and aborts an unfinished request."""

    def __init__(self, gen, on_close) -> None:
        self._gen, self._on_close = gen, on_close
        self._finished = False

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            out = await anext(self._gen)
        except BaseException:
            await self.aclose()
            raise
        self._finished = out.finished
        return out

    async def aclose(self) -> None:
        await self._gen.aclose()
        if self._on_close is not None:
            self._on_close, on_close = None, self._on_close
            on_close(self._finished)


class FakeLLM:
    """Emits `script(prompt, params)` one piece per step, honouring max_tokens and stop strings,
    allocating fake KV blocks that return to the pool when a request ends or is aborted."""

    def __init__(self, tokenizer: Any, *, script: Script = default_script, max_model_len: int = 256,
                 num_blocks: int = 64, block_size: int = 16, step_delay_s: float = 0.0) -> None:
        self.tokenizer = tokenizer
        self.model_info = FakeModelInfo(max_model_len=max_model_len, vocab_size=len(tokenizer),
                                        eos_token_ids=[tokenizer.eos_token_id])
        self.script = script
        self.block_size = block_size
        self.num_total_blocks = num_blocks
        self.num_free_blocks = num_blocks
        self.step_delay_s = step_delay_s
        self.is_alive = True
        self.num_inflight = 0
        self.aborted: list[str] = []
        self.requests: list[tuple[str, list[int], SamplingParams]] = []
        self._dead = asyncio.Event()
        self._running = asyncio.Event()  # the barrier a test holds closed with pause()
        self._running.set()
        self._vocab = None
        self.grammar_compile_timeout = 30.0
        self.last_heard = None  # no heartbeat to watch
        self.profiling = False

    @property
    def stats(self) -> EngineStats:
        used = self.num_total_blocks - self.num_free_blocks
        return EngineStats(num_running=self.num_inflight, num_total_blocks=self.num_total_blocks,
                           num_free_blocks=self.num_free_blocks, kv_usage=used / self.num_total_blocks)

    async def _admit(self, prompt_token_ids: list[int], params: SamplingParams) -> SamplingParams:
        """The real core's admission: engine.validation's rules, then the real grammar compile
        (against the fake's tokenizer) within the compile limit; RequestRefused when it refuses."""
        try:
            params = admit(prompt_token_ids, params, Limits(self.model_info.vocab_size, self.model_info.max_model_len))
        except ValueError as exc:
            raise RequestRefused(str(exc)) from None
        if params.structured is None:
            return params
        if self._vocab is None:
            self._vocab = build_vocabulary(self.tokenizer, self.model_info.vocab_size, self.model_info.eos_token_ids)
        spec, vocab, limit = params.structured, self._vocab, self.grammar_compile_timeout
        try:
            await asyncio.wait_for(asyncio.wrap_future(start_thread(lambda: engine.structured.compile_spec(spec, vocab, limit), "fake-compile")),
                                   limit)  # fmt: skip
        except asyncio.TimeoutError:
            raise RequestRefused(f"structured: grammar compilation exceeded the limit of {limit:g} s") from None
        except Exception as exc:  # GrammarError and whatever a malformed spec provokes
            raise RequestRefused(f"structured: {exc}") from None
        return params

    async def start_profile(self) -> None:
        if self.profiling:
            raise RuntimeError("the profiler is already running")
        self.profiling = True

    async def stop_profile(self, path: str) -> str:
        if not self.profiling:
            raise RuntimeError("the profiler is not running")
        self.profiling = False
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text('{"traceEvents": []}')
        return path

    def kill(self) -> None:
        self.is_alive = False
        self._dead.set()

    def pause(self) -> None:
        """Holds every request at its next step until `resume` (admission still answers): a test lines
        up work in a known state instead of racing the fake's speed."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)

    async def shutdown(self) -> None:
        self.is_alive = False

    async def submit(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams):
        if not self.is_alive:
            raise FakeEngineDead("engine core is dead")
        self.num_inflight += 1  # from submission, as AsyncLLM counts (least-loaded routing reads it)
        try:
            params = await self._admit(prompt_token_ids, params)
        except BaseException:
            self.num_inflight -= 1
            raise

        def closed(finished: bool) -> None:
            self.num_inflight -= 1
            if not finished and self.is_alive:
                self.aborted.append(request_id)

        return _FakeStream(self._generate(request_id, prompt_token_ids, params), closed)

    async def _generate(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams):
        self.requests.append((request_id, prompt_token_ids, params))
        num_blocks = math.ceil((len(prompt_token_ids) + (params.max_tokens or 0)) / self.block_size)
        self.num_free_blocks -= num_blocks
        try:
            async for out in self._steps(prompt_token_ids, params):
                yield out
        finally:
            self.num_free_blocks += num_blocks

    async def _step(self) -> None:
        if not self._running.is_set():
            dead, running = asyncio.ensure_future(self._dead.wait()), asyncio.ensure_future(self._running.wait())
            try:
                await asyncio.wait([dead, running], return_when=asyncio.FIRST_COMPLETED)
            finally:
                dead.cancel()
                running.cancel()
        if self.step_delay_s:
            dead = asyncio.ensure_future(self._dead.wait())
            try:
                await asyncio.wait([dead], timeout=self.step_delay_s)
            finally:
                dead.cancel()
        else:
            await asyncio.sleep(0)
        if not self.is_alive:
            raise FakeEngineDead("engine core died")

    async def _steps(self, prompt_token_ids: list[int], params: SamplingParams):
        pieces = self.script(prompt_token_ids, params)
        num_tokens, text_so_far = 0, ""
        for i, piece in enumerate(pieces):
            await self._step()
            token_ids = self.tokenizer.encode(piece, add_special_tokens=False)
            num_tokens += len(token_ids)
            text_so_far += piece
            reason, stop_reason = None, None
            for stop in params.stop or ():
                cut = text_so_far.find(stop)
                if cut >= 0:
                    piece = piece[: max(0, len(piece) - (len(text_so_far) - cut))]
                    reason, stop_reason = "stop", stop
                    break
            if reason is None and params.max_tokens is not None and num_tokens >= params.max_tokens:
                reason = "length"
            if reason is None and i == len(pieces) - 1:
                reason = "stop"
            logprobs = self._logprobs(token_ids, params)
            prompt_logprobs = None
            if i == 0 and params.prompt_logprobs is not None:  # prompt token p scores -p/10, p >= 1
                k = params.prompt_logprobs
                prompt_logprobs = [TokenLogprob(t, -p / 10, [t, *range(1, k)][:k], [-p / 10, *[-9.0] * (k - 1)][:k])
                                   for p, t in enumerate(prompt_token_ids[1:], start=1)]  # fmt: skip
            yield FakeOutput(token_ids, piece, logprobs, reason is not None, reason, stop_reason,
                             len(prompt_token_ids), 0, prompt_logprobs)
            if reason is not None:
                return

    def _logprobs(self, token_ids: list[int], params: SamplingParams) -> list[TokenLogprob] | None:
        if params.logprobs is None:
            return None
        k = params.logprobs
        return [TokenLogprob(t, -0.25, [t, *range(1, k)][:k], [-0.25, *[-3.0] * (k - 1)][:k]) for t in token_ids]
