"""Wire types of the server's own routes beside OpenAI's: health, tokenize, detokenize, profiling."""

from __future__ import annotations

import msgspec


class HealthResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    status: str  # "ok" or "unavailable"
    engines_alive: int
    engines: int
    embedding: str | None = None  # "ok" / "unavailable"; absent when no embedding model is served


class TokenizeResponse(msgspec.Struct, kw_only=True):
    tokens: list[int]
    count: int
    max_model_len: int


class DetokenizeResponse(msgspec.Struct, kw_only=True):
    prompt: str


class ProfileResponse(msgspec.Struct, kw_only=True):
    """What /start_profile and /stop_profile answer; `files` are the Chrome traces written, one per core."""

    status: str  # "started" or "stopped"
    files: list[str] = []
