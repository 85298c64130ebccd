"""Embedding-process message types: what crosses between an embedding client and its encoder process."""

from __future__ import annotations

import msgspec


class EmbeddingModelInfo(msgspec.Struct, frozen=True, kw_only=True):
    """Facts about the loaded encoder that the gateway needs (validation, /v1/models, `dimensions`)."""

    name: str
    path: str
    dimensions: int
    max_seq_len: int  # inputs longer than this many tokens are refused (or truncated on request)
    vocab_size: int
    pooling: str  # "mean" | "cls" | "max" | "mean_sqrt_len" | "lasttoken"
    normalize: bool
    matryoshka_dimensions: list[int] | None = None  # sizes the model may be truncated to; None: none


# --- client -> encoder ----------------------------------------------------------------------


class EmbedRequest(msgspec.Struct, tag="embed"):
    """One HTTP request's inputs, already tokenized and validated; answered by one EmbedResult."""

    request_id: str
    inputs: list[list[int]]


class AbortEmbed(msgspec.Struct, tag="abort"):
    request_id: str


class StopEncoder(msgspec.Struct, tag="stop"):
    pass


EncoderInbound = EmbedRequest | AbortEmbed | StopEncoder


# --- encoder -> client ----------------------------------------------------------------------


class EmbedResult(msgspec.Struct, tag="result"):
    """The vectors of every input of one request, in order: little-endian float32, row-major."""

    request_id: str
    vectors: bytes
    num_inputs: int


class EncoderReady(msgspec.Struct, tag="ready"):
    info: EmbeddingModelInfo


class EncoderFailed(msgspec.Struct, tag="failed"):
    """The encoder could not load (bad path, unsupported architecture) or one batch failed."""

    message: str
    request_id: str | None = None


EncoderOutbound = EmbedResult | EncoderReady | EncoderFailed
