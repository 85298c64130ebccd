"""Corpus: Gemma 4 and FunctionGemma calls (bare keys, string delimiter tokens)."""
from __future__ import annotations

from tests.parsing.cases import TOOLS, Case

W = "get_weather"
Q = '<|"|>'

GEMMA4 = [
    Case("gemma4", "thinking_then_call",
         f"<|channel>thought\nThe user wants weather.<channel|><|tool_call>call:get_weather{{city:{Q}Paris{Q},days:3}}"
         "<tool_call|>", reasoning="The user wants weather.", calls=((W, {"city": "Paris", "days": 3}),)),
    Case("gemma4", "nested_values",
         f"<|tool_call>call:run_code{{code:{Q}print(\"a, b\"){{}}{Q},verbose:true,limit:null,"
         f"env:{{A:{Q}1{Q},B:2.5}},args:[{Q}-v{Q},{Q}-x{Q}]}}<tool_call|>",
         calls=(("run_code", {"code": 'print("a, b"){}', "verbose": True, "limit": None, "env": {"A": "1", "B": 2.5},
                              "args": ["-v", "-x"]}),)),
    Case("gemma4", "two_calls_and_text",
         f"Checking.<|tool_call>call:get_time{{}}<tool_call|><|tool_call>call:get_weather{{city:{Q}Oslo{Q}}}"
         "<tool_call|>", content="Checking.", calls=(("get_time", {}), (W, {"city": "Oslo"}))),
    Case("gemma4", "answer", "The answer is 4.<turn|>", content="The answer is 4."),
    Case("gemma4", "thought_word_in_answer", "<|channel>thought\nthoughtful.<channel|>A thought: yes.",
         reasoning="thoughtful.", content="A thought: yes."),
    Case("gemma4", "truncated_string", f"<|tool_call>call:get_weather{{city:{Q}Par", calls=((W, {"city": "Par"}),)),
    Case("gemma4", "call_ends_thinking", "<|channel>thought\nCall it.<|tool_call>call:get_time{}<tool_call|>",
         reasoning="Call it.", calls=(("get_time", {}),)),
]

FUNCTIONGEMMA = [
    Case("functiongemma", "call",
         "<start_function_call>call:get_weather{city:<escape>London<escape>,days:<escape>3<escape>}"
         "<end_function_call>", calls=((W, {"city": "London", "days": 3}),), tools=TOOLS),
    Case("functiongemma", "json_looking_values",
         "<start_function_call>call:run_code{code:<escape>x = 1<escape>,verbose:<escape>true<escape>,"
         "args:<escape>[\"a\"]<escape>}<end_function_call>",
         calls=(("run_code", {"code": "x = 1", "verbose": True, "args": ["a"]}),)),
    Case("functiongemma", "text", "I can help with that.<end_of_turn>", content="I can help with that."),
    Case("functiongemma", "truncated", "<start_function_call>call:get_weather{city:<escape>Lon",
         calls=((W, {"city": "Lon"}),)),
]

CASES = GEMMA4 + FUNCTIONGEMMA
