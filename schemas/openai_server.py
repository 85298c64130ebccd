"""Wire types of the server's own routes beside OpenAI's: health, tokenize, detokenize, profiling."""

from __future__ import annotations

import msgspec


class ReplicaHealth(msgspec.Struct, kw_only=True):
    """One engine replica (a local core or a Ray actor) as /health shows it."""

    replica: int
    node: str  # "local", or the Ray node's address/id where the actor runs
    state: str  # "ok" | "dead" | "restarting" | "draining"
    inflight: int
    load_tokens: int  # uncached prompt + generated tokens of its requests in flight (what routing compares)
    running: int
    waiting: int
    kv_usage: float
    num_free_blocks: int
    num_total_blocks: int
    prefix_hit_rate: float
    failovers: int  # requests moved to another replica after this one died before their first token


class HealthResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    status: str  # "ok" or "unavailable"
    engines_alive: int
    engines: int
    embedding: str | None = None  # "ok" / "unavailable"; absent when no embedding model is served
    replicas: list[ReplicaHealth] | None = None
    scaling: str | None = None  # the last reason autoscaling could not add a replica (absent when none)


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
