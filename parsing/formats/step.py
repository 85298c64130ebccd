"""StepFun Step-3: steptml XML calls inside fullwidth-bar call tokens; reasoning opened by the prompt."""
from __future__ import annotations

from parsing.spec import Format, Reasoning, Xml

CALLS_BEGIN, CALLS_END = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
CALL_BEGIN, CALL_END = "<｜tool_call_begin｜>", "<｜tool_call_end｜>"
SEP = "<｜tool_sep｜>"
INVOKE = '<steptml:invoke name="'

# <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="NAME">
# <steptml:parameter name="K">V</steptml:parameter></steptml:invoke><｜tool_call_end｜>...
# The call-begin, separator and call-end tokens are framing between invokes.
STEP3 = Format(
    name="step3",
    reasoning=Reasoning("<think>", "</think>", (CALLS_BEGIN,), starts_open=True),
    body=Xml(
        name_pattern=r'\s*(?P<name>[^"]+)"\s*',
        name_stop=">",
        name_eat=">",
        param_open='<steptml:parameter name="',
        param_stop=">",
        param_pattern=r'(?P<key>[^"]+)"\s*',
        value_close="</steptml:parameter>",
        strip_newline=True,
    ),
    block_open=(CALLS_BEGIN,),
    block_close=CALLS_END,
    call_open=(INVOKE,),
    call_close="</steptml:invoke>",
    drop=("<|EOT|>",),
    token_markers=(CALL_BEGIN, CALL_END, SEP),
    syntax=(("args", "xml"), ("trigger", CALLS_BEGIN), ("block_begin", CALLS_BEGIN),
            ("begin", CALL_BEGIN + "function" + SEP + INVOKE + '{name}">'), ("end", "</steptml:invoke>" + CALL_END),
            ("param_begin", '<steptml:parameter name="{key}">'), ("param_end", "</steptml:parameter>"),
            ("separator", ""), ("block_end", CALLS_END)),
)

FORMATS = (STEP3,)
