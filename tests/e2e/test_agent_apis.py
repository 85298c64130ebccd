"""The Responses and Messages APIs on the real server (tiny random model, hermes tool calls, two engine
cores) through the official openai and anthropic clients: their stream helpers finish and agree with
the whole reply, and grammar-forced calls and structured output are valid against their schemas."""

from __future__ import annotations

import json
from typing import Literal

import anthropic
import jsonschema
import openai
import pytest
from pydantic import BaseModel

PARAMS = {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}}, "required": ["unit"],
          "additionalProperties": False}  # fmt: skip
QUESTION = "Say hello to the world."


@pytest.fixture
def oai(server):
    with openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120) as client:
        yield client


@pytest.fixture
def claude(server):
    with anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=120) as client:
        yield client


def test_responses_create_and_stream_agree(oai):
    """A schema-bound reply, so that the random model finishes (the helper wants response.completed)."""
    fmt = {"format": {"type": "json_schema", "name": "r", "schema": PARAMS}}
    kwargs = dict(model="tiny", input=QUESTION, instructions="Be brief.", temperature=0, max_output_tokens=40, text=fmt)
    whole = oai.responses.create(**kwargs)
    assert whole.status == "completed" and whole.usage.output_tokens >= 1
    jsonschema.validate(json.loads(whole.output_text), PARAMS)
    with oai.responses.stream(**kwargs) as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == whole.output_text
    assert final.usage.output_tokens == whole.usage.output_tokens


def test_responses_cut_by_max_output_tokens_is_incomplete(oai):
    kwargs = dict(model="tiny", input=QUESTION, temperature=0, max_output_tokens=6)
    whole = oai.responses.create(**kwargs)
    assert whole.status == "incomplete" and whole.incomplete_details.reason == "max_output_tokens"
    events = list(oai.responses.create(**kwargs, stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created" and events[-1].type == "response.incomplete"
    assert events[-1].response.output_text == whole.output_text


def test_responses_parse_with_a_pydantic_model(oai):
    class Reading(BaseModel):
        ok: bool
        unit: Literal["c", "f"]

    parsed = oai.responses.parse(model="tiny", input=QUESTION, text_format=Reading, max_output_tokens=40)
    assert parsed.status == "completed" and isinstance(parsed.output_parsed, Reading)


def test_previous_response_id_chain_with_a_function_call_output(oai):
    tools = [{"type": "function", "name": "get_temp", "parameters": PARAMS, "strict": True}]
    first = oai.responses.create(model="tiny", input=QUESTION, tools=tools, tool_choice="required",
                                 parallel_tool_calls=False, max_output_tokens=80, temperature=0)  # fmt: skip
    assert first.status == "completed", first.output
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_temp" and json.loads(call.arguments)["unit"] in ("c", "f")
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "21 degrees"}
    second = oai.responses.create(model="tiny", previous_response_id=first.id, input=[output], tools=tools,
                                  max_output_tokens=8, temperature=0)  # fmt: skip
    assert second.previous_response_id == first.id and second.status in ("completed", "incomplete")
    assert second.usage.input_tokens > first.usage.input_tokens  # the first turn and its call were replayed
    assert [item.type for item in oai.responses.input_items.list(second.id).data] == ["function_call_output"]


def test_messages_tool_choice_any_gives_schema_valid_input(claude):
    tools = [{"name": "get_temp", "description": "The temperature", "input_schema": PARAMS}]
    message = claude.messages.create(model="tiny", max_tokens=80, extra_body={"temperature": 0}, tools=tools,
                                     tool_choice={"type": "any", "disable_parallel_tool_use": True},
                                     messages=[{"role": "user", "content": QUESTION}])  # fmt: skip
    uses = [block for block in message.content if block.type == "tool_use"]
    assert len(uses) == 1 and uses[0].name == "get_temp" and message.stop_reason == "tool_use"
    jsonschema.validate(uses[0].input, PARAMS)


def test_messages_stream_text_and_input_json_deltas(claude):
    kwargs = dict(model="tiny", max_tokens=16, extra_body={"temperature": 0},  # (this anthropic has no temperature)
                  messages=[{"role": "user", "content": QUESTION}])
    whole = claude.messages.create(**kwargs)
    with claude.messages.stream(**kwargs) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "".join(block.text for block in whole.content if block.type == "text")
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens
    tools = [{"name": "get_temp", "input_schema": PARAMS}]
    forced = dict(kwargs, max_tokens=80, tools=tools, tool_choice={"type": "tool", "name": "get_temp"})
    with claude.messages.stream(**forced) as stream:
        partials = [event.delta.partial_json for event in stream
                    if event.type == "content_block_delta" and event.delta.type == "input_json_delta"]  # fmt: skip
        final = stream.get_final_message()
    (use,) = [block for block in final.content if block.type == "tool_use"]
    assert json.loads("".join(partials)) == use.input
    jsonschema.validate(use.input, PARAMS)


def test_a_chain_survives_a_server_restart(tiny_model_dir, tmp_path):
    """--response-store PATH: the second turn of a previous_response_id chain runs on a new server process."""
    from tests.e2e.conftest import running_server

    args = ("--model", str(tiny_model_dir), "--max-model-len", "512", "--num-kv-blocks", "64", "--tool-parser",
            "hermes", "--embedding-model", "none", "--served-model-name", "tiny",
            "--response-store", str(tmp_path / "responses.sqlite3"))  # fmt: skip
    tools = [{"type": "function", "name": "get_temp", "parameters": PARAMS}]
    with running_server(*args) as proc:
        with openai.OpenAI(base_url=proc.url + "/v1", api_key="x", max_retries=0, timeout=120) as client:
            first = client.responses.create(model="tiny", input=QUESTION, tools=tools, tool_choice="required",
                                            parallel_tool_calls=False, max_output_tokens=80, temperature=0)  # fmt: skip
    (call,) = [item for item in first.output if item.type == "function_call"]
    with running_server(*args) as proc:
        with openai.OpenAI(base_url=proc.url + "/v1", api_key="x", max_retries=0, timeout=120) as client:
            output = {"type": "function_call_output", "call_id": call.call_id, "output": "21 degrees"}
            second = client.responses.create(model="tiny", previous_response_id=first.id, input=[output],
                                             tools=tools, max_output_tokens=4, temperature=0)  # fmt: skip
            assert client.responses.retrieve(first.id).output[0].call_id == call.call_id
    assert second.previous_response_id == first.id and second.usage.input_tokens > first.usage.input_tokens
