"""GET /openapi.json: an OpenAPI 3.1 description of every route the app serves, bodies generated from the msgspec types."""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass
from typing import Any

import msgspec
from aiohttp import web

from gateway.auth import METRICS_PATHS, OPEN_PATHS
from gateway.state import SERVICES
from schemas.openai import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    Completion,
    CompletionRequest,
    DetokenizeRequest,
    ErrorBody,
    ModelCard,
    ModelList,
    TokenizeRequest,
)
from schemas.anthropic import (
    CountTokensRequest,
    CountTokensResponse,
    ErrorEvent,
    Message,
    MessagesRequest,
    StreamEvent,
)
from schemas.openai_responses import InputItemList, Response, ResponseDeleted, ResponsesRequest, ResponseStreamEvent
from schemas.openai_embeddings import EmbeddingRequest, EmbeddingResponse
from schemas.openai_server import DetokenizeResponse, HealthResponse, ProfileResponse, TokenizeResponse

_REF = "#/components/schemas/{name}"
_SPEC = web.AppKey("openapi_spec", dict)  # filled on the first request (the router is final by then)


@dataclass(frozen=True, slots=True)
class Operation:
    """One route: its request body type, its JSON reply type, and the SSE chunk type when it streams."""

    summary: str
    request: type | None = None
    response: type | None = None
    stream: type | None = None
    media_type: str = "application/json"
    error: type = ErrorBody  # the API's error body (Anthropic's on /v1/messages)


OPERATIONS: dict[tuple[str, str], Operation] = {
    ("POST", "/v1/chat/completions"): Operation("Chat completion (stream: true answers with SSE chunks)",
                                                ChatCompletionRequest, ChatCompletion, ChatCompletionChunk),
    ("POST", "/v1/completions"): Operation("Text completion (stream: true answers with SSE chunks)",
                                           CompletionRequest, Completion, Completion),
    ("POST", "/v1/responses"): Operation("Responses API: a response (stream: true answers with SSE events)",
                                         ResponsesRequest, Response, ResponseStreamEvent),
    ("GET", "/v1/responses/{response_id}"): Operation("A stored response", None, Response),
    ("DELETE", "/v1/responses/{response_id}"): Operation("Delete a stored response", None, ResponseDeleted),
    ("GET", "/v1/responses/{response_id}/input_items"): Operation("A stored response's input items", None,
                                                                  InputItemList),
    ("POST", "/v1/messages"): Operation("Anthropic Messages API (stream: true answers with SSE events)",
                                        MessagesRequest, Message, StreamEvent, error=ErrorEvent),
    ("POST", "/v1/messages/count_tokens"): Operation("Anthropic Messages API: the prompt's token count",
                                                     CountTokensRequest, CountTokensResponse, error=ErrorEvent),
    ("POST", "/v1/embeddings"): Operation("Embeddings of strings or token ids", EmbeddingRequest, EmbeddingResponse),
    ("GET", "/v1/models"): Operation("The served models (chat and embedding)", None, ModelList),
    ("GET", "/v1/models/{model_id}"): Operation("One served model", None, ModelCard),
    ("GET", "/health"): Operation("Liveness: 200 while an engine core is alive, else 503", None, HealthResponse),
    ("GET", "/metrics"): Operation("Prometheus metrics", None, str, media_type="text/plain"),
    ("POST", "/tokenize"): Operation("Token ids of a prompt or of chat messages", TokenizeRequest, TokenizeResponse),
    ("POST", "/detokenize"): Operation("Text of token ids", DetokenizeRequest, DetokenizeResponse),
    ("POST", "/start_profile"): Operation("Start torch's profiler in every engine core", None, ProfileResponse),
    ("POST", "/stop_profile"): Operation("Stop the profiler; one Chrome trace per core", None, ProfileResponse),
    ("GET", "/openapi.json"): Operation("This description", None, dict),
}  # fmt: skip


def _types() -> list[type]:
    found = [ErrorBody]
    for op in OPERATIONS.values():
        found += [t for t in (op.request, op.response, op.stream, op.error) if _is_typed(t)]
    return list(dict.fromkeys(found))


def _is_typed(t: Any) -> bool:
    """A msgspec Struct or a union of them (a stream's events), as opposed to str, dict or None."""
    return (isinstance(t, type) and issubclass(t, msgspec.Struct)) or typing.get_origin(t) in (typing.Union, types.UnionType)


def _content(schema: dict[str, Any], op: Operation) -> dict[str, Any]:
    return {op.media_type: {"schema": schema}}


def _operation(method: str, path: str, op: Operation | None, refs: dict[type, dict], handler: Any) -> dict[str, Any]:
    if op is None:  # a route without a typed entry: described by its handler, no body
        summary = ((handler.__doc__ or "").strip().splitlines() or [f"{method} {path}"])[0]
        op = Operation(summary)
    out: dict[str, Any] = {"summary": op.summary, "operationId": _operation_id(method, path)}
    params = re.findall(r"{([^}:]+)", path)
    if params:
        out["parameters"] = [{"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in params]
    if op.request is not None and method != "HEAD":
        out["requestBody"] = {"required": True, "content": {"application/json": {"schema": refs[op.request]}}}
    ok: dict[str, Any] = {"description": "OK"}
    if op.response is not None and method != "HEAD":
        ok["content"] = _content(refs.get(op.response) or msgspec.json.schema(op.response), op)
        if op.stream is not None:
            ok["content"]["text/event-stream"] = {"schema": refs[op.stream]}
    error = {"description": "An error body", "content": {"application/json": {"schema": refs[op.error]}}}
    out["responses"] = {"200": ok, "4XX": error, "5XX": error}
    return out


def _operation_id(method: str, path: str) -> str:
    return method.lower() + "_" + (re.sub(r"[^a-zA-Z0-9]+", "_", path).strip("_") or "root")


def build_spec(app: web.Application) -> dict[str, Any]:
    """The description of `app`'s routes (all of them, typed where OPERATIONS knows the route)."""
    schemas, components = msgspec.json.schema_components(_types(), ref_template=_REF)
    refs = dict(zip(_types(), schemas))
    settings = app[SERVICES].settings
    open_paths = [p for p in OPEN_PATHS if not (settings.protect_metrics and p in METRICS_PATHS)]
    paths: dict[str, dict[str, Any]] = {}
    for route in app.router.routes():
        path = _path(route.resource.get_info() if route.resource is not None else {})
        if not path or route.method == "*":
            continue
        key = "GET" if route.method == "HEAD" else route.method
        operation = _operation(route.method, path, OPERATIONS.get((key, path)), refs, route.handler)
        if settings.api_keys and path in open_paths:
            operation["security"] = []
        paths.setdefault(path, {})[route.method.lower()] = operation
    spec: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "agent-gateway", "version": _version(),
                 "description": "OpenAI-compatible server over its own inference engine"},
        "paths": paths,
        "components": {"schemas": components},
    }  # fmt: skip
    if settings.api_keys:
        spec["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        spec["security"] = [{"bearer": []}]
    return spec


def _path(info: dict[str, Any]) -> str | None:
    """A resource's path in OpenAPI's template syntax (`{name}`, without aiohttp's regular expressions)."""
    if "path" in info:
        return info["path"]
    if "formatter" in info:
        return re.sub(r"{([^}:]+):[^}]*}", r"{\1}", info["formatter"])
    if "prefix" in info:  # static files
        return info["prefix"].rstrip("/") + "/{filename}"
    return None


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("agent-gateway")
    except importlib.metadata.PackageNotFoundError:
        return "0"


async def openapi_json(request: web.Request) -> web.Response:
    """This server's OpenAPI description."""
    cache = request.app[_SPEC]
    if not cache:
        cache.update(build_spec(request.app))
    return web.json_response(cache)


def add_routes(app: web.Application) -> None:
    app[_SPEC] = {}
    app.router.add_get("/openapi.json", openapi_json)
