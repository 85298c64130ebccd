"""POST /v1/embeddings: inputs (text or token ids) -> the embedding model's vectors, as floats or base64."""

from __future__ import annotations

import base64
import time
import uuid

import msgspec
import numpy as np
from aiohttp import web

from gateway.errors import ApiError, bad_request, from_value_error
from gateway.generation import read_body
from gateway.state import SERVICES, Services
from schemas.openai_embeddings import EmbeddingData, EmbeddingRequest, EmbeddingResponse, EmbeddingUsage

_ENCODER = msgspec.json.Encoder()
_INPUT_FORMS = "a string, a list of strings, a list of token ids, or a list of token-id lists"


def _embedder(services: Services, model: str | None):
    embedder = services.embedder
    if embedder is None:
        raise ApiError(404, "This server serves no embedding model (start it with --embedding-model)",
                       type="not_found_error", param="model", code="model_not_found")  # fmt: skip
    if model and model not in (embedder.info.name, embedder.info.path):
        if model == services.model_name:
            raise bad_request(f"The model `{model}` is a chat model; embeddings come from `{embedder.info.name}`",
                              "model")  # fmt: skip
        raise ApiError(404, f"The model `{model}` does not exist. Embeddings come from `{embedder.info.name}`.",
                       param="model", code="model_not_found")  # fmt: skip
    return embedder


def _is_ids(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(type(t) is int for t in value)


def _inputs(embedder, req: EmbeddingRequest) -> list[list[int]]:
    """The request's inputs as token-id lists, truncated to `truncate_prompt_tokens` when asked."""
    raw = req.input
    limit = embedder.info.max_seq_len
    truncate = req.truncate_prompt_tokens
    if truncate is not None:
        if truncate == -1:
            truncate = limit
        if not 1 <= truncate <= limit:
            raise bad_request(f"truncate_prompt_tokens must be -1 or in [1, {limit}], got {truncate}",
                              "truncate_prompt_tokens")  # fmt: skip
    texts = [raw] if isinstance(raw, str) else raw
    if texts and all(isinstance(t, str) for t in texts):
        if any(t == "" for t in texts):
            raise bad_request("input must not hold an empty string", "input")
        return embedder.tokenize(texts, truncate)
    ids = [raw] if _is_ids(raw) else raw
    if not ids or not all(_is_ids(item) for item in ids):
        raise bad_request(f"input must be {_INPUT_FORMS} (none empty)", "input")
    return [item[:truncate] for item in ids] if truncate else ids


def _dimensions(info, requested: int | None) -> int | None:
    """None (keep every dimension) or the size to cut to; a size the model cannot give is a 400."""
    if requested is None or requested == info.dimensions:
        return None
    if info.matryoshka_dimensions and requested in info.matryoshka_dimensions:
        return requested
    sizes = f"one of {info.matryoshka_dimensions}" if info.matryoshka_dimensions else f"{info.dimensions} only"
    raise bad_request(f"dimensions: {info.name} cannot give {requested} dimensions ({sizes})", "dimensions")


def _encode(vectors: np.ndarray, encoding_format: str) -> list:
    if encoding_format == "base64":
        rows = vectors.astype("<f4", copy=False)
        return [base64.b64encode(row.tobytes()).decode("ascii") for row in rows]
    return vectors.tolist()


async def embeddings(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    req = await read_body(request, EmbeddingRequest)
    embedder = _embedder(services, req.model)
    encoding_format = req.encoding_format or "float"
    if encoding_format not in ("float", "base64"):
        raise bad_request(f"encoding_format must be float or base64, got {encoding_format!r}", "encoding_format")
    size = _dimensions(embedder.info, req.dimensions)
    inputs = _inputs(embedder, req)
    request_id = f"embd-{uuid.uuid4().hex}"
    try:
        embedder.validate(inputs)
        vectors = await embedder.embed(request_id, inputs)
    except ValueError as exc:
        raise from_value_error(exc) from None
    except RuntimeError as exc:  # the encoder died or a batch failed
        raise ApiError(503, f"The embedding model is unavailable: {exc}", type="service_unavailable",
                       code="engine_unavailable", headers={"Retry-After": str(services.settings.retry_after_s)})  # fmt: skip
    if size is not None:
        vectors = vectors[:, :size]
        if embedder.info.normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    num_tokens = sum(len(ids) for ids in inputs)
    body = EmbeddingResponse(
        id=request_id,
        created=int(time.time()),
        model=embedder.info.name,
        data=[EmbeddingData(index=i, embedding=e) for i, e in enumerate(_encode(vectors, encoding_format))],
        usage=EmbeddingUsage(prompt_tokens=num_tokens, total_tokens=num_tokens),
    )
    return web.Response(body=_ENCODER.encode(body), content_type="application/json")


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/embeddings", embeddings)
