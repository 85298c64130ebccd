"""POST /v1/responses (whole and streamed), GET / DELETE /v1/responses/{id}, GET .../input_items,
and the response store's lifetime (gateway/response_store.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
from aiohttp import web

from gateway.errors import ApiError, bad_request
from gateway.generation import check_model, read_body, respond
from gateway.response_store import ResponseStore
from gateway.responses_api import input_items
from gateway.responses_output import ResponsesCall
from gateway.state import SERVICES
from schemas.openai_responses import InputItem, InputItemList, ResponseDeleted, ResponsesRequest

STORE = web.AppKey("response_store", object)  # a ResponseStore, or None with --response-store none
_ENCODER = msgspec.json.Encoder()
_ITEMS = msgspec.json.Decoder(list[InputItem])


def _not_found(response_id: str, param: str | None = None) -> ApiError:
    return ApiError(404, f"Response with id '{response_id}' not found.", param=param, code="response_not_found",
                    type="invalid_request_error")  # fmt: skip


async def _history(store: ResponseStore | None, previous_id: str | None) -> list[InputItem]:
    """The conversation `previous_id` ends (its input and output after the ones before it)."""
    if previous_id is None:
        return []
    if store is None:
        raise bad_request("previous_response_id needs the response store (the server runs with "
                          "--response-store none)", "previous_response_id")  # fmt: skip
    stored = await store.get(previous_id)
    if stored is None:
        raise _not_found(previous_id, "previous_response_id")
    return _ITEMS.decode(stored.conversation)


async def create_response(request: web.Request) -> web.StreamResponse:
    services = request.app[SERVICES]
    store = request.app[STORE]
    req = await read_body(request, ResponsesRequest)
    check_model(services, req.model)
    items = input_items(req)
    call = ResponsesCall(services, req, await _history(store, req.previous_response_id), items, store)
    response = await respond(request, services, call, call.sse(request))
    if not call.streaming:
        await call.save(call.final)
    return response


async def _stored(request: web.Request):
    store = request.app[STORE]
    response_id = request.match_info["response_id"]
    stored = await store.get(response_id) if store is not None else None
    if stored is None:
        raise _not_found(response_id)
    return stored


async def get_response(request: web.Request) -> web.Response:
    """A stored response."""
    return web.Response(body=(await _stored(request)).response, content_type="application/json")


async def delete_response(request: web.Request) -> web.Response:
    """Deletes a stored response."""
    store = request.app[STORE]
    response_id = request.match_info["response_id"]
    if store is None or not await store.delete(response_id):
        raise _not_found(response_id)
    return web.Response(body=_ENCODER.encode(ResponseDeleted(id=response_id)), content_type="application/json")


async def list_input_items(request: web.Request) -> web.Response:
    """A stored response's input items (`limit` 1-100, default 20; `order` asc or desc, default desc; `after`)."""
    items = msgspec.json.decode((await _stored(request)).input)
    query = request.query
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise bad_request("order must be asc or desc", "order")
    try:
        limit = int(query.get("limit", "20"))
    except ValueError:
        raise bad_request("limit must be an integer", "limit") from None
    if not 1 <= limit <= 100:
        raise bad_request("limit must be in [1, 100]", "limit")
    if order == "desc":
        items.reverse()
    after = query.get("after")
    if after is not None:
        ids = [item.get("id") for item in items]
        if after not in ids:
            raise bad_request(f"after: no input item {after!r}", "after")
        items = items[ids.index(after) + 1:]
    page = items[:limit]
    body = InputItemList(data=page, first_id=page[0]["id"] if page else None, last_id=page[-1]["id"] if page else None,
                         has_more=len(items) > limit)  # fmt: skip
    return web.Response(body=_ENCODER.encode(body), content_type="application/json")


def _store_context(path: str, max_bytes: int, max_age_s: float | None):
    async def store_context(app: web.Application) -> AsyncIterator[None]:
        store = None
        if path != "none":
            store = ResponseStore(":memory:" if path == "memory" else path, max_bytes, max_age_s)
            await store.open()
        app[STORE] = store
        try:
            yield
        finally:
            if store is not None:
                await store.close()

    return store_context


def add_routes(app: web.Application) -> None:
    settings = app[SERVICES].settings
    max_bytes = int(settings.response_store_max_mb * 1024 * 1024)
    app.cleanup_ctx.append(_store_context(settings.response_store, max_bytes, settings.response_store_max_age_s))
    app.router.add_post("/v1/responses", create_response)
    app.router.add_get("/v1/responses/{response_id}", get_response)
    app.router.add_delete("/v1/responses/{response_id}", delete_response)
    app.router.add_get("/v1/responses/{response_id}/input_items", list_input_items)
