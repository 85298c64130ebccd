"""POST /v1/chat/completions: streaming (SSE chunks) and non-streaming chat replies."""

from __future__ import annotations

import logging
import time
import uuid

import msgspec
from aiohttp import web

from gateway.chat_choice import ChoiceState
from gateway.chat_output import open_output
from gateway.chat_template import tool_dicts
from gateway.engine_pool import EngineUnavailable
from gateway.errors import ApiError, bad_request, from_value_error
from gateway.generation import admit, check_constraint, check_model, drain, fan_out, read_body, unavailable, validate
from gateway.metrics import TokenTimer
from gateway.request_mapping import check_tool_choice, choice_params, sampling_params
from gateway.sse import SseWriter
from gateway.state import SERVICES, Services
from gateway.structured_request import request_constraint
from gateway.tool_constraint import tool_call_spec
from schemas.openai import (
    ChatChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatDelta,
    ChunkChoice,
    PromptTokensDetails,
    Usage,
)

_ENCODER = msgspec.json.Encoder()
log = logging.getLogger("gateway")


class ChatCall:
    """One chat request after validation: its prompt, per-choice params and states."""

    def __init__(self, services: Services, req: ChatCompletionRequest) -> None:
        self.services = services
        self.req = req
        self.start = time.perf_counter()
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        pool = services.pool
        check_tool_choice(req)
        rendered = services.renderer.render(
            req.messages,
            tools=req.tools,
            add_generation_prompt=req.add_generation_prompt,
            continue_final_message=req.continue_final_message,
            template_kwargs=req.chat_template_kwargs,
        )
        self.prompt_token_ids = rendered.token_ids
        self.constraint = request_constraint(req)
        tool_constraint = tool_call_spec(req, services.parsers.tool_parser)
        if tool_constraint is not None:
            if self.constraint is not None:
                raise bad_request(f"constrained tool calls ({tool_constraint.param}) cannot be combined with "
                                  f"{self.constraint.param}", tool_constraint.param)  # fmt: skip
            self.constraint = tool_constraint
        params = sampling_params(
            req,
            num_prompt_tokens=len(rendered.token_ids),
            max_model_len=pool.model_info.max_model_len,
            vocab_size=pool.model_info.vocab_size,
            structured=self.constraint.spec if self.constraint else None,
        )
        validate(services, rendered.token_ids, params)
        self.params = choice_params(params, req.n or 1)
        tools = tool_dicts(req.tools) if req.tool_choice != "none" else None
        named = isinstance(req.tool_choice, dict)
        self.states = [
            ChoiceState(
                services,
                open_output(services.parsers, tools, rendered.text,
                            max_calls=1 if req.parallel_tool_calls is False else None),
                TokenTimer(services.metrics, self.start),
                want_logprobs=bool(req.logprobs),
                named_tool=named,
            )
            for _ in self.params
        ]

    def chunk(self, index: int, delta: ChatDelta, *, finish_reason: str | None = None, logprobs=None):
        choice = ChunkChoice(index=index, delta=delta, logprobs=logprobs, finish_reason=finish_reason)
        return ChatCompletionChunk(id=self.id, created=self.created, model=self.services.model_name, choices=[choice])

    def usage(self) -> Usage:
        completion = sum(state.num_tokens for state in self.states)
        prompt = len(self.prompt_token_ids)
        cached = max(state.num_cached_tokens for state in self.states)
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            prompt_tokens_details=PromptTokensDetails(cached_tokens=cached),
        )

    def events(self):
        self.services.metrics.prompt_tokens.inc(len(self.prompt_token_ids))
        return fan_out(self.services.pool, self.id, [(self.prompt_token_ids, p) for p in self.params])


async def chat_completions(request: web.Request) -> web.StreamResponse:
    services = request.app[SERVICES]
    req = await read_body(request, ChatCompletionRequest)
    check_model(services, req.model)
    call = ChatCall(services, req)
    await check_constraint(services, call.constraint)
    with admit(services, len(call.params)):
        if req.stream:
            return await _stream(request, call)
        return await _complete(call)


async def _complete(call: ChatCall) -> web.Response:
    await drain(call.services, call.events(), lambda index, out: call.states[index].absorb(out))
    choices = [
        ChatChoice(index=i, message=s.builder.message(), logprobs=s.chat_logprobs(), finish_reason=s.finish_reason)
        for i, s in enumerate(call.states)
    ]
    body = ChatCompletion(
        id=call.id, created=call.created, model=call.services.model_name, choices=choices, usage=call.usage()
    )
    return web.Response(body=_ENCODER.encode(body), content_type="application/json")


async def _stream(request: web.Request, call: ChatCall) -> web.StreamResponse:
    sse = SseWriter(request)
    await sse.open()
    field = call.services.settings.reasoning_field
    events = call.events()
    try:
        await sse.send_many([call.chunk(i, ChatDelta(role="assistant", content="")) for i in range(len(call.states))])
        async for index, out in events:
            state = call.states[index]
            parts, entries = state.absorb(out)
            chunks = []
            if parts or entries:
                chunks.append(call.chunk(index, parts.to_delta(field), logprobs=state.chat_logprobs(entries)))
            if state.finish_reason is not None:
                chunks.append(call.chunk(index, ChatDelta(), finish_reason=state.finish_reason))
            await sse.send_many(chunks)
        if call.req.stream_options is not None and call.req.stream_options.include_usage:
            usage_chunk = ChatCompletionChunk(
                id=call.id, created=call.created, model=call.services.model_name, choices=[], usage=call.usage()
            )
            await sse.send(usage_chunk)
        await sse.done()
    except ConnectionResetError:
        pass  # the client left: closing `events` below aborts its engine requests
    except EngineUnavailable as exc:
        await sse.error(unavailable(call.services, exc))
    except ApiError as exc:
        await sse.error(exc)
    except ValueError as exc:
        await sse.error(from_value_error(exc))
    except Exception:
        log.exception("chat stream %s failed", call.id)
        await sse.error(ApiError(500, "Internal server error", type="internal_error", code="internal_error"))
    finally:
        await events.aclose()
    return sse.response
