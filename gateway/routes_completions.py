"""POST /v1/completions: text completions for strings, string lists and token ids; echo, logprobs, stream."""

from __future__ import annotations

import time
import uuid
from typing import Any

import msgspec
from aiohttp import web

from gateway.errors import bad_request
from gateway.generation import Events, check_model, read_body, respond
from gateway.metrics import TokenTimer
from gateway.request_mapping import choice_params, sampling_params
from gateway.sse import SseWriter
from gateway.state import SERVICES, Services
from gateway.structured_request import request_constraint
from schemas.openai import Completion, CompletionChoice, CompletionLogprobs, CompletionRequest, PromptTokensDetails, Usage


def _is_ids(item: Any) -> bool:
    """A list of token ids (64-bit integers: whether they are in the vocabulary is the engine's check)."""
    return isinstance(item, list) and bool(item) and all(
        isinstance(t, int) and not isinstance(t, bool) and -(2**63) <= t < 2**63 for t in item)


def _prompts(services: Services, prompt: str | list[Any]) -> list[tuple[list[int], str | None]]:
    """Each prompt as (token ids, text or None for token ids): a string, strings, token ids, lists of them."""
    tokenizer = services.pool.tokenizer
    if isinstance(prompt, str):
        return [(tokenizer.encode(prompt), prompt)]
    if _is_ids(prompt):
        return [(list(prompt), None)]
    if prompt and all(isinstance(p, str) for p in prompt):
        return [(tokenizer.encode(p), p) for p in prompt]
    if prompt and all(_is_ids(p) for p in prompt):
        return [(list(p), None) for p in prompt]
    raise bad_request("prompt must be a non-empty string, list of strings, token ids or lists of token ids", "prompt")


class ChoiceText:
    """One completion choice as it streams: text, token count, logprobs and finish reason."""

    def __init__(self, echo: str, timer: TokenTimer, prompt_ids: list[int] | None = None) -> None:
        self.echo = echo
        self.prompt_ids = prompt_ids  # set when the echoed prompt's tokens get logprobs too
        self.text = ""
        self.offset = len(echo)
        self.timer = timer
        self.num_tokens = 0
        self.num_cached_tokens = 0
        self.finish_reason: str | None = None
        self.violation: str | None = None  # lenient structured output: how the document breaks its schema
        self.logprobs = _empty_logprobs()

    def absorb(self, services: Services, out: Any) -> tuple[str, CompletionLogprobs | None]:
        self.timer.tick(len(out.token_ids))
        self.num_tokens += len(out.token_ids)
        self.num_cached_tokens = max(self.num_cached_tokens, out.num_cached_tokens)
        self.text += out.text
        new = None
        if self.prompt_ids and out.prompt_logprobs is not None:
            new = _empty_logprobs()
            self._add_prompt_entries(services, new, out.prompt_logprobs)
        if out.logprobs:
            new = new or _empty_logprobs()
            for item in out.logprobs:
                token = services.token_text(item.token_id)
                top = {services.token_text(t): lp for t, lp in zip(item.top_token_ids, item.top_logprobs)}
                _append(new, token, item.logprob, top, self.offset)
                self.offset += len(token)
        if new is not None:
            for name in CompletionLogprobs.__struct_fields__:
                getattr(self.logprobs, name).extend(getattr(new, name))
        if out.finished:
            if out.finish_reason in ("abort", "error"):
                raise EngineUnavailable(f"the engine ended the request ({out.finish_reason})")
            self.finish_reason = out.finish_reason
            self.violation = getattr(out, "structured_violation", None)
        return out.text, new

    def _add_prompt_entries(self, services: Services, new: CompletionLogprobs, prompt_logprobs: list) -> None:
        """The echoed prompt's tokens, as the legacy API shows them: the first has no logprob."""
        offset = 0
        first = services.token_text(self.prompt_ids[0])
        _append(new, first, None, None, offset)
        offset += len(first)
        for item in prompt_logprobs:
            token = services.token_text(item.token_id)
            top = {services.token_text(t): lp for t, lp in zip(item.top_token_ids, item.top_logprobs)}
            _append(new, token, item.logprob, top, offset)
            offset += len(token)


def _empty_logprobs() -> CompletionLogprobs:
    return CompletionLogprobs(tokens=[], token_logprobs=[], top_logprobs=[], text_offset=[])


def _append(lp: CompletionLogprobs, token: str, logprob: float | None, top: dict | None, offset: int) -> None:
    lp.tokens.append(token)
    lp.token_logprobs.append(logprob)
    lp.top_logprobs.append(top)
    lp.text_offset.append(offset)


class CompletionCall:
    """One completions request after validation: a job per (prompt, choice)."""

    def __init__(self, services: Services, req: CompletionRequest) -> None:
        self.services = services
        self.req = req
        self.id = f"cmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        start = time.perf_counter()
        self.jobs, self.choices, self.num_prompt_tokens = [], [], 0
        self.streaming = bool(req.stream)
        self.constraint = request_constraint(req)
        self.names = {"structured": self.constraint.param} if self.constraint else {}
        params = sampling_params(req, structured=self.constraint.spec if self.constraint else None)
        scored = bool(req.echo) and req.logprobs is not None  # the echoed prompt's tokens get logprobs too
        if scored:
            params = msgspec.structs.replace(params, prompt_logprobs=req.logprobs)
        for prompt_ids, prompt_text in _prompts(services, req.prompt):
            self.num_prompt_tokens += len(prompt_ids)
            if req.echo and prompt_text is None:
                prompt_text = services.pool.tokenizer.decode(prompt_ids)
            for p in choice_params(params, req.n or 1):
                self.jobs.append((prompt_ids, p))
                self.choices.append(ChoiceText(prompt_text if req.echo else "", TokenTimer(services.metrics, start),
                                               prompt_ids if scored else None))  # fmt: skip

    def usage(self) -> Usage:
        completion = sum(c.num_tokens for c in self.choices)
        cached = max(c.num_cached_tokens for c in self.choices)
        return Usage(prompt_tokens=self.num_prompt_tokens, completion_tokens=completion,
                     total_tokens=self.num_prompt_tokens + completion,
                     prompt_tokens_details=PromptTokensDetails(cached_tokens=cached))

    def response(self, choices: list[CompletionChoice], usage: Usage | None = None) -> Completion:
        return Completion(id=self.id, created=self.created, model=self.services.model_name, choices=choices, usage=usage)

    def absorb(self, index: int, out: Any) -> None:
        self.choices[index].absorb(self.services, out)

    def body(self) -> Completion:
        want_logprobs = self.req.logprobs is not None
        choices = [
            CompletionChoice(index=i, text=c.echo + c.text, finish_reason=c.finish_reason,
                             logprobs=c.logprobs if want_logprobs else None,
                             **({"structured_output_violation": c.violation} if c.violation else {}))
            for i, c in enumerate(self.choices)
        ]
        return self.response(choices, self.usage())

    async def write_stream(self, sse: SseWriter, events: Events) -> None:
        echoes = [CompletionChoice(index=i, text=c.echo) for i, c in enumerate(self.choices) if c.echo]
        await sse.send_many([self.response([choice]) for choice in echoes])
        async for index, out in events:
            choice = self.choices[index]
            text, logprobs = choice.absorb(self.services, out)
            if text or logprobs or choice.finish_reason:
                item = CompletionChoice(index=index, text=text, logprobs=logprobs, finish_reason=choice.finish_reason,
                                        **({"structured_output_violation": choice.violation} if choice.violation else {}))
                await sse.send(self.response([item]))
        if self.req.stream_options is not None and self.req.stream_options.include_usage:
            await sse.send(self.response([], self.usage()))


async def completions(request: web.Request) -> web.StreamResponse:
    services = request.app[SERVICES]
    req = await read_body(request, CompletionRequest)
    check_model(services, req.model)
    return await respond(request, services, CompletionCall(services, req))
