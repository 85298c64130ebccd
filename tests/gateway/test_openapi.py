"""/openapi.json: a valid OpenAPI 3.1 document naming every served route, whose schemas the real replies satisfy."""

from __future__ import annotations

import re

import jsonschema
import pytest
from openapi_spec_validator import validate

from gateway.state import GatewaySettings
from tests.gateway.sse_helpers import read_events, read_named_events


async def _spec(client) -> dict:
    resp = await client.get("/openapi.json")
    assert resp.status == 200
    return await resp.json()


def _served(client) -> set[tuple[str, str]]:
    routes = set()
    for route in client.server.app.router.routes():
        info = route.resource.get_info()
        path = info.get("path") or re.sub(r"{([^}:]+):[^}]*}", r"{\1}", info["formatter"])
        routes.add((route.method.lower(), path))
    return routes


def _check(spec: dict, name: str, instance: object) -> None:
    jsonschema.Draft202012Validator({"$ref": f"#/components/schemas/{name}", **spec}).validate(instance)


@pytest.mark.parametrize("settings", [GatewaySettings(), GatewaySettings(api_keys=("k",), profiler_dir="/tmp")])
async def test_valid_and_complete(make_client, tiny_bert_dir, settings):
    client = await make_client(settings, embedding_model=tiny_bert_dir)
    spec = await _spec(client)
    validate(spec)  # raises on an invalid OpenAPI document
    described = {(method, path) for path, ops in spec["paths"].items() for method in ops}
    assert _served(client) <= described
    assert described <= _served(client)
    for path, ops in spec["paths"].items():
        if "post" in ops and path not in ("/start_profile", "/stop_profile"):
            assert "$ref" in ops["post"]["requestBody"]["content"]["application/json"]["schema"], path
        error = "ErrorEvent" if path.startswith("/v1/messages") else "ErrorBody"  # Anthropic's shape there
        for op in ops.values():
            assert op["responses"]["4XX"]["content"]["application/json"]["schema"] == {"$ref": f"#/components/schemas/{error}"}
    chat = spec["paths"]["/v1/chat/completions"]["post"]
    assert set(chat["responses"]["200"]["content"]) == {"application/json", "text/event-stream"}
    assert ("/start_profile" in spec["paths"]) == bool(settings.profiler_dir)
    if settings.api_keys:
        assert spec["security"] == [{"bearer": []}] and spec["paths"]["/health"]["get"]["security"] == []
        assert "security" not in spec["paths"]["/v1/models"]["get"]


async def test_real_replies_match_their_schemas(make_client, tiny_bert_dir):
    client = await make_client(embedding_model=tiny_bert_dir)
    spec = await _spec(client)
    messages = [{"role": "user", "content": "hi"}]
    _check(spec, "ModelList", await (await client.get("/v1/models")).json())
    _check(spec, "HealthResponse", await (await client.get("/health")).json())
    _check(spec, "EmbeddingResponse", await (await client.post("/v1/embeddings", json={"input": ["a", "b"]})).json())
    _check(spec, "EmbeddingResponse", await (await client.post("/v1/embeddings", json={"input": "a", "encoding_format": "base64"})).json())
    _check(spec, "ChatCompletion", await (await client.post("/v1/chat/completions", json={"messages": messages})).json())
    _check(spec, "Completion", await (await client.post("/v1/completions", json={"prompt": "hi"})).json())
    _check(spec, "TokenizeResponse", await (await client.post("/tokenize", json={"prompt": "hi"})).json())
    _check(spec, "DetokenizeResponse", await (await client.post("/detokenize", json={"tokens": [1, 2]})).json())
    _check(spec, "ErrorBody", await (await client.post("/v1/embeddings", json={"input": []})).json())
    events = await read_events(await client.post("/v1/chat/completions", json={"messages": messages, "stream": True,
                                                                              "stream_options": {"include_usage": True}}))
    for event in events[:-1]:
        _check(spec, "ChatCompletionChunk", event)
    _check(spec, "ChatCompletionRequest", {"messages": messages, "tools": [{"type": "function", "function": {"name": "f"}}]})
    _check(spec, "Response", await (await client.post("/v1/responses", json={"input": "hi"})).json())
    for name, event in await read_named_events(await client.post("/v1/responses", json={"input": "hi", "stream": True})):
        _check(spec, "ResponseStreamEvent", event)
    anthropic = {"model": "fake-model", "max_tokens": 8, "messages": messages}
    _check(spec, "Message", await (await client.post("/v1/messages", json=anthropic)).json())
    _check(spec, "ErrorEvent", await (await client.post("/v1/messages", json={"messages": messages})).json())
    stream = await read_named_events(await client.post("/v1/messages", json={**anthropic, "stream": True}))
    for name, event in stream:
        jsonschema.Draft202012Validator({**spec, **spec["paths"]["/v1/messages"]["post"]["responses"]["200"][
            "content"]["text/event-stream"]["schema"]}).validate(event)
    with pytest.raises(jsonschema.ValidationError):
        _check(spec, "ChatCompletionRequest", {"messages": "not a list"})
