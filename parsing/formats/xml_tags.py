"""Formats with XML-like parameters: qwen3_coder and its aliases, seed_oss, glm, minimax_m2."""
from __future__ import annotations

from dataclasses import replace

from parsing.spec import Format, Reasoning, Xml

_FUNCTION_XML = Xml(
    name_pattern=r"\s*(?P<name>[^>]*?)\s*",
    name_stop=">",
    name_eat=">",
    param_open="<parameter=",
    param_stop=">",
    param_pattern=r"\s*(?P<key>[^>]*?)\s*",
    value_close="</parameter>",
    strip_newline=True,
)
_FUNCTION_SYNTAX = (("args", "xml"), ("begin", "<function={name}>\n"), ("end", "</function>\n"),
                    ("param_begin", "<parameter={key}>\n"), ("param_end", "\n</parameter>\n"))

QWEN3_CODER = Format(
    name="qwen3_coder",
    reasoning=Reasoning("<think>", "</think>", ("<tool_call>\n<function=", "<tool_call><function=")),
    body=_FUNCTION_XML,
    block_open=("<tool_call>",),
    block_close="</tool_call>",
    call_open=("<function=",),
    call_close="</function>",
    bare_calls=True,
    drop=("<|im_end|>", "<|endoftext|>"),
    syntax=_FUNCTION_SYNTAX + (("trigger", "<tool_call>"), ("block_begin", "<tool_call>\n"),
                               ("block_end", "</tool_call>"), ("separator", "\n"),
                               ("block_per_call", True)),
)
# vLLM's qwen3_xml parser reads the same syntax (Qwen3 / Qwen3.5 models that are not coders)
QWEN3_XML = replace(QWEN3_CODER, name="qwen3_xml")
# Xiaomi MiMo and NVIDIA Nemotron 3 (nemotron_v3 reasoning) use the same syntax and tags
MIMO = replace(QWEN3_CODER, name="mimo")
NEMOTRON_V3 = replace(QWEN3_CODER, name="nemotron_v3")
# Step-3.5: the same tool syntax; the prompt opens reasoning
STEP3P5 = replace(QWEN3_CODER, name="step3p5", reasoning=replace(QWEN3_CODER.reasoning, starts_open=True))

SEED_OSS = Format(
    name="seed_oss",
    reasoning=Reasoning("<seed:think>", "</seed:think>"),
    body=_FUNCTION_XML,
    block_open=("<seed:tool_call>",),
    block_close="</seed:tool_call>",
    call_open=("<function=",),
    call_close="</function>",
    drop=("<seed:eos>",),
    syntax=_FUNCTION_SYNTAX + (("trigger", "<seed:tool_call>"), ("block_begin", "<seed:tool_call>\n"),
                               ("block_end", "</seed:tool_call>"), ("separator", "\n"),
                               ("block_per_call", True)),
)

_GLM_XML = Xml(
    name_pattern=r"\s*(?P<name>[^<\n]*?)\s*",
    name_stop="\n<",
    name_eat="\n",
    param_open="<arg_key>",
    param_stop="</arg_key>",
    param_pattern=r"\s*(?P<key>.*?)\s*",
    value_close="</arg_value>",
    strip_newline=False,
    value_open="<arg_value>",
)


def _glm(name: str, ends: tuple[str, ...], nl: str) -> Format:
    return Format(
        name=name,
        reasoning=Reasoning("<think>", "</think>", ends),
        body=_GLM_XML,
        block_open=("<tool_call>",),
        block_close="</tool_call>",
        drop=("<|user|>", "<|observation|>"),
        syntax=(("args", "xml"), ("trigger", "<tool_call>"), ("begin", "<tool_call>{name}" + nl),
                ("end", "</tool_call>"), ("param_begin", "<arg_key>{key}</arg_key>" + nl + "<arg_value>"),
                ("param_end", "</arg_value>" + nl), ("separator", nl), ("block_per_call", True)),
    )


GLM45 = _glm("glm45", (), "\n")
GLM47 = _glm("glm47", ("<tool_call>",), "")

MINIMAX_M2 = Format(
    name="minimax_m2",
    reasoning=Reasoning("<think>", "</think>"),
    body=Xml(
        name_pattern=r'\s*(?P<name>[^"]+)"\s*',
        name_stop=">",
        name_eat=">",
        param_open='<parameter name="',
        param_stop=">",
        param_pattern=r'(?P<key>[^"]+)"\s*',
        value_close="</parameter>",
        strip_newline=True,
    ),
    block_open=("<minimax:tool_call>",),
    block_close="</minimax:tool_call>",
    call_open=('<invoke name="',),
    call_close="</invoke>",
    drop=("[e~[",),
    syntax=(("args", "xml"), ("trigger", "<minimax:tool_call>"), ("block_begin", "<minimax:tool_call>\n"),
            ("begin", '<invoke name="{name}">\n'), ("end", "</invoke>\n"),
            ("param_begin", '<parameter name="{key}">'), ("param_end", "</parameter>\n"),
            ("separator", ""), ("block_end", "</minimax:tool_call>")),
)

# vLLM's minimax_m2_append_think: reasoning stays in the content, which starts with the
# <think> the prompt opened (MiniMax wants it kept in the history)
MINIMAX_M2_APPEND_THINK = replace(MINIMAX_M2, name="minimax_m2_append_think", reasoning=None,
                                  content_prefix="<think>")

FORMATS = (QWEN3_CODER, QWEN3_XML, MIMO, NEMOTRON_V3, STEP3P5, SEED_OSS, GLM45, GLM47, MINIMAX_M2, MINIMAX_M2_APPEND_THINK)
