"""POST /v1/chat/completions: streaming (SSE chunks) and non-streaming chat replies."""

from __future__ import annotations

import time
import uuid

from aiohttp import web

from gateway.chat_choice import ChoiceState
from gateway.chat_output import open_output
from gateway.chat_template import tool_dicts
from gateway.errors import bad_request
from gateway.generation import Events, check_model, read_body, respond
from gateway.metrics import TokenTimer
from gateway.request_mapping import check_tool_choice, choice_params, sampling_params
from gateway.sse import SseWriter
from gateway.state import SERVICES, Services
from gateway.structured_request import request_constraint
from gateway.tool_constraint import tool_call_spec
from schemas.output_constraints import NamedToolChoice
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


class ChatCall:
    """One chat request after validation: its prompt, per-choice params and states."""

    def __init__(self, services: Services, req: ChatCompletionRequest) -> None:
        self.services = services
        self.req = req
        self.start = time.perf_counter()
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
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
        params = sampling_params(req, structured=self.constraint.spec if self.constraint else None)
        self.params = choice_params(params, req.n or 1)
        self.jobs = [(self.prompt_token_ids, p) for p in self.params]
        self.num_prompt_tokens = len(self.prompt_token_ids)
        self.streaming = bool(req.stream)
        max_name = "max_completion_tokens" if req.max_completion_tokens is not None else "max_tokens"
        self.names = {"prompt": "messages", "max_tokens": max_name, "logprobs": "top_logprobs"}
        if self.constraint is not None:
            self.names["structured"] = self.constraint.param
        tools = tool_dicts(req.tools) if req.tool_choice != "none" else None
        named = isinstance(req.tool_choice, NamedToolChoice)
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

    def chunk(self, index: int, delta: ChatDelta, *, finish_reason: str | None = None, logprobs=None,
              violation: str | None = None):
        choice = ChunkChoice(index=index, delta=delta, logprobs=logprobs, finish_reason=finish_reason,
                             **_violation(violation))
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

    def absorb(self, index: int, out) -> None:
        self.states[index].absorb(out)

    def body(self) -> ChatCompletion:
        choices = [
            ChatChoice(index=i, message=s.builder.message(), logprobs=s.chat_logprobs(), finish_reason=s.finish_reason,
                       **_violation(s.violation))
            for i, s in enumerate(self.states)
        ]
        return ChatCompletion(id=self.id, created=self.created, model=self.services.model_name, choices=choices,
                              usage=self.usage())  # fmt: skip

    async def write_stream(self, sse: SseWriter, events: Events) -> None:
        field = self.services.settings.reasoning_field
        await sse.send_many([self.chunk(i, ChatDelta(role="assistant", content="")) for i in range(len(self.states))])
        async for index, out in events:
            state = self.states[index]
            parts, entries = state.absorb(out)
            chunks = []
            if parts or entries:
                chunks.append(self.chunk(index, parts.to_delta(field), logprobs=state.chat_logprobs(entries)))
            if state.finish_reason is not None:
                chunks.append(self.chunk(index, ChatDelta(), finish_reason=state.finish_reason, violation=state.violation))
            await sse.send_many(chunks)
        if self.req.stream_options is not None and self.req.stream_options.include_usage:
            await sse.send(ChatCompletionChunk(id=self.id, created=self.created, model=self.services.model_name,
                                               choices=[], usage=self.usage()))  # fmt: skip


async def chat_completions(request: web.Request) -> web.StreamResponse:
    services = request.app[SERVICES]
    req = await read_body(request, ChatCompletionRequest)
    check_model(services, req.model)
    return await respond(request, services, ChatCall(services, req))


def _violation(text: str | None) -> dict[str, str]:
    """The choice's `structured_output_violation` (lenient structured output), present only when set."""
    return {"structured_output_violation": text} if text else {}
