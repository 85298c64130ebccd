"""Structural tags: begin/schema/end tool calls, separators, free text with triggers."""

from __future__ import annotations

import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
ARGS = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": False}
CALL = '<tool_call>{"name":"f","arguments":{"x":1}}</tool_call>'
SPEC = {
    "alternatives": [
        {"begin": '<tool_call>{"name":"f","arguments":', "schema": ARGS, "end": "}</tool_call>"},
        {"begin": '<tool_call>{"name":"g","arguments":', "schema": {"type": "object", "additionalProperties": False}, "end": "}</tool_call>"},
    ],
    "separator": "\n",
    "allow_free_text": False,
}


@pytest.mark.parametrize(
    "spec_update, text, ok",
    [
        ({}, CALL, True),
        ({}, CALL + "\n" + CALL.replace('"f"', '"g"').replace('{"x":1}', "{}"), True),
        ({}, "", False),
        ({}, "hi " + CALL, False),
        ({}, CALL.replace("1", '"1"'), False),
        ({}, CALL + CALL, False),
        ({"max_calls": 1}, CALL + "\n" + CALL, False),
        ({"min_calls": 0}, "", True),
        ({"allow_free_text": True}, "hello", True),
        ({"allow_free_text": True}, "hi " + CALL + " bye " + CALL, True),
        ({"allow_free_text": True}, 'hi <tool_call>{"name":"f","arguments":{"y":1}}</tool_call>', False),
        ({"allow_free_text": True, "min_calls": 1}, "hello", False),
        ({"allow_free_text": True, "min_calls": 1}, "hello " + CALL, True),
        ({"allow_free_text": True, "max_calls": 1}, "hi " + CALL + " bye", True),
        ({"allow_free_text": True, "max_calls": 1}, "hi " + CALL + " bye " + CALL, False),
        ({"allow_free_text": True, "max_calls": 1}, CALL + CALL.replace('"f"', '"g"').replace('{"x":1}', "{}"), False),
        ({"allow_free_text": True, "max_calls": 1}, CALL + ' <tool_call>{"name":"f","argument', True),
        ({"allow_free_text": True, "min_calls": 2, "max_calls": 3}, CALL + " and " + CALL, True),
        ({"allow_free_text": True, "min_calls": 2, "max_calls": 3}, CALL + " only", False),
        ({"allow_free_text": True, "min_calls": 2, "max_calls": 3}, CALL + CALL + CALL + CALL, False),
        ({"allow_free_text": True, "min_calls": 2}, CALL + CALL + CALL + CALL, True),
    ],
)
def test_structural_tag_language(spec_update, text, ok):
    g = grammar.compile_structural_tag({**SPEC, **spec_update}, VOCAB)
    assert accepts_text(g, text) == ok


@pytest.mark.parametrize(
    "spec",
    [
        {"alternatives": []},
        {"alternatives": [{"begin": "", "schema": {}, "end": "x"}]},
        {"alternatives": [{"begin": "<a>", "schema": {"not": {}}, "end": "</a>"}]},
        {**SPEC, "bogus": 1},
    ],
)
def test_bad_structural_specs_raise(spec):
    with pytest.raises(grammar.GrammarError):
        grammar.compile_structural_tag(spec, VOCAB)
