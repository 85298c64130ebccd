"""Turns the core's token outputs into text deltas: detokenization and stop strings, per request.

Runs on the client side of the engine (the gateway process or the offline API), so the
core process only ever handles token ids. A stop string ends the request here; the
caller then aborts it in the core.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.detokenizer import IncrementalDetokenizer
from engine.outputs import RequestOutput
from engine.stop_strings import StopStringMatcher
from schemas.engine import EngineOutput, SamplingParams


@dataclass(slots=True)
class _RequestState:
    prompt_token_ids: list[int]
    detokenizer: IncrementalDetokenizer
    stops: StopStringMatcher | None


class OutputProcessor:
    """Holds the detokenizer and stop matcher of every live request."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self._states: dict[str, _RequestState] = {}

    def add(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams) -> None:
        stops = StopStringMatcher(params.stop, params.include_stop_str_in_output) if params.stop else None
        detok = IncrementalDetokenizer(self.tokenizer, prompt_token_ids, params.skip_special_tokens)
        self._states[request_id] = _RequestState(prompt_token_ids, detok, stops)

    def remove(self, request_id: str) -> None:
        self._states.pop(request_id, None)

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._states

    def process(self, out: EngineOutput) -> tuple[RequestOutput, bool]:
        """Returns (the delta, whether a stop string ended it here so the core must abort)."""
        state = self._states[out.request_id]
        delta = RequestOutput(out.request_id, state.prompt_token_ids, num_cached_tokens=out.num_cached_tokens,
                              prompt_logprobs=out.prompt_logprobs, num_draft_tokens=out.num_draft_tokens,
                              num_accepted_tokens=out.num_accepted_tokens)  # fmt: skip
        finished = out.finish_reason is not None
        texts = []
        stopped_here = False
        for i, token_id in enumerate(out.new_token_ids):
            last = finished and i == len(out.new_token_ids) - 1
            stop_token = last and out.stop_reason is not None  # a stop token's text is not output
            text = "" if stop_token else state.detokenizer.add(token_id)
            if last:
                text += state.detokenizer.flush()
            if state.stops is not None:
                text, hit = state.stops.feed(text)
                if hit is not None:
                    texts.append(text)
                    delta.token_ids = out.new_token_ids[: i + 1]
                    delta.logprobs = out.new_logprobs[: i + 1] if out.new_logprobs else None
                    delta.finished, delta.finish_reason, delta.stop_reason = True, "stop", hit
                    stopped_here = not finished
                    break
                if last:
                    text += state.stops.flush()
            texts.append(text)
        else:
            delta.token_ids = list(out.new_token_ids)
            delta.logprobs = out.new_logprobs
            delta.finished, delta.finish_reason, delta.stop_reason = finished, out.finish_reason, out.stop_reason
            delta.error = out.error
        delta.structured_violation = out.structured_violation
        delta.text = "".join(texts)
        if delta.finished:
            self.remove(out.request_id)
        return delta, stopped_here
