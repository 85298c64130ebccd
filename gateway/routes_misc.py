"""Small routes: models, health, metrics, tokenize/detokenize."""

from __future__ import annotations

import msgspec
from aiohttp import web

from gateway.errors import bad_request
from gateway.generation import check_model, read_body
from gateway.metrics import CONTENT_TYPE
from gateway.state import SERVICES, Services
from schemas.openai import DetokenizeRequest, ModelCard, ModelList, TokenizeRequest
from schemas.openai_server import DetokenizeResponse, HealthResponse, ReplicaHealth, TokenizeResponse

_ENCODER = msgspec.json.Encoder()


def _json(obj: object, status: int = 200) -> web.Response:
    return web.Response(body=_ENCODER.encode(obj), status=status, content_type="application/json")


def _card(services: Services) -> ModelCard:
    info = services.pool.model_info
    return ModelCard(id=services.model_name, created=services.created, max_model_len=info.max_model_len,
                     root=str(info.path) if info.path is not None else None)


def _embedding_card(services: Services) -> ModelCard | None:
    embedder = services.embedder
    if embedder is None:
        return None
    info = embedder.info
    return ModelCard(id=info.name, created=services.created, max_model_len=info.max_seq_len, root=info.path)


async def list_models(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    cards = [_card(services), _embedding_card(services)]
    return _json(ModelList(data=[card for card in cards if card is not None]))


async def get_model(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    model_id = request.match_info["model_id"]
    embedding = _embedding_card(services)
    if embedding is not None and model_id in (embedding.id, embedding.root):
        return _json(embedding)
    check_model(services, model_id)
    return _json(_card(services))


async def health(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    pool = services.pool
    status = 200 if pool.num_alive > 0 else 503
    embedding = None
    if services.embedder is not None:
        embedding = "ok" if services.embedder.is_alive else "unavailable"
    replicas = [ReplicaHealth(**row) for row in pool.replicas()]
    body = HealthResponse(status="ok" if status == 200 else "unavailable", engines_alive=pool.num_alive,
                          engines=pool.size, embedding=embedding, replicas=replicas,
                          scaling=pool.scaling_problem)  # fmt: skip
    return _json(body, status)


async def metrics(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    body = services.metrics.render(services.pool)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def tokenize(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    req = await read_body(request, TokenizeRequest)
    check_model(services, req.model)
    if req.messages is not None:
        token_ids = services.renderer.render(
            req.messages,
            tools=req.tools,
            add_generation_prompt=req.add_generation_prompt,
            template_kwargs=req.chat_template_kwargs,
        ).token_ids
    elif req.prompt is not None:
        add_special = True if req.add_special_tokens is None else req.add_special_tokens
        token_ids = services.pool.tokenizer.encode(req.prompt, add_special_tokens=add_special)
    else:
        raise bad_request("either prompt or messages is required", "prompt")
    max_len = services.pool.model_info.max_model_len
    return _json(TokenizeResponse(tokens=token_ids, count=len(token_ids), max_model_len=max_len))


async def detokenize(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    req = await read_body(request, DetokenizeRequest)
    check_model(services, req.model)
    vocab_size = services.pool.model_info.vocab_size
    if any(not 0 <= t < vocab_size for t in req.tokens):
        raise bad_request("tokens holds an id outside the vocabulary", "tokens")
    return _json(DetokenizeResponse(prompt=services.pool.tokenizer.decode(req.tokens)))


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/v1/models/{model_id:.+}", get_model)
    app.router.add_get("/health", health)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/tokenize", tokenize)
    app.router.add_post("/detokenize", detokenize)
