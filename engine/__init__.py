"""The inference engine: scheduler, KV cache, model runner, sampler, models, loader. Knows no HTTP."""

from engine.async_llm import AsyncLLM, EngineDeadError
from engine.config import EngineConfig
from engine.llm import LLM
from engine.outputs import RequestOutput
from schemas.engine import SamplingParams, StructuredSpec, TokenLogprob

__all__ = ["AsyncLLM", "EngineDeadError", "LLM", "EngineConfig", "RequestOutput", "SamplingParams", "StructuredSpec", "TokenLogprob"]
