"""The gateway's settings and the per-app services handlers reach through one typed AppKey."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from gateway.parser_config import ParserConfig, resolve_parsers
from gateway.chat_template import ChatRenderer
from gateway.engine_pool import EnginePool
from gateway.metrics import GatewayMetrics

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    """Everything about the HTTP side; built once by the CLI (or a test)."""

    served_model_name: str | None = None  # None: the engine's model name
    api_keys: tuple[str, ...] = ()  # empty: no key needed
    protect_metrics: bool = False  # /health and /metrics need a key too
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    reasoning_field: str = "reasoning_content"  # or "reasoning" (vLLM >= 0.11 naming)
    parsers: ParserConfig = field(default_factory=ParserConfig)
    retry_after_s: int = 1
    profiler_dir: str | None = None  # None: no /start_profile and /stop_profile routes
    body_read_timeout_s: float | None = 30.0  # a body still arriving after this is a 408
    response_store: str = "memory"  # stored Responses: a SQLite file, "memory" or "none" (the CLI's default: a file)
    response_store_max_mb: float = 256.0  # the oldest stored responses go first past this size
    response_store_max_age_s: float | None = None  # ... and past this age


@dataclass(slots=True)
class Services:
    """Created by `create_app`; the pool and what depends on its tokenizer are filled at startup."""

    settings: GatewaySettings
    metrics: GatewayMetrics
    _pool: EnginePool | None = None
    _renderer: ChatRenderer | None = None
    embedder: Any = None  # an engine.embedding.AsyncEmbedder when an embedding model is served
    parsers: ParserConfig = field(default_factory=ParserConfig)
    model_name: str = ""
    created: int = field(default_factory=lambda: int(time.time()))
    token_text_cache: dict[int, str] = field(default_factory=dict)
    draining: bool = False  # set on SIGINT/SIGTERM: new requests are refused while those in flight finish

    def attach(self, pool: EnginePool, embedder: Any = None) -> None:
        self._pool = pool
        self.embedder = embedder
        self.parsers = resolve_parsers(self.settings.parsers, pool.tokenizer)
        self._renderer = ChatRenderer(pool.tokenizer, self.parsers.tool_parser)
        self.model_name = self.settings.served_model_name or pool.model_info.name

    @property
    def has_pool(self) -> bool:
        return self._pool is not None

    @property
    def pool(self) -> EnginePool:
        if self._pool is None:
            raise RuntimeError("the engine pool is not started")
        return self._pool

    @property
    def renderer(self) -> ChatRenderer:
        if self._renderer is None:
            raise RuntimeError("the engine pool is not started")
        return self._renderer

    def token_text(self, token_id: int) -> str:
        """The text of one token, as logprobs show it (cached: the vocabulary is fixed)."""
        text = self.token_text_cache.get(token_id)
        if text is None:
            text = self.pool.tokenizer.decode([token_id], skip_special_tokens=False)
            self.token_text_cache[token_id] = text
        return text


SERVICES = web.AppKey("services", Services)
