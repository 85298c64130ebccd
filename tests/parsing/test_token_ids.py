"""Markers that reach the stream only as token ids (control tokens under skip_special_tokens):
feed(text, token_ids) recognises a marker from its id or from its text, never twice."""
from __future__ import annotations

import random

import pytest

import parsing
from parsing.stream import with_markers
from tests.parsing.harness import check_events, key


def tokenize(text: str, specials: list[str], rng: random.Random) -> list[tuple[str, int, bool]]:
    """A toy tokenizer: each special marker is one token (id 1000 + its index), other text is
    cut into tokens of 1-4 characters (ids below 1000). Returns (text, id, special)."""
    tokens: list[tuple[str, int, bool]] = []
    i = 0
    while i < len(text):
        hit = next((m for m in specials if text.startswith(m, i)), None)
        if hit is not None:
            tokens.append((hit, 1000 + specials.index(hit), True))
            i += len(hit)
            continue
        j = i + rng.randint(1, 4)
        while any(m in text[i:j] or text.startswith(m, k) for m in specials for k in range(i + 1, min(j, len(text)))):
            j -= 1
        tokens.append((text[i:j], rng.randrange(1000), False))
        i = j
    return tokens


def deltas(tokens: list[tuple[str, int, bool]], skip_special: bool, rng: random.Random, group: int
           ) -> list[tuple[str, list[int]]]:
    """Engine deltas of up to `group` tokens; a special token is never between two text tokens
    of one delta (the case the stream cannot place, documented)."""
    out: list[tuple[str, list[int]]] = []
    i = 0
    while i < len(tokens):
        n = rng.randint(1, group)
        chunk = tokens[i:i + n]
        for k in range(1, len(chunk) - 1):  # cut so that specials sit at a delta's ends
            if chunk[k][2] and not all(t[2] for t in chunk[:k]):
                chunk = chunk[:k + 1]
                break
        i += len(chunk)
        text = "".join(t for t, _, special in chunk if not (special and skip_special))
        out.append((text, [tid for _, tid, _ in chunk]))
    return out


def run(fmt: str, pieces: list[tuple[str, list[int]]], ids: dict[int, str] | None, tools=None) -> list:
    s = parsing.open_stream(fmt, tools, marker_ids=ids)
    events: list = []
    for text, token_ids in pieces:
        events += s.feed(text, token_ids)
    return events + s.close()


MISTRAL = 'Let me check.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}'
GPT_OSS = ('<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary '
           'to=functions.get_weather <|constrain|>json<|message|>{"city": "Oslo"}<|call|>')
GIGACHAT31 = 'Сейчас узнаю.<|message_sep|>\n\n<|function_call|>{"name": "get_weather", "arguments": {"city": "Москва"}}</s>'
KIMI = ('<think>Two.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0'
        '<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>')


@pytest.mark.parametrize("fmt,text", [("mistral", MISTRAL), ("gpt_oss", GPT_OSS), ("kimi_k2", KIMI),
                                      ("gigachat3", GIGACHAT31)])
@pytest.mark.parametrize("skip_special", [True, False])
def test_markers_from_ids_or_text(fmt: str, text: str, skip_special: bool) -> None:
    specials = [m for m in parsing.marker_tokens(fmt) if m.startswith(("<|", "["))]
    ids = {1000 + i: m for i, m in enumerate(specials)}
    whole = key(parsing.parse(text, fmt), fmt == "kimi_k2")
    assert whole[2], "the reference parse has calls"
    rng = random.Random(fmt)
    for group in (1, 1, 3, 8):
        tokens = tokenize(text, specials, rng)
        events = run(fmt, deltas(tokens, skip_special, rng, group), ids)
        check_events(events)
        assert key(parsing.collect(events), fmt == "kimi_k2") == whole


def test_skipped_markers_without_ids_are_lost() -> None:
    """Without the ids a skipped [TOOL_CALLS] leaves plain text: the reason ids exist."""
    rng = random.Random(0)
    tokens = tokenize(MISTRAL, ["[TOOL_CALLS]", "[ARGS]"], rng)
    parsed = parsing.collect(run("mistral", deltas(tokens, True, rng, 1), None))
    assert parsed.tool_calls == [] and "get_weather" in parsed.content


def test_marker_placement_by_token_order() -> None:
    ids = {7: "[TOOL_CALLS]", 8: "[ARGS]"}
    assert with_markers("get", [7, 1], ids) == "[TOOL_CALLS]get"
    assert with_markers("get", [1, 8], ids) == "get[ARGS]"
    assert with_markers("", [7, 8], ids) == "[TOOL_CALLS][ARGS]"
    assert with_markers("[TOOL_CALLS]get", [7, 1], ids) == "[TOOL_CALLS]get"  # rendered: not doubled
    assert with_markers("a b", [1, 2], ids) == "a b"


def test_empty_text_with_a_marker_id_still_counts() -> None:
    s = parsing.open_stream("mistral", marker_ids={7: "[TOOL_CALLS]", 8: "[ARGS]"})
    events = s.feed("Sure.", [1]) + s.feed("", [7]) + s.feed("get_time", [2, 3]) + s.feed("", [8])
    events += s.feed("{}", [4]) + s.close()
    parsed = parsing.collect(events)
    assert parsed.content == "Sure." and [c.name for c in parsed.tool_calls] == ["get_time"]
