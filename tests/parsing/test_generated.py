"""Generated outputs: calls rendered from each format's call_syntax data parse back exactly,
under random chunkings (hypothesis)."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parsing
from parsing.compiled import COMPILED
from tests.parsing.harness import check_events, random_chunks

TEXT = st.text(alphabet=st.sampled_from(list("abc xyz<>{}[]\"'\\/:=|\n\t é東🌧")), max_size=30)
NAMES = st.from_regex(r"[a-z][a-z_]{0,9}", fullmatch=True)
KEYS = st.from_regex(r"[a-z][a-z_]{0,7}", fullmatch=True)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-999, 10**9) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
XML_VALUES = TEXT.map(lambda t: t.strip("\n")).filter(lambda t: "</" not in t)


def render_calls(fmt: str, calls: list[tuple[str, dict]]) -> str:
    syn = parsing.call_syntax(fmt)
    parts = []
    for index, (name, args) in enumerate(calls):
        if syn["args"] == "json":
            body = json.dumps(args, ensure_ascii=False)
        else:
            body = "".join(syn["param_begin"].replace("{key}", k).replace("{string}", "true") + v
                           + syn["param_end"] for k, v in args.items())
        call = syn["begin"].replace("{name}", name).replace("{index}", str(index)) + body + syn["end"]
        if syn.get("block_per_call"):
            call = syn.get("block_begin", "") + call + syn.get("block_end", "")
        parts.append(call)
    joined = syn["separator"].join(parts)
    if not syn.get("block_per_call"):
        joined = syn.get("block_begin", "") + joined + syn.get("block_end", "")
    return joined


def render(fmt: str, reasoning: str, content: str, calls: list[tuple[str, dict]]) -> str:
    if fmt == "gpt_oss":
        text = f"<|channel|>analysis<|message|>{reasoning}<|end|>" if reasoning else ""
        if content:
            text += f"<|start|>assistant<|channel|>final<|message|>{content}<|end|>"
        if calls:
            text += "<|start|>assistant" + render_calls(fmt, calls[:1])
        return text
    tags = parsing.reasoning_tags(fmt)
    r = COMPILED[fmt].machine.fmt.reasoning
    # a format whose prompt opens reasoning always writes the close tag
    text = f"{tags[0]}{reasoning}{tags[1]}" if tags and (reasoning or r.starts_open) else ""
    return text + content + (render_calls(fmt, calls) if calls else "")


def expected_content(fmt: str, text: str, content: str) -> str | None:
    """What the parse's content is: the format's content prefix comes first."""
    prefix = COMPILED[fmt].machine.fmt.content_prefix
    return (prefix + content if text else content) or None


@st.composite
def outputs(draw, fmt: str):
    xml = parsing.call_syntax(fmt)["args"] == "xml"
    values = XML_VALUES if xml else JSON_VALUES
    calls = draw(st.lists(st.tuples(NAMES, st.dictionaries(KEYS, values, max_size=3)), max_size=3))
    if fmt == "gpt_oss":
        calls = calls[:1]
    has_tags = parsing.reasoning_tags(fmt) is not None or fmt == "gpt_oss"
    reasoning = draw(TEXT).strip() if has_tags else ""
    spec = COMPILED[fmt].machine.fmt
    # calls that open only at the answer's start ("[", "{") leave no room for content
    content = draw(TEXT).strip() if not spec.keep_triggers else ""
    if fmt in ("mistral", "mistral_legacy"):
        content = content.replace("[", "(")
    return reasoning, content, calls


@pytest.mark.parametrize("fmt", parsing.formats())
def test_rendered_calls_round_trip(fmt: str) -> None:
    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
    @given(out=outputs(fmt), seed=st.integers(0, 2**16))
    def check(out, seed) -> None:
        reasoning, content, calls = out
        text = render(fmt, reasoning, content, calls)
        parsed = parsing.parse(text, fmt)
        assert parsed.reasoning == (reasoning or None)
        assert parsed.content == expected_content(fmt, text, content)
        assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == calls
        rng = random.Random(seed)
        events = []
        s = parsing.open_stream(fmt)
        for chunk in random_chunks(text, rng, rng.choice((1, 4, 16))):
            events += s.feed(chunk)
        events += s.close()
        check_events(events)
        streamed = parsing.collect(events)
        assert (streamed.reasoning, streamed.content) == (parsed.reasoning, parsed.content)
        assert [(c.name, c.arguments) for c in streamed.tool_calls] == [
            (c.name, c.arguments) for c in parsed.tool_calls]

    check()


@pytest.mark.parametrize("fmt", parsing.formats())
def test_arguments_stream_before_the_call_ends(fmt: str) -> None:
    value = "streamed text " * 20
    text = render(fmt, "", "", [("write", {"body": value})])
    cut = text.index(value) + len(value) // 2
    s = parsing.open_stream(fmt)
    events = []
    for ch in text[:cut]:
        events += s.feed(ch)
    sent = "".join(e.text for e in events if isinstance(e, parsing.ToolCallArgs))
    assert "streamed text streamed" in sent  # the value flows while it is being written
    for ch in text[cut:]:
        events += s.feed(ch)
    events += s.close()
    assert json.loads(parsing.collect(events).tool_calls[0].arguments) == {"body": value}
