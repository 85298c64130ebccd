"""The inference engine: scheduler, KV cache, model runner, sampler, models, loader. Knows no HTTP."""

from engine.async_llm import AsyncLLM
from engine.client import EngineClient, EngineDeadError, RequestRefused, RequestStream
from engine.config import EngineConfig
from engine.llm import LLM
from engine.outputs import RequestOutput
from schemas.engine import (
    ChoiceSpec,
    GbnfSpec,
    JsonObjectSpec,
    JsonSchemaSpec,
    LarkSpec,
    RegexSpec,
    SamplingParams,
    StructuralTagSpec,
    StructuredSpec,
    TokenLogprob,
)

__all__ = ["AsyncLLM", "EngineClient", "EngineDeadError", "RequestRefused", "RequestStream", "LLM", "EngineConfig", "RequestOutput", "SamplingParams", "StructuredSpec", "TokenLogprob",
           "ChoiceSpec", "GbnfSpec", "JsonObjectSpec", "JsonSchemaSpec", "LarkSpec", "RegexSpec", "StructuralTagSpec"]
