"""POST /v1/completions: text completions for strings, string lists and token ids; echo, logprobs, stream."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import msgspec
from aiohttp import web

from gateway.engine_pool import EngineUnavailable
from gateway.errors import ApiError, bad_request, from_value_error
from gateway.generation import admit, check_constraint, check_model, drain, fan_out, read_body, unavailable, validate
from gateway.metrics import TokenTimer
from gateway.request_mapping import choice_params, sampling_params
from gateway.sse import SseWriter
from gateway.state import SERVICES, Services
from gateway.structured_request import request_constraint
from schemas.openai import Completion, CompletionChoice, CompletionLogprobs, CompletionRequest, PromptTokensDetails, Usage

_ENCODER = msgspec.json.Encoder()
log = logging.getLogger("gateway")


def _is_ids(item: Any) -> bool:
    return isinstance(item, list) and bool(item) and all(isinstance(t, int) and not isinstance(t, bool) for t in item)


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
        info = services.pool.model_info
        self.jobs, self.choices, self.num_prompt_tokens = [], [], 0
        self.constraint = request_constraint(req)
        for prompt_ids, prompt_text in _prompts(services, req.prompt):
            params = sampling_params(
                req, num_prompt_tokens=len(prompt_ids), max_model_len=info.max_model_len, vocab_size=info.vocab_size,
                structured=self.constraint.spec if self.constraint else None,
            )
            scored = bool(req.echo) and req.logprobs is not None  # the echoed prompt's tokens get logprobs too
            if scored:
                params = msgspec.structs.replace(params, prompt_logprobs=req.logprobs)
            validate(services, prompt_ids, params)
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

    def events(self):
        self.services.metrics.prompt_tokens.inc(self.num_prompt_tokens)
        return fan_out(self.services.pool, self.id, self.jobs)


async def completions(request: web.Request) -> web.StreamResponse:
    services = request.app[SERVICES]
    req = await read_body(request, CompletionRequest)
    check_model(services, req.model)
    call = CompletionCall(services, req)
    await check_constraint(services, call.constraint)
    with admit(services, len(call.jobs)):
        if req.stream:
            return await _stream(request, call)
        return await _complete(call)


async def _complete(call: CompletionCall) -> web.Response:
    await drain(call.services, call.events(), lambda index, out: call.choices[index].absorb(call.services, out))
    want_logprobs = call.req.logprobs is not None
    choices = [
        CompletionChoice(index=i, text=c.echo + c.text, finish_reason=c.finish_reason,
                         logprobs=c.logprobs if want_logprobs else None)
        for i, c in enumerate(call.choices)
    ]
    return web.Response(body=_ENCODER.encode(call.response(choices, call.usage())), content_type="application/json")


async def _stream(request: web.Request, call: CompletionCall) -> web.StreamResponse:
    sse = SseWriter(request)
    await sse.open()
    events = call.events()
    try:
        echoes = [CompletionChoice(index=i, text=c.echo) for i, c in enumerate(call.choices) if c.echo]
        await sse.send_many([call.response([choice]) for choice in echoes])
        async for index, out in events:
            choice = call.choices[index]
            text, logprobs = choice.absorb(call.services, out)
            if text or logprobs or choice.finish_reason:
                item = CompletionChoice(index=index, text=text, logprobs=logprobs, finish_reason=choice.finish_reason)
                await sse.send(call.response([item]))
        if call.req.stream_options is not None and call.req.stream_options.include_usage:
            await sse.send(call.response([], call.usage()))
        await sse.done()
    except ConnectionResetError:
        pass  # the client left: closing `events` aborts its engine requests
    except EngineUnavailable as exc:
        await sse.error(unavailable(call.services, exc))
    except ApiError as exc:
        await sse.error(exc)
    except ValueError as exc:
        await sse.error(from_value_error(exc))
    except Exception:
        log.exception("completion stream %s failed", call.id)
        await sse.error(ApiError(500, "Internal server error", type="internal_error", code="internal_error"))
    finally:
        await events.aclose()
    return sse.response
