"""DeepSeek formats: R1 and V3 (fenced JSON), V3.1 (bare JSON), V3.2 and V4 (DSML)."""
from __future__ import annotations

import re
from dataclasses import replace

from parsing.spec import Format, Header, Reasoning, Xml

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_END = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
EOS = "<｜end▁of▁sentence｜>"
THINK = Reasoning("<think>", "</think>")

_FENCED = r"\s*(?:function)?\s*" + re.escape(SEP) + r"\s*(?P<name>[^\n`]+?)\s*(?:```\s*(?:json)?)?\s*"
_BARE = r"\s*(?P<name>[^\n<]+?)\s*" + re.escape(SEP) + r"\s*"


def _v3_like(name: str, patterns: tuple[str, ...], begin: str, end: str) -> Format:
    return Format(
        name=name,
        reasoning=THINK,
        body=Header(patterns),
        block_open=(CALLS_BEGIN,),
        block_close=CALLS_END,
        call_open=(CALL_BEGIN,),
        call_close=CALL_END,
        drop=(EOS,),
        token_markers=(SEP,),
        syntax=(("args", "json"), ("trigger", CALLS_BEGIN), ("block_begin", CALLS_BEGIN),
                ("begin", begin), ("end", end), ("separator", "\n" if "json" in begin else ""),
                ("block_end", CALLS_END)),
    )


_V3_BEGIN = CALL_BEGIN + "function" + SEP + "{name}\n```json\n"
_V3_END = "\n```" + CALL_END
DEEPSEEK_R1 = _v3_like("deepseek_r1", (_FENCED,), _V3_BEGIN, _V3_END)
DEEPSEEK_V3 = _v3_like("deepseek_v3", (_FENCED,), _V3_BEGIN, _V3_END)
DEEPSEEK_V31 = _v3_like("deepseek_v31", (_BARE, _FENCED), CALL_BEGIN + "{name}" + SEP, CALL_END)

DSML = "｜DSML｜"
_DSML_XML = Xml(
    name_pattern=r'\s*(?P<name>[^"]+)"\s*',
    name_stop=">",
    name_eat=">",
    param_open="<" + DSML + 'parameter name="',
    param_stop=">",
    param_pattern=r'(?P<key>[^"]+)"(?:\s+string="(?P<string>true|false)")?\s*',
    value_close="</" + DSML + "parameter>",
    strip_newline=False,
)


# SGLang also reads DSML without the ｜DSML｜ prefix, prefixed and unprefixed tags mixed, and
# a JSON object as an invoke's whole body
_PLAIN_XML = replace(_DSML_XML, param_open=_DSML_XML.param_open + ('<parameter name="',),
                     value_close=_DSML_XML.value_close + ("</parameter>",), json_body=True)


def _dsml(name: str, block: str, in_reasoning: bool, plain: bool = False) -> Format:
    tags = (DSML, "") if plain else (DSML,)
    open_, close = "<" + DSML + block + ">", "</" + DSML + block + ">"
    invoke = "<" + DSML + 'invoke name="'
    return Format(
        name=name,
        reasoning=Reasoning("<think>", "</think>", (open_,) if in_reasoning else ()),
        body=_PLAIN_XML if plain else _DSML_XML,
        block_open=tuple("<" + t + block + ">" for t in tags),
        block_close=tuple("</" + t + block + ">" for t in tags),
        call_open=tuple("<" + t + 'invoke name="' for t in tags),
        call_close=tuple("</" + t + "invoke>" for t in tags),
        drop=(EOS,),
        syntax=(("args", "xml"), ("trigger", open_), ("block_begin", open_ + "\n"),
                ("begin", invoke + '{name}">\n'), ("end", "</" + DSML + "invoke>\n"),
                ("param_begin", "<" + DSML + 'parameter name="{key}" string="{string}">'),
                ("param_end", "</" + DSML + "parameter>\n"), ("separator", ""),
                ("block_end", close)),
    )


DEEPSEEK_V32 = _dsml("deepseek_v32", "function_calls", False, plain=True)
DEEPSEEK_V4 = _dsml("deepseek_v4", "tool_calls", True)

FORMATS = (DEEPSEEK_R1, DEEPSEEK_V3, DEEPSEEK_V31, DEEPSEEK_V32, DEEPSEEK_V4)
