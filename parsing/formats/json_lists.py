"""Formats whose calls are JSON lists or objects, often as the answer's start: llama, granite, ..."""
from __future__ import annotations

from dataclasses import replace

from parsing.spec import Envelope, Format, Reasoning

THINK = Reasoning("<think>", "</think>")


def _list_syntax(trigger: str, block_begin: str, block_end: str, begin: str = '{"name": "{name}", "arguments": ',
                 ) -> tuple[tuple[str, object], ...]:
    """Calls as one JSON list: block_begin + calls joined by ", " + block_end."""
    return (("args", "json"), ("trigger", trigger), ("block_begin", block_begin), ("begin", begin),
            ("end", "}"), ("separator", ", "), ("block_end", block_end))


_LLAMA_SYNTAX = (("args", "json"), ("trigger", "{"), ("begin", '{"name": "{name}", "parameters": '),
                 ("end", "}"), ("separator", "; "))

LLAMA3_JSON = Format(
    name="llama3_json",
    reasoning=None,
    body=Envelope(),
    start_triggers=("<|python_tag|>",),
    keep_triggers=("{",),
    drop=("<|eom_id|>", "<|eot_id|>"),
    syntax=_LLAMA_SYNTAX,
)
# Llama 4 with its JSON template: the same calls, Llama 4's end tokens and python block
LLAMA4_JSON = Format(
    name="llama4_json",
    reasoning=None,
    body=Envelope(),
    start_triggers=("<|python_start|>",),
    block_close="<|python_end|>",
    keep_triggers=("{",),
    drop=("<|eom|>", "<|eot|>"),
    syntax=_LLAMA_SYNTAX,
)
# IBM Granite 3.x: <|tool_call|> (3.0) or <tool_call> (3.1+) then a JSON list; a bare list
# at the answer's start too. Granite 3.2+ reasons in plain sentences.
GRANITE = Format(
    name="granite",
    reasoning=Reasoning("Here is my thought process:", "Here is my response:",
                        alt_open=("Here's my thought process:",), alt_close=("Here's my response:",),
                        drop_stray=False),
    body=Envelope(),
    block_open=("<|tool_call|>", "<tool_call>"),
    keep_triggers=("[",),
    drop=("<|end_of_text|>",),
    syntax=_list_syntax("<|tool_call|>", "<|tool_call|>[", "]"),
)
# granite-20b-functioncalling: "<function_call> {...}" before every call
GRANITE_20B_FC = Format(
    name="granite_20b_fc",
    reasoning=None,
    body=Envelope(),
    block_open=("<function_call>",),
    drop=("<|endoftext|>",),
    syntax=(("args", "json"), ("trigger", "<function_call>"),
            ("begin", '<function_call> {"name": "{name}", "arguments": '), ("end", "}"), ("separator", " ")),
)
# AI21 Jamba 1.5 / 1.6 / 1.7
JAMBA = Format(
    name="jamba",
    reasoning=None,
    body=Envelope(),
    block_open=("<tool_calls>",),
    block_close="</tool_calls>",
    drop=("<|eom|>",),
    syntax=_list_syntax("<tool_calls>", "<tool_calls>[", "]</tool_calls>"),
)
# Tencent Hunyuan-A13B: <think>..</think><answer>..</answer>; plain replies start "助手："
HUNYUAN_A13B = Format(
    name="hunyuan_a13b",
    reasoning=THINK,
    body=Envelope(),
    block_open=("<tool_calls>",),
    block_close="</tool_calls>",
    start_drop=("<answer>", "助手："),
    drop=("<answer>", "</answer>", "<|eos|>", "<|extra_0|>"),
    syntax=_list_syntax("<tool_calls>", "<tool_calls>[", "]</tool_calls>"),
)
# Salesforce xLAM: a JSON list, bare at the answer's start, after [TOOL_CALLS], in <tool_call>
# tags or in a ```json fence
XLAM = Format(
    name="xlam",
    reasoning=THINK,
    body=Envelope(),
    block_open=("```json", "[TOOL_CALLS]", "<tool_call>"),
    block_close=("```", "</tool_call>"),
    start_triggers=("[TOOL_CALLS]",),  # checked before the bare "[" that starts it
    keep_triggers=("[",),
    drop_closers=False,
    drop=("<|eot_id|>", "<|im_end|>"),
    syntax=_list_syntax("[", "[", "]"),
)
# Phi-4-mini: functools[{...}, ...] (no closing marker)
PHI4_MINI_JSON = Format(
    name="phi4_mini_json",
    reasoning=None,
    body=Envelope(),
    block_open=("functools[",),
    drop=("<|end|>",),
    syntax=_list_syntax("functools[", "functools[", "]"),
)
# Swiss AI Apertus: <|tools_prefix|>[{"NAME": {arguments}}, ...]<|tools_suffix|>; reasoning in
# <|inner_prefix|> .. <|inner_suffix|>, which a tool call may end
APERTUS = Format(
    name="apertus",
    reasoning=Reasoning("<|inner_prefix|>", "<|inner_suffix|>", ("<|tools_prefix|>",)),
    body=Envelope(keyed=True),
    block_open=("<|tools_prefix|>",),
    block_close="<|tools_suffix|>",
    drop=("<|assistant_end|>",),
    syntax=_list_syntax("<|tools_prefix|>", "<|tools_prefix|>[", "]<|tools_suffix|>", begin='{"{name}": '),
)

# Cohere Command A (cmd3) and its successors (cmd4): reasoning in <|START_THINKING|> ..
# <|END_THINKING|>, calls as a JSON list of {"tool_call_id", "tool_name", "parameters"} in
# <|START_ACTION|> .. <|END_ACTION|>, the answer framed by <|START_RESPONSE|> (cmd3) or
# <|START_TEXT|> (cmd4). The model's tool_call_id restarts at 0 every turn: call ids are ours.
_COHERE_FRAMING = ("<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|START_TEXT|>", "<|END_TEXT|>",
                   "<|END_OF_TURN_TOKEN|>")
COHERE_COMMAND3 = Format(
    name="cohere_command3",
    reasoning=Reasoning("<|START_THINKING|>", "<|END_THINKING|>", ("<|START_ACTION|>",)),
    body=Envelope(name_keys=("tool_name",), args_keys=("parameters",), id_keys=()),
    block_open=("<|START_ACTION|>",),
    block_close="<|END_ACTION|>",
    drop=_COHERE_FRAMING,
    syntax=_list_syntax("<|START_ACTION|>", "<|START_ACTION|>[", "]<|END_ACTION|>",
                        begin='{"tool_name": "{name}", "parameters": '),
)
COHERE_COMMAND4 = replace(COHERE_COMMAND3, name="cohere_command4")

FORMATS = (LLAMA3_JSON, LLAMA4_JSON, GRANITE, GRANITE_20B_FC, JAMBA, HUNYUAN_A13B, XLAM, PHI4_MINI_JSON,
           APERTUS, COHERE_COMMAND3, COHERE_COMMAND4)
