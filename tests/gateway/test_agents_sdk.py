"""An OpenAI Agents SDK run against the gateway (fake engine, hermes tool calls), on both of its model
classes: Chat Completions and Responses. The tool is really called and its result reaches the answer."""

from __future__ import annotations

import json

import openai
import pytest

from gateway.parser_config import ParserConfig
from gateway.state import GatewaySettings

agents = pytest.importorskip("agents")

CALL_TEXT = ["<tool_call>", '{"name": "get_weather", "arguments": {"city": "Paris"}}', "</tool_call>"]


def weather_script(tokenizer):
    """Calls get_weather until the prompt holds its result, then answers with that result."""

    def script(prompt_ids, params):
        prompt = tokenizer.decode(prompt_ids)
        if "22 degrees and sunny" in prompt:
            return ["The weather in Paris: ", "22 degrees and sunny", "."]
        return list(CALL_TEXT)

    return script


@pytest.mark.parametrize("model_class, streamed", [("OpenAIChatCompletionsModel", False), ("OpenAIResponsesModel", False),
                                                   ("OpenAIChatCompletionsModel", True), ("OpenAIResponsesModel", True)])
async def test_agent_calls_its_tool_and_answers_with_the_result(make_client, tokenizer, model_class, streamed):
    agents.set_tracing_disabled(True)
    calls = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The current weather of a city."""
        calls.append(city)
        return f"{city}: 22 degrees and sunny"

    client = await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="hermes")),
                               script=weather_script(tokenizer), max_model_len=4096)  # fmt: skip
    api = openai.AsyncOpenAI(base_url=str(client.make_url("/v1")), api_key="x", max_retries=0)
    try:
        model = getattr(agents, model_class)(model="fake-model", openai_client=api)
        agent = agents.Agent(name="weather", instructions="Answer with the tool's result.", tools=[get_weather],
                             model=model, model_settings=agents.ModelSettings(tool_choice="required"))  # fmt: skip
        if streamed:  # the SDK consumes the SSE events itself (Responses: the item and argument events)
            result = agents.Runner.run_streamed(agent, "What is the weather in Paris?", max_turns=4)
            kinds = [event.type async for event in result.stream_events()]
            assert "raw_response_event" in kinds and "run_item_stream_event" in kinds
        else:
            result = await agents.Runner.run(agent, "What is the weather in Paris?", max_turns=4)
    finally:
        await api.close()
    assert calls == ["Paris"]
    assert result.final_output == "The weather in Paris: 22 degrees and sunny."
    first, second = (json.loads(params.structured.structural_tag) for _, _, params in client.fakes[0].requests)
    assert first["min_calls"] == 1  # tool_choice required: the call is grammar-constrained
    assert second["min_calls"] == 0  # the SDK resets tool_choice after the tool ran; its strict tool stays constrained
