"""Corpus: step3, step3p5, qwen3_xml, minimax_m2_append_think, lfm2, cohere_command3/4, mimo,
nemotron_v3, and the closed gaps (SGLang's unprefixed DSML, Kimi's bare counter ids, gpt-oss
preamble and final)."""
from __future__ import annotations

from tests.parsing.cases import TOOLS, Case

W = "get_weather"
SB, SE = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
CB, CE, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"


def steptml(name: str, *params: tuple[str, str]) -> str:
    body = "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>' for k, v in params)
    return f'{CB}function{SEP}<steptml:invoke name="{name}">{body}</steptml:invoke>{CE}'


STEP3 = [
    Case("step3", "reasoning_then_calls", "Need the weather.</think>\n" + SB + steptml(W, ("city", "Paris"), ("days", "3"))
         + steptml("get_time") + SE, reasoning="Need the weather.",
         calls=((W, {"city": "Paris", "days": 3}), ("get_time", {})), tools=TOOLS),
    Case("step3", "answer", "2 and 2 make 4.</think>The answer is 4.", reasoning="2 and 2 make 4.",
         content="The answer is 4."),
    Case("step3", "written_open_tag", "<think>Hm.</think>Ok.", reasoning="Hm.", content="Ok."),
    Case("step3", "truncated_reasoning", "Let me think about", reasoning="Let me think about"),
    Case("step3", "constrained_call_ends_reasoning", SB + steptml(W, ("city", "Oslo")) + SE,
         calls=((W, {"city": "Oslo"}),), tools=TOOLS),
]

STEP3P5 = [
    Case("step3p5", "call", "Let me check.\n</think>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
         "</parameter>\n</function>\n</tool_call>", reasoning="Let me check.", calls=((W, {"city": "Paris"}),),
         tools=TOOLS),
    Case("step3p5", "answer", "Simple.\n</think>\n\nHello!", reasoning="Simple.", content="Hello!"),
]

QWEN3_XML = [
    Case("qwen3_xml", "call", "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=days>\n2\n</parameter>\n"
         "</function>\n</tool_call>", content="Checking.", calls=((W, {"days": 2}),), tools=TOOLS),
]

MM_CALL = ('<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
           '</invoke>\n</minimax:tool_call>')

MINIMAX_APPEND_THINK = [
    Case("minimax_m2_append_think", "answer", "The user greets me.\n</think>\n\nHello!",
         content="<think>The user greets me.\n</think>\n\nHello!"),
    Case("minimax_m2_append_think", "call", "Need weather.\n</think>\n\n" + MM_CALL,
         content="<think>Need weather.\n</think>", calls=((W, {"city": "Paris"}),), tools=TOOLS),
]

DSML = [
    Case("deepseek_v32", "unprefixed", '<function_calls>\n<invoke name="get_weather">\n<parameter name="city" '
         'string="true">Paris</parameter>\n<parameter name="days" string="false">3</parameter>\n</invoke>\n'
         "</function_calls>", calls=((W, {"city": "Paris", "days": 3}),)),
    Case("deepseek_v32", "mixed_prefixes", 'Sure.<｜DSML｜function_calls>\n<invoke name="get_weather">\n'
         '<｜DSML｜parameter name="days" string="false">2</parameter>\n</｜DSML｜invoke>\n</function_calls>',
         content="Sure.", calls=((W, {"days": 2}),)),
    Case("deepseek_v32", "json_body", '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
         '{"city": "Paris", "days": [1, 2]}\n</｜DSML｜invoke>\n<｜DSML｜invoke name="get_time">{}</｜DSML｜invoke>\n'
         "</｜DSML｜function_calls>", calls=((W, {"city": "Paris", "days": [1, 2]}), ("get_time", {}))),
    Case("deepseek_v32", "json_body_truncated", '<function_calls><invoke name="get_weather">{"city": "Pa',
         calls=((W, {"city": "Pa"}),)),
]

KS, KE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
KB, KA, KC = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"

KIMI_GUESS = [
    Case("kimi_k2", "bare_counter_id", f'{KS}{KB}0 {KA}{{"city": "Tokyo", "unit": "c"}}{KC}{KE}',
         calls=((W, {"city": "Tokyo", "unit": "c"}),), ids=("functions.get_weather:0",), tools=TOOLS),
    Case("kimi_k2", "client_style_id", f'{KS}{KB}call_3{KA}{{"code": "ls", "timeout": 5}}{KC}{KE}',
         calls=(("run_code", {"code": "ls", "timeout": 5}),), ids=("call_3",), tools=TOOLS),
    Case("kimi_k2", "named_and_bare", f'{KS}{KB}functions.get_time:0{KA}{{}}{KC}{KB}1{KA}{{"city": "Rome"}}{KC}{KE}',
         calls=(("get_time", {}), (W, {"city": "Rome"})), ids=("functions.get_time:0", "functions.get_weather:1"),
         tools=TOOLS),
    Case("kimi_k2", "no_tool_fits", f'{KS}{KB}2{KA}{{"query": "x"}}{KC}{KE}Done.', content="Done.", tools=TOOLS),
    Case("kimi_k2", "bare_counter_truncated", f'{KS}{KB}0{KA}{{"city": "Par', calls=((W, {"city": "Par"}),),
         ids=("functions.get_weather:0",), tools=TOOLS),
]

CH, MSG, END, ST = "<|channel|>", "<|message|>", "<|end|>", "<|start|>"

GPT_OSS = [
    Case("gpt_oss", "preamble_and_final",
         f"{CH}analysis{MSG}Look it up.{END}{ST}assistant{CH}commentary{MSG}Let me check.{END}"
         f"{ST}assistant{CH}final{MSG}It is sunny.<|return|>",
         reasoning="Look it up.", content="Let me check.\nIt is sunny."),
    Case("gpt_oss", "two_analysis_messages",
         f"{CH}analysis{MSG}First thought.{END}{ST}assistant{CH}analysis{MSG}Second thought.{END}"
         f"{ST}assistant{CH}final{MSG}Done.",
         reasoning="First thought.\nSecond thought.", content="Done."),
]

LFM2 = [
    Case("lfm2", "call_then_text", '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>The weather is sunny.',
         content="The weather is sunny.", calls=((W, {"city": "Paris"}),)),
    Case("lfm2", "text_then_parallel", "Checking.<|tool_call_start|>[get_time(), get_weather(city='Oslo', days=2)]"
         "<|tool_call_end|><|im_end|>", content="Checking.", calls=(("get_time", {}), (W, {"city": "Oslo", "days": 2}))),
    Case("lfm2", "thinking", "<think>Easy one.</think>Four.", reasoning="Easy one.", content="Four."),
]

COHERE = [
    Case("cohere_command3", "plan_and_calls",
         '<|START_THINKING|>I will look up the weather.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", '
         '"tool_name": "get_weather", "parameters": {"city": "Toronto"}},\n    {"tool_call_id": "1", "tool_name": '
         '"get_time", "parameters": {}}\n]<|END_ACTION|><|END_OF_TURN_TOKEN|>',
         reasoning="I will look up the weather.", calls=((W, {"city": "Toronto"}), ("get_time", {}))),
    Case("cohere_command3", "response", "<|START_RESPONSE|>It is 4.<|END_RESPONSE|><|END_OF_TURN_TOKEN|>",
         content="It is 4."),
    Case("cohere_command4", "prompt_opened_thinking",
         'Need the time.<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_time", '
         '"parameters": {}}]<|END_ACTION|>', reasoning="Need the time.", calls=(("get_time", {}),),
         starts_in_reasoning=True),
    Case("cohere_command4", "text", "<|START_THINKING|>Hi.<|END_THINKING|><|START_TEXT|>Hello!<|END_TEXT|>",
         reasoning="Hi.", content="Hello!"),
]

ALIASES = [
    Case("mimo", "call", "<think>Weather.</think>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
         reasoning="Weather.", calls=(("get_time", {}),)),
    Case("nemotron_v3", "prompt_opened", "User asks time.\n</think>\n<tool_call>\n<function=get_time>\n</function>\n"
         "</tool_call>", reasoning="User asks time.", calls=(("get_time", {}),), starts_in_reasoning=True),
]

CASES = STEP3 + STEP3P5 + QWEN3_XML + MINIMAX_APPEND_THINK + DSML + KIMI_GUESS + GPT_OSS + LFM2 + COHERE + ALIASES
