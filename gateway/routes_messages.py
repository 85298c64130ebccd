"""POST /v1/messages (Anthropic's Messages API, whole and streamed) and POST /v1/messages/count_tokens.
Errors on these routes take Anthropic's shape (errors.py) and `x-api-key` is accepted (auth.py)."""

from __future__ import annotations

import msgspec
from aiohttp import web

from gateway.errors import renamed_params
from gateway.generation import check_model, read_body, respond
from gateway.messages_api import PARAM_NAMES, chat_request
from gateway.messages_output import MessagesCall
from gateway.state import SERVICES
from schemas.anthropic import CountTokensRequest, CountTokensResponse, MessagesRequest

_ENCODER = msgspec.json.Encoder()


async def create_message(request: web.Request) -> web.StreamResponse:
    services = request.app[SERVICES]
    req = await read_body(request, MessagesRequest)
    check_model(services, req.model)
    call = MessagesCall(services, req)
    return await respond(request, services, call, call.sse(request))


async def count_tokens(request: web.Request) -> web.Response:
    """The prompt's token count for a Messages request, rendered as /v1/messages would render it."""
    services = request.app[SERVICES]
    req = await read_body(request, CountTokensRequest)
    check_model(services, req.model)
    with renamed_params(PARAM_NAMES):
        chat = chat_request(req)
        rendered = services.renderer.render(chat.messages, tools=chat.tools, template_kwargs=chat.chat_template_kwargs)
    body = CountTokensResponse(input_tokens=len(rendered.token_ids))
    return web.Response(body=_ENCODER.encode(body), content_type="application/json")


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/messages", create_message)
    app.router.add_post("/v1/messages/count_tokens", count_tokens)
