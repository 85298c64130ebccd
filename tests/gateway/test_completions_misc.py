"""Completions, models, health, metrics, tokenize/detokenize against the fake engine."""

from __future__ import annotations

from tests.gateway.fake_engine import DEFAULT_PIECES
from tests.gateway.sse_helpers import read_events

FULL_TEXT = "".join(DEFAULT_PIECES)


async def test_completion_string_prompt(client):
    body = await (await client.post("/v1/completions", json={"prompt": "Once", "max_tokens": 100})).json()
    assert body["object"] == "text_completion" and body["id"].startswith("cmpl-")
    assert body["choices"] == [{"index": 0, "text": FULL_TEXT, "logprobs": None, "finish_reason": "stop"}]
    assert body["usage"]["prompt_tokens"] == len(client.fakes[0].tokenizer.encode("Once"))


async def test_completion_default_max_tokens_is_16(client):
    await client.post("/v1/completions", json={"prompt": "Once"})
    assert client.fakes[0].requests[-1][2].max_tokens == 16


async def test_completion_prompt_lists_and_token_ids(client):
    ids = client.fakes[0].tokenizer.encode("Once upon")
    for prompt, count in (([" a", " b"], 2), (ids, 1), ([ids, ids[:2]], 2)):
        body = await (await client.post("/v1/completions", json={"prompt": prompt, "n": 2})).json()
        assert [c["index"] for c in body["choices"]] == list(range(2 * count)), body
    assert client.fakes[0].requests[-1][1] == ids[:2]
    for bad in ([], [1.5], [[1], "x"], [True]):
        resp = await client.post("/v1/completions", json={"prompt": bad})
        assert resp.status == 400 and (await resp.json())["error"]["param"] == "prompt"


async def test_completion_echo_and_logprobs(client):
    """Legacy scoring: the echoed prompt's tokens come first, the first without a logprob."""
    payload = {"prompt": "Once upon", "echo": True, "logprobs": 1, "max_tokens": 3}
    body = await (await client.post("/v1/completions", json=payload)).json()
    choice = body["choices"][0]
    assert choice["text"].startswith("Once upon") and choice["finish_reason"] == "length"
    prompt_ids = client.fakes[0].requests[-1][1]
    assert client.fakes[0].requests[-1][2].prompt_logprobs == 1
    n = len(prompt_ids)
    logprobs = choice["logprobs"]
    assert "".join(logprobs["tokens"][:n]).strip() == "Once upon"
    assert "".join(logprobs["tokens"][n:]) == choice["text"][len("Once upon"):]
    assert logprobs["token_logprobs"][:n] == [None] + [-p / 10 for p in range(1, n)]
    assert logprobs["top_logprobs"][0] is None and all(len(t) == 1 for t in logprobs["top_logprobs"][1:])
    assert logprobs["text_offset"][0] == 0 and logprobs["text_offset"][n] == len("Once upon")
    assert logprobs["text_offset"][:n] == sorted(logprobs["text_offset"][:n])
    streamed = await read_events(await client.post("/v1/completions", json={**payload, "stream": True}))
    tokens = [t for c in streamed[:-1] if c["choices"][0]["logprobs"] for t in c["choices"][0]["logprobs"]["tokens"]]
    assert tokens == logprobs["tokens"]
    plain = {"prompt": "Once upon", "logprobs": 1, "max_tokens": 3}
    await client.post("/v1/completions", json=plain)
    assert client.fakes[0].requests[-1][2].prompt_logprobs is None  # no echo: nothing to score


async def test_completion_stream(client):
    payload = {"prompt": "Once", "stream": True, "echo": True, "stream_options": {"include_usage": True}}
    events = await read_events(await client.post("/v1/completions", json=payload))
    assert events[-1] == "[DONE]"
    chunks, usage = events[:-2], events[-2]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] > 0
    assert all(c["object"] == "text_completion" and "usage" not in c for c in chunks)
    text = "".join(c["choices"][0]["text"] for c in chunks)
    assert text == "Once" + "".join(DEFAULT_PIECES)[: len(text) - 4]
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"][0]["finish_reason"]] == ["length"]


async def test_models(client):
    body = await (await client.get("/v1/models")).json()
    assert body["object"] == "list"
    (card,) = body["data"]
    assert card["id"] == "fake-model" and card["object"] == "model"
    one = await (await client.get("/v1/models/fake-model")).json()
    assert one["id"] == "fake-model"


async def test_served_model_name(make_client):
    from gateway.state import GatewaySettings

    client = await make_client(GatewaySettings(served_model_name="my-model"))
    body = await (await client.get("/v1/models")).json()
    assert body["data"][0]["id"] == "my-model"
    resp = await client.post("/v1/chat/completions", json={"model": "my-model", "messages": [{"role": "user", "content": "x"}]})
    assert (await resp.json())["model"] == "my-model"


async def test_health_and_metrics(client):
    assert (await (await client.get("/health")).json())["status"] == "ok"
    await client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}], "stream": True})
    await client.post("/v1/chat/completions", json={"messages": []})
    text = await (await client.get("/metrics")).text()
    for name in (
        'gateway_requests_total{route="/v1/chat/completions",status="200"} 1.0',
        'gateway_requests_total{route="/v1/chat/completions",status="400"} 1.0',
        "gateway_time_to_first_token_seconds_count 1.0",
        "gateway_inter_token_latency_seconds_count",
        "gateway_generation_tokens_total",
        "gateway_prompt_tokens_total",
        "gateway_kv_cache_usage_ratio 0.0",
        "gateway_prefix_cache_hit_rate",
        "gateway_num_requests_running 0.0",
        "gateway_num_requests_waiting 0.0",
    ):
        assert name in text, name


async def test_tokenize_detokenize(client):
    tok = client.fakes[0].tokenizer
    body = await (await client.post("/tokenize", json={"prompt": "Hello world"})).json()
    assert body["tokens"] == tok.encode("Hello world") and body["count"] == len(body["tokens"])
    back = await (await client.post("/detokenize", json={"tokens": body["tokens"]})).json()
    assert back["prompt"] == "Hello world"
    chat = await (await client.post("/tokenize", json={"messages": [{"role": "user", "content": "Hi"}]})).json()
    assert tok.decode(chat["tokens"]).endswith("<|im_start|>assistant\n")
    resp = await client.post("/detokenize", json={"tokens": [10**9]})
    assert resp.status == 400
    resp = await client.post("/tokenize", json={})
    assert resp.status == 400
