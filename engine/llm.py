"""The offline Python API: `LLM(model).generate(prompts, params)`, run synchronously in-process."""

from __future__ import annotations

import itertools
from pathlib import Path
from dataclasses import fields

from engine.config import EngineConfig
from engine.core import EngineCore
from engine.output_processor import OutputProcessor
from engine.outputs import RequestOutput
from engine.tokenizer import load_tokenizer
from engine.validation import admit
from schemas.engine import EngineRequest, SamplingParams


class LLM:
    """Loads a model into an in-process engine core and generates for batches of prompts.

    `model` None is the embedded default model; keyword arguments are `EngineConfig` fields.
    """

    def __init__(self, model: str | None = None, **kwargs) -> None:
        known = {f.name for f in fields(EngineConfig)}
        unknown = set(kwargs) - known
        if unknown:
            raise ValueError(f"{sorted(unknown)[0]}: not an engine option (options: {sorted(known)})")
        self.config = EngineConfig(model=model, **kwargs)
        self.core = EngineCore(self.config)
        self.tokenizer = load_tokenizer(Path(self.core.info.path))
        self._ids = itertools.count()

    @property
    def info(self):
        return self.core.info

    def _prompt_ids(self, prompt: str | list[int]) -> list[int]:
        return list(prompt) if isinstance(prompt, list) else self.tokenizer.encode(prompt, add_special_tokens=False)

    def generate(
        self, prompts: str | list[int] | list[str | list[int]], params: SamplingParams | list[SamplingParams] | None = None
    ) -> list[RequestOutput]:
        """Generates for every prompt (a string or token ids); outputs in prompt order.

        Every prompt is validated, and every output constraint compiled, before any is
        scheduled: a bad one raises ValueError (grammar.GrammarError for a refused schema).
        """
        if isinstance(prompts, str) or (isinstance(prompts, list) and prompts and isinstance(prompts[0], int)):
            prompts = [prompts]
        params_list = params if isinstance(params, list) else [params or SamplingParams()] * len(prompts)
        if len(params_list) != len(prompts):
            raise ValueError("params: need one SamplingParams per prompt")
        prompt_ids = [self._prompt_ids(p) for p in prompts]
        for ids, p in zip(prompt_ids, params_list):
            admit(ids, p, self.core.limits)  # the core's own rules, checked for the whole batch first
            if p.structured is not None:  # compiled here first (same process: the core's compile is a cache hit)
                self.core.structured.check(p.structured)
        processor = OutputProcessor(self.tokenizer)
        results: dict[str, RequestOutput] = {}
        order = []
        for ids, p in zip(prompt_ids, params_list):
            request_id = f"offline-{next(self._ids)}"
            order.append(request_id)
            results[request_id] = RequestOutput(request_id, ids)
            processor.add(request_id, ids, p)
            self.core.add_request(EngineRequest(request_id=request_id, prompt_token_ids=ids, params=p))
        refused = self.core.take_admissions()[1]
        if refused:  # cannot happen after the checks above, unless a request id repeats
            raise ValueError(refused[0].error)
        while self.core.has_work():
            for out in self.core.step() + self.core.take_admissions()[1]:
                if out.request_id not in processor:
                    continue
                delta, stopped_here = processor.process(out)
                results[out.request_id].merge(delta)
                if stopped_here:
                    self.core.abort([out.request_id])
        return [results[r] for r in order]
