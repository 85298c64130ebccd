"""Corpus: special-token formats (deepseek r1/v3/v31, kimi_k2, gpt_oss)."""
from __future__ import annotations

from tests.parsing.cases import Case

W = "get_weather"
TB, TE = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CB, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
EOS = "<｜end▁of▁sentence｜>"


def v3_call(name: str, args: str) -> str:
    return f"{CB}function{SEP}{name}\n```json\n{args}\n```{CE}"


DEEPSEEK = [
    Case("deepseek_r1", "reasoning", "<think>\nOkay, 2+2.\n</think>\n\n4", reasoning="Okay, 2+2.", content="4"),
    Case("deepseek_r1", "starts_in_reasoning", "Okay.\n</think>\n\nFour.", reasoning="Okay.", content="Four.",
         starts_in_reasoning=True),
    Case("deepseek_r1", "call", "Checking" + TB + v3_call(W, '{"city": "Paris"}') + TE + EOS,
         content="Checking", calls=((W, {"city": "Paris"}),)),
    Case("deepseek_r1", "truncated_reasoning", "<think>\nLet me", reasoning="Let me"),
    Case("deepseek_r1", "no_close_starts_in_content", "Plain answer.", content="Plain answer."),
    Case("deepseek_v3", "two_calls",
         "Let me check both." + TB + v3_call(W, '{\n  "city": "Paris"\n}') + "\n"
         + v3_call("run_code", '{"code": "```python\\nprint(1)\\n```"}') + TE + EOS,
         content="Let me check both.",
         calls=((W, {"city": "Paris"}), ("run_code", {"code": "```python\nprint(1)\n```"}))),
    Case("deepseek_v3", "no_args", TB + v3_call("get_time", "{}") + TE, calls=(("get_time", {}),)),
    Case("deepseek_v3", "markers_in_string", TB + v3_call("run_code", '{"code": "' + CE + TE + '"}') + TE,
         calls=(("run_code", {"code": CE + TE}),)),
    Case("deepseek_v3", "truncated", "x" + TB + CB + "function" + SEP + W + '\n```json\n{"city": "Pa', content="x",
         calls=((W, {"city": "Pa"}),)),
    Case("deepseek_v3", "plain", "Hello.<｜end▁of▁sentence｜>", content="Hello."),
    Case("deepseek_v31", "two_calls",
         f'Sure.{TB}{CB}get_weather{SEP}{{"city": "Paris"}}{CE}{CB}get_time{SEP}{{}}{CE}{TE}',
         content="Sure.", calls=((W, {"city": "Paris"}), ("get_time", {}))),
    Case("deepseek_v31", "thinking", "The user wants weather.</think>Calling." + TB + CB + W + SEP
         + '{"city": "Oslo", "days": 2}' + CE + TE, reasoning="The user wants weather.", content="Calling.",
         calls=((W, {"city": "Oslo", "days": 2}),), starts_in_reasoning=True),
    Case("deepseek_v31", "v3_fenced_variant", TB + v3_call(W, '{"city": "Rome"}') + TE,
         calls=((W, {"city": "Rome"}),)),
    Case("deepseek_v31", "truncated_in_name", "ok" + TB + CB + "get_wea", content="ok"),
    Case("deepseek_v31", "brace_in_string", f'{TB}{CB}run_code{SEP}{{"code": "}}}}{{"}}{CE}{TE}',
         calls=(("run_code", {"code": "}}{"}),)),
]

KS, KE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
KB, KA, KC = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"

KIMI = [
    Case("kimi_k2", "two_calls",
         f'<think>Two lookups.</think>Let me check.{KS}{KB}functions.get_weather:0{KA}{{"city": "Paris"}}{KC}'
         f'{KB}functions.get_time:1{KA}{{}}{KC}{KE}',
         reasoning="Two lookups.", content="Let me check.",
         calls=((W, {"city": "Paris"}), ("get_time", {})),
         ids=("functions.get_weather:0", "functions.get_time:1")),
    Case("kimi_k2", "section_inside_reasoning",
         f'<think>I need the weather {KS}{KB}functions.get_weather:3{KA}{{\n  "city": "Rome"\n}}{KC}{KE}',
         reasoning="I need the weather", calls=((W, {"city": "Rome"}),), ids=("functions.get_weather:3",)),
    Case("kimi_k2", "call_begin_inside_reasoning",
         f'Thinking{KB}functions.get_time:0{KA}{{}}{KC}{KE}', reasoning="Thinking",
         calls=(("get_time", {}),), ids=("functions.get_time:0",), starts_in_reasoning=True),
    Case("kimi_k2", "noise_in_section",
         f'{KS} noise {KB}functions.get_time:7{KA}{{}}{KC}{KE}After.', content="After.",
         calls=(("get_time", {}),), ids=("functions.get_time:7",)),
    Case("kimi_k2", "truncated", f'{KS}{KB}functions.get_weather:0{KA}{{"city": "Par',
         calls=((W, {"city": "Par"}),), ids=("functions.get_weather:0",)),
    Case("kimi_k2", "plain", "<think></think>Just text.", content="Just text."),
]

CH, MSG, END, ST = "<|channel|>", "<|message|>", "<|end|>", "<|start|>"

GPT_OSS = [
    Case("gpt_oss", "analysis_final",
         f"{CH}analysis{MSG}User says hi.{END}{ST}assistant{CH}final{MSG}Hello!<|return|>",
         reasoning="User says hi.", content="Hello!"),
    Case("gpt_oss", "call",
         f"{CH}analysis{MSG}Need weather.{END}{ST}assistant{CH}commentary to=functions.get_weather "
         f'<|constrain|>json{MSG}{{"city": "Paris"}}<|call|>',
         reasoning="Need weather.", calls=((W, {"city": "Paris"}),)),
    Case("gpt_oss", "recipient_in_role",
         f'{CH}analysis{MSG}Time.{END}{ST}assistant to=functions.get_time{CH}commentary json{MSG}{{}}',
         reasoning="Time.", calls=(("get_time", {}),)),
    Case("gpt_oss", "preamble_then_call",
         f"{CH}commentary{MSG}Let me look that up.{END}{ST}assistant{CH}commentary to=functions.get_weather"
         f' <|constrain|>json{MSG}{{"city": "<|end|>"}}<|call|>',
         content="Let me look that up.", calls=((W, {"city": "<|end|>"}),)),
    Case("gpt_oss", "builtin_on_analysis",
         f'{CH}analysis to=browser.search code{MSG}{{"query": "x"}}{END}{ST}assistant{CH}final{MSG}Done.',
         reasoning='{"query": "x"}', content="Done."),
    Case("gpt_oss", "truncated_analysis", f"{CH}analysis{MSG}Let me th", reasoning="Let me th"),
    Case("gpt_oss", "truncated_call",
         f'{CH}commentary to=functions.get_weather <|constrain|>json{MSG}{{"city": "Os',
         calls=((W, {"city": "Os"}),)),
]

CASES = DEEPSEEK + KIMI + GPT_OSS
