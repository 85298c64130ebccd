"""Linear time, by counting: the text a stream re-scans stays bounded, so work per character
is flat from small to large outputs (no timing involved)."""
from __future__ import annotations

import json

import pytest

import parsing

UNIT = 'Line with <b>tags</b>, {"braces": [1]}, </tool_call> and "quotes" é東.\n'


def long_output(fmt: str, size: int) -> str:
    """A realistic output whose reasoning, content and arguments each grow with size."""
    n = max(1, size // (4 * len(UNIT)))
    text = UNIT * n
    if fmt == "qwen3":
        args = json.dumps({"code": text, "items": list(range(n))})
        return (f"<think>\n{text}</think>\n\n{text}<tool_call>\n"
                f'{{"name": "run", "arguments": {args}}}\n</tool_call>')
    if fmt == "qwen3_coder":
        code = text.replace("</tool_call>", "</parameter> x")
        return (f"<think>\n{text}</think>\n\n{text}<tool_call>\n<function=run>\n<parameter=code>\n{code}\n"
                f"</parameter>\n<parameter=items>\n{list(range(n))}\n</parameter>\n</function>\n</tool_call>")
    if fmt == "kimi_k2":
        args = json.dumps({"code": text}, indent=2)
        return (f"<think>{text}</think>{text}<|tool_calls_section_begin|><|tool_call_begin|>functions.run:0"
                f"<|tool_call_argument_begin|>{args}<|tool_call_end|><|tool_calls_section_end|>")
    if fmt == "gpt_oss":
        args = json.dumps({"code": text})
        return (f"<|channel|>analysis<|message|>{text}<|end|><|start|>assistant<|channel|>commentary "
                f"to=functions.run <|constrain|>json<|message|>{args}<|call|>")
    raise ValueError(fmt)


TOOLS = [{"type": "function", "function": {"name": "run", "parameters": {"type": "object", "properties": {
    "code": {"type": "string"}, "items": {"type": "array"}}}}}]


def work_per_char(fmt: str, text: str, chunk: int) -> tuple[float, int]:
    """(characters the scanner looked at per input character, the most it ever held)."""
    s = parsing.open_stream(fmt, TOOLS)
    work = max_held = 0
    events: list = []
    for i in range(0, len(text), chunk):
        piece = text[i:i + chunk]
        work += s.num_held + len(piece)
        events += s.feed(piece)
        max_held = max(max_held, s.num_held)
    events += s.close()
    parsed = parsing.collect(events)
    assert len(parsed.tool_calls) == 1 and json.loads(parsed.tool_calls[0].arguments)
    return work / len(text), max_held


@pytest.mark.parametrize("fmt", ["qwen3", "qwen3_coder", "kimi_k2", "gpt_oss"])
def test_work_per_char_is_flat(fmt: str) -> None:
    small, held_small = work_per_char(fmt, long_output(fmt, 4_000), 1)
    large, held_large = work_per_char(fmt, long_output(fmt, 120_000), 1)
    assert max(held_small, held_large) <= 40
    assert small < 3 and large < 3  # markup-dense text: a few held characters per "<"
    assert large <= small * 1.1


@pytest.mark.parametrize("fmt", ["qwen3", "qwen3_coder"])
def test_one_megabyte_in_token_chunks(fmt: str) -> None:
    text = long_output(fmt, 1_000_000)
    per_char, held = work_per_char(fmt, text, 4)
    assert held <= 40 and per_char < 3


def generic_output(fmt: str, size: int) -> str:
    """Reasoning, content and one call whose string argument carries most of the text, written
    from the format's own call syntax (every format)."""
    syn = parsing.call_syntax(fmt)
    n = max(1, size // (4 * len(UNIT)))
    text = UNIT * n
    value = (UNIT * (2 * n)).replace("</", "< /")
    if syn["args"] == "json":
        body = json.dumps({"code": value, "items": list(range(n))})
    else:
        body = syn["param_begin"].replace("{key}", "code").replace("{string}", "true") + value + syn["param_end"]
    call = syn.get("block_begin", "") + syn["begin"].replace("{name}", "run").replace("{index}", "0") + body
    call += syn["end"] + syn.get("block_end", "")
    if fmt == "gpt_oss":
        return f"<|channel|>analysis<|message|>{text}<|end|><|start|>assistant" + call
    tags = parsing.reasoning_tags(fmt)
    head = f"{tags[0]}{text}{tags[1]}" if tags else ""
    from parsing.compiled import COMPILED
    if syn["trigger"] in COMPILED[fmt].machine.fmt.keep_triggers:
        return head + call + text
    return head + text + call


@pytest.mark.parametrize("fmt", parsing.formats())
def test_every_format_is_linear(fmt: str) -> None:
    def measure(size: int) -> tuple[float, int]:
        text = generic_output(fmt, size)
        s = parsing.open_stream(fmt, TOOLS)
        work = max_held = 0
        events: list = []
        for i in range(len(text)):
            work += s.num_held + 1
            events += s.feed(text[i])
            max_held = max(max_held, s.num_held)
        events += s.close()
        (call,) = parsing.collect(events).tool_calls
        assert json.loads(call.arguments)["code"].startswith("Line with")
        return work / len(text), max_held

    small, held_small = measure(2_000)
    large, held_large = measure(20_000)
    assert max(held_small, held_large) <= 40, (held_small, held_large)
    assert small < 3 and large < 3 and large <= small * 1.1, (small, large)
