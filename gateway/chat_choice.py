"""One chat choice as it streams: output parsing, logprobs, token counts and its finish reason."""

from __future__ import annotations

from typing import Any

from gateway.chat_output import DeltaParts, MessageBuilder, OutputStream
from gateway.engine_pool import EngineUnavailable
from gateway.metrics import TokenTimer
from gateway.state import Services
from schemas.openai import ChatLogprobs, ChatTokenLogprob, TopLogprob


def token_logprob_entries(services: Services, logprobs: list[Any]) -> list[ChatTokenLogprob]:
    """Engine TokenLogprobs as OpenAI chat logprob entries (token text, bytes, top alternatives)."""
    entries = []
    for item in logprobs:
        text = services.token_text(item.token_id)
        top = [
            TopLogprob(token=(t := services.token_text(tid)), logprob=lp, bytes=list(t.encode()))
            for tid, lp in zip(item.top_token_ids, item.top_logprobs)
        ]
        entries.append(ChatTokenLogprob(token=text, logprob=item.logprob, bytes=list(text.encode()), top_logprobs=top))
    return entries


class ChoiceState:
    """Created per choice by the chat route; `absorb` is called with each engine delta output."""

    def __init__(self, services: Services, stream: OutputStream, timer: TokenTimer,
                 *, want_logprobs: bool, named_tool: bool) -> None:
        self.services = services
        self.stream = stream
        self.timer = timer
        self.want_logprobs = want_logprobs
        self.named_tool = named_tool
        self.builder = MessageBuilder(services.settings.reasoning_field)
        self.logprobs: list[ChatTokenLogprob] = []
        self.num_tokens = 0
        self.num_cached_tokens = 0
        self.finish_reason: str | None = None
        self.stop_reason: int | str | None = None  # the engine's: the stop string or token id that ended it
        self.violation: str | None = None  # lenient structured output: how the document breaks its schema

    def absorb(self, out: Any) -> tuple[DeltaParts, list[ChatTokenLogprob] | None]:
        """The parts and logprob entries this output adds; sets `finish_reason` when it ends."""
        self.timer.tick(len(out.token_ids))
        self.num_tokens += len(out.token_ids)
        self.num_cached_tokens = max(self.num_cached_tokens, out.num_cached_tokens)
        # the token ids go along: a marker whose control token was skipped has no text
        parts = self.stream.feed(out.text, out.token_ids) if out.text or out.token_ids else DeltaParts()
        if out.finished:
            parts.extend(self.stream.close())
        self.builder.add(parts)
        entries = None
        if self.want_logprobs and out.logprobs:
            entries = token_logprob_entries(self.services, out.logprobs)
            self.logprobs.extend(entries)
        if out.finished:
            self.finish_reason = self._finish_reason(out.finish_reason)
            self.stop_reason = getattr(out, "stop_reason", None)
            self.violation = getattr(out, "structured_violation", None)
        return parts, entries

    def _finish_reason(self, engine_reason: str | None) -> str:
        if engine_reason in ("abort", "error"):
            raise EngineUnavailable(f"the engine ended the request ({engine_reason})")
        if engine_reason == "length":
            return "length"
        if self.stream.num_tool_calls and not self.named_tool:
            return "tool_calls"
        return "stop"

    def chat_logprobs(self, entries: list[ChatTokenLogprob] | None = None) -> ChatLogprobs | None:
        if not self.want_logprobs:
            return None
        return ChatLogprobs(content=self.logprobs if entries is None else entries)
