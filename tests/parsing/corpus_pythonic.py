"""Corpus: pythonic call lists (pythonic, llama4_pythonic, olmo3)."""
from __future__ import annotations

from tests.parsing.cases import TOOLS, Case

W = "get_weather"
CODE = "print('hi')\nx = {\"a\": [1]}\n"

PYTHONIC = [
    Case("pythonic", "one_call", '[get_weather(city="Paris", days=3)]', calls=((W, {"city": "Paris", "days": 3}),)),
    Case("pythonic", "parallel_literals",
         "[get_weather(city='San Francisco', unit=\"f\"), run_code(code=" + repr(CODE) + ", timeout=2.5, "
         "verbose=True, env={'A': '1', 2: None}, args=['-v', \"-x\",], limit=None, mode=(1, 2))]<|eot_id|>",
         calls=((W, {"city": "San Francisco", "unit": "f"}),
                ("run_code", {"code": CODE, "timeout": 2.5, "verbose": True, "env": {"A": "1", "2": None},
                              "args": ["-v", "-x"], "limit": None, "mode": [1, 2]}))),
    Case("pythonic", "no_args", "[get_time()]", calls=(("get_time", {}),)),
    Case("pythonic", "spaces_and_newlines", "[\n  get_weather( city = 'Oslo' ,\n days=-1 ),\n  get_time( )\n]",
         calls=((W, {"city": "Oslo", "days": -1}), ("get_time", {}))),
    Case("pythonic", "escapes", r"""[run_code(code="a\tb \u00e9 \"q\" \\ \x41 \d", args=[r'C:\new'])]""",
         calls=(("run_code", {"code": 'a\tb é "q" \\ A \\d', "args": ["C:\\new"]}),)),
    Case("pythonic", "triple_quoted", '[run_code(code="""def f():\n    return "x"\n""")]',
         calls=(("run_code", {"code": 'def f():\n    return "x"\n'}),)),
    Case("pythonic", "json_dict_splat", '[get_weather(**{"city": "Rome", "days": 2})]',
         calls=((W, {"city": "Rome", "days": 2}),)),
    Case("pythonic", "text_after_list", "[get_time()]\nDone.", content="Done.", calls=(("get_time", {}),)),
    Case("pythonic", "bracket_text_is_content", "[1] Paris is the capital of France.",
         content="[1] Paris is the capital of France."),
    Case("pythonic", "markdown_link_is_content", "[Docs](https://example.com) explain it.",
         content="[Docs](https://example.com) explain it."),
    Case("pythonic", "plain", "The weather is sunny.<|eot_id|>", content="The weather is sunny."),
    Case("pythonic", "list_later_is_content", "Sure: [get_time()]", content="Sure: [get_time()]"),
    Case("pythonic", "truncated_value", '[get_weather(city="Par', calls=((W, {"city": "Par"}),)),
    Case("pythonic", "truncated_after_equals", "[get_weather(city='Paris', days=",
         calls=((W, {"city": "Paris", "days": None}),)),
    Case("pythonic", "truncated_name_is_content", "[get_wea", content="[get_wea"),
    Case("pythonic", "positional_argument_ends_the_call", '[get_weather("Paris")]', content='"Paris")]',
         calls=((W, {}),)),
]

LLAMA4_PYTHONIC = [
    Case("llama4_pythonic", "python_block", '<|python_start|>[get_weather(city="Paris")]<|python_end|>',
         calls=((W, {"city": "Paris"}),)),
    Case("llama4_pythonic", "bare_list", "[get_weather(city='Lima'), get_time()]<|eot|>",
         calls=((W, {"city": "Lima"}), ("get_time", {}))),
    Case("llama4_pythonic", "text_after_block", "<|python_start|>[get_time()]<|python_end|>Checking the clock.",
         content="Checking the clock.", calls=(("get_time", {}),)),
    Case("llama4_pythonic", "plain", "I don't have access to that information.<|eot|>",
         content="I don't have access to that information."),
]

OLMO3 = [
    Case("olmo3", "think_then_calls",
         "The user wants the weather and the time.</think>\n<function_calls>\nget_weather(city='New York', "
         "unit='f')\nget_time()\n</function_calls>",
         reasoning="The user wants the weather and the time.",
         calls=((W, {"city": "New York", "unit": "f"}), ("get_time", {})), starts_in_reasoning=True),
    Case("olmo3", "json_literals",
         "<function_calls>\nrun_code(code='x', verbose=true, limit=null, env={\"a\": false})\n</function_calls>",
         calls=(("run_code", {"code": "x", "verbose": True, "limit": None, "env": {"a": False}}),)),
    Case("olmo3", "content_then_call", "Let me check.\n<function_calls>\nget_weather(city='Oslo')\n</function_calls>",
         content="Let me check.", calls=((W, {"city": "Oslo"}),)),
    Case("olmo3", "think_tags_written", "<think>Short.</think>Hello!<|im_end|>", reasoning="Short.",
         content="Hello!"),
    Case("olmo3", "not_a_call_is_content", "<function_calls>\nnot a call!\n</function_calls>",
         content="not a call!"),
    Case("olmo3", "truncated", "<function_calls>\nget_weather(city='Ber", calls=((W, {"city": "Ber"}),)),
    Case("olmo3", "call_in_reasoning_stays", "I could write <function_calls>get_time()</function_calls>.</think>Ok.",
         reasoning="I could write <function_calls>get_time()</function_calls>.", content="Ok.",
         starts_in_reasoning=True, tools=TOOLS),
]

CASES = PYTHONIC + LLAMA4_PYTHONIC + OLMO3
