"""The real server (tiny random model, two engine cores) driven by the official openai client."""

from __future__ import annotations

import asyncio

import aiohttp
import openai
import pytest

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello to the world."}]


@pytest.fixture
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture
def aclient(server):
    return openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def test_models(client):
    models = client.models.list()
    assert [m.id for m in models.data] == ["tiny", "tiny-bert"]
    assert client.models.retrieve("tiny").id == "tiny"
    assert client.models.retrieve("tiny-bert").id == "tiny-bert"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("nope")


def test_chat_stream_equals_non_stream_greedy(client):
    kwargs = dict(model="tiny", messages=MESSAGES, temperature=0, max_tokens=24)
    full = client.chat.completions.create(**kwargs)
    choice = full.choices[0]
    assert choice.finish_reason in ("stop", "length") and choice.message.role == "assistant"
    assert full.usage.completion_tokens >= 1
    stream = client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == (choice.message.content or "")
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [choice.finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == full.usage.completion_tokens
    assert all(c.usage is None for c in chunks[:-1])


def test_chat_seed_n_and_logprobs(client):
    kwargs = dict(model="tiny", messages=MESSAGES, temperature=1.0, max_tokens=12, seed=11)
    first = client.chat.completions.create(**kwargs)
    again = client.chat.completions.create(**kwargs)
    assert first.choices[0].message.content == again.choices[0].message.content
    many = client.chat.completions.create(**kwargs, n=3, logprobs=True, top_logprobs=2)
    assert [c.index for c in many.choices] == [0, 1, 2]
    assert len({c.message.content for c in many.choices}) > 1
    for choice in many.choices:
        entries = choice.logprobs.content
        assert entries and all(len(e.top_logprobs) == 2 and e.logprob <= 0 for e in entries)


def test_stop_string_never_reaches_the_client(client):
    kwargs = dict(model="tiny", messages=MESSAGES, temperature=0, max_tokens=24)
    text = client.chat.completions.create(**kwargs).choices[0].message.content
    assert text and len(text) > 4
    stop = text[3:5]
    cut = text[: text.index(stop)]
    stopped = client.chat.completions.create(**kwargs, stop=[stop])
    assert stopped.choices[0].message.content == cut
    assert stopped.choices[0].finish_reason == "stop"
    streamed = "".join(
        c.choices[0].delta.content or "" for c in client.chat.completions.create(**kwargs, stop=[stop], stream=True)
    )
    assert streamed == cut


def test_completions(client, server):
    full = client.completions.create(model="tiny", prompt="The quick brown", max_tokens=10, temperature=0,
                                     echo=True, logprobs=2)
    choice = full.choices[0]
    assert choice.text.startswith("The quick brown")
    usage = full.usage  # echo + logprobs: the prompt's tokens are listed (and scored) first
    assert len(choice.logprobs.tokens) == usage.prompt_tokens + usage.completion_tokens
    many = client.completions.create(model="tiny", prompt=["Hello", "World"], max_tokens=4, temperature=0)
    assert [c.index for c in many.choices] == [0, 1]
    ids = client.completions.create(model="tiny", prompt=[[5, 6, 7], [8, 9]], max_tokens=4, temperature=0, n=2)
    assert [c.index for c in ids.choices] == [0, 1, 2, 3]
    stream = client.completions.create(model="tiny", prompt="The quick brown", max_tokens=10, temperature=0,
                                       stream=True)
    assert "The quick brown" + "".join(c.choices[0].text for c in stream) == choice.text


async def test_tokenize_detokenize_embeddings(client, server):
    async with aiohttp.ClientSession(server.url) as http:
        async with http.post("/tokenize", json={"prompt": "Hello world"}) as resp:
            tokens = (await resp.json())["tokens"]
        async with http.post("/detokenize", json={"tokens": tokens}) as resp:
            assert (await resp.json())["prompt"] == "Hello world"
    with pytest.raises(openai.BadRequestError) as err:
        client.embeddings.create(model="tiny", input="x")  # the chat model
    assert err.value.status_code == 400


def test_embeddings(client):
    floats = client.embeddings.create(model="tiny-bert", input=["hello world", "the quick brown fox"],
                                      encoding_format="float")  # fmt: skip
    assert [d.index for d in floats.data] == [0, 1] and len(floats.data[0].embedding) == 32
    assert floats.usage.prompt_tokens == floats.usage.total_tokens > 4
    # the client's default asks for base64 and decodes it itself: the same vectors
    packed = client.embeddings.create(model="tiny-bert", input=["hello world", "the quick brown fox"])
    for a, b in zip(floats.data, packed.data):
        assert a.embedding == pytest.approx(b.embedding, abs=1e-7)
    ids = client.embeddings.create(model="tiny-bert", input=[[2, 9, 10, 3]])
    assert len(ids.data) == 1
    with pytest.raises(openai.BadRequestError, match="dimensions"):
        client.embeddings.create(model="tiny-bert", input="x", dimensions=8)


async def test_64_concurrent_streams_all_finish(aclient):
    async def one(i: int) -> str:
        stream = await aclient.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": f"Request {i}"}], max_tokens=8,
            temperature=0, stream=True)
        reasons = [c.choices[0].finish_reason async for c in stream if c.choices and c.choices[0].finish_reason]
        return reasons[0]

    reasons = await asyncio.gather(*(one(i) for i in range(64)))
    assert len(reasons) == 64 and set(reasons) <= {"stop", "length"}


def test_every_sampling_field_is_accepted(client):
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
    reply = client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_completion_tokens=6, temperature=0.7, top_p=0.9, seed=5,
        presence_penalty=0.3, frequency_penalty=0.2, logit_bias={"7": 2.0}, stop=["\n\n"], tools=tools,
        extra_body={"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1, "ignore_eos": True, "min_tokens": 6,
                    "chat_template_kwargs": {"enable_thinking": False}, "add_generation_prompt": True},
    )
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 6
    cont = client.chat.completions.create(
        model="tiny", max_tokens=4, temperature=0,
        messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        extra_body={"continue_final_message": True, "add_generation_prompt": False},
    )
    assert cont.choices[0].finish_reason in ("stop", "length")


def test_required_tool_choice_gives_a_valid_call(client):
    """The grammar forces the hermes call syntax; the parser turns it back into tool_calls."""
    import json

    params = {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}}, "required": ["unit"],
              "additionalProperties": False}
    tools = [{"type": "function", "function": {"name": "get_temp", "parameters": params}}]
    kwargs = dict(model="tiny", messages=MESSAGES, tools=tools, max_tokens=60, temperature=0)
    named = {"type": "function", "function": {"name": "get_temp"}}
    reply = client.chat.completions.create(**kwargs, tool_choice=named)
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_temp"
    assert json.loads(call.function.arguments)["unit"] in ("c", "f")
    assert reply.choices[0].finish_reason == "stop"  # OpenAI: stop when a function is named
    streamed = client.chat.completions.create(**kwargs, tool_choice=named, stream=True)
    fragments = [t for c in streamed if c.choices and c.choices[0].delta.tool_calls for t in c.choices[0].delta.tool_calls]
    assert fragments[0].function.name == "get_temp"
    assert "".join(f.function.arguments or "" for f in fragments) == call.function.arguments
    required = client.chat.completions.create(**kwargs, tool_choice="required", parallel_tool_calls=False)
    assert required.choices[0].finish_reason == "tool_calls"
    assert required.choices[0].message.tool_calls[0].function.name == "get_temp"


def test_response_format_json_schema(client):
    import json

    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    reply = client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_tokens=40, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}})
    assert reply.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(reply.choices[0].message.content)["ok"], bool)


def test_structured_outputs_choice_regex_and_completions(client):
    """vLLM's `structured_outputs` body field, on chat and completions, sampled at temperature 1."""
    import re

    for seed in range(3):
        reply = client.chat.completions.create(
            model="tiny", messages=MESSAGES, max_tokens=20, temperature=1.0, seed=seed,
            extra_body={"structured_outputs": {"choice": ["alpha", "beta gamma"]}})
        assert reply.choices[0].message.content in ("alpha", "beta gamma")
        assert reply.choices[0].finish_reason == "stop"
    text = client.completions.create(model="tiny", prompt="Code:", max_tokens=30, temperature=1.0, seed=5,
                                     extra_body={"structured_outputs": {"regex": "[A-Z]{2}-[0-9]{3}"}})
    assert re.fullmatch("[A-Z]{2}-[0-9]{3}", text.choices[0].text)


def test_bad_schema_is_400_before_the_stream_starts(client):
    bad = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as err:
            client.chat.completions.create(
                model="tiny", messages=MESSAGES, max_tokens=8, stream=stream,
                response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": bad}})
        assert err.value.status_code == 400 and "/properties/n/minimum" in err.value.message
    assert client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=2).choices


def test_echo_logprobs_score_the_prompt(client):
    """lm-eval style loglikelihood: echo + logprobs returns the prompt tokens' logprobs."""
    reply = client.completions.create(model="tiny", prompt="The quick brown fox", max_tokens=1, temperature=0,
                                      echo=True, logprobs=1)
    lp = reply.choices[0].logprobs
    num_prompt = reply.usage.prompt_tokens
    assert len(lp.tokens) == num_prompt + 1 and lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert all(x <= 0 for x in lp.token_logprobs[1:])
    assert all(len(t) == 1 and max(t.values()) >= x - 1e-5 for t, x in zip(lp.top_logprobs[1:], lp.token_logprobs[1:]))
    again = client.completions.create(model="tiny", prompt="The quick brown fox", max_tokens=1, temperature=0,
                                      echo=True, logprobs=1)
    assert again.choices[0].logprobs.token_logprobs == lp.token_logprobs  # the repeat skips its prefix-cache hit and scores again


def test_structured_outputs_gbnf_grammar(client):
    gbnf = 'root ::= "id-" [0-9]{3} ("-" [a-z]+)?'
    import re

    for seed in range(2):
        text = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=20, temperature=1.0,
                                              seed=seed, extra_body={"structured_outputs": {"grammar": gbnf}})
        assert re.fullmatch("id-[0-9]{3}(-[a-z]+)?", text.choices[0].message.content)
