"""Flexible whitespace (issue 39): one bounded gap between tokens, never two gaps back to back.

`{ ws body ws }` with an empty body put two free whitespace runs one after the other, which the
DFA tracks as a state per pair of counts (a chain of 49 states where one gap takes 25), each row
built cold by a mask fill. The whitespace after `{` / `[` now leads the first member.

A gap is still a state per count (25), but the C walk counts a token's whitespace against the
bound instead of stepping through them (grammar/automaton/_dfa.c `ws_run_of`, grammar/masks/_walk.c
`ws_step`), and the compile's warm-up leaves a gap's later states unbuilt: the masks must stay those
of the pushdown automaton at every count.
"""

from __future__ import annotations

import numpy as np
import pytest

import grammar
from grammar.frontends.json_text import MAX_FLEXIBLE_WS
from tests.grammar.helpers import accepts_text

SCHEMAS = [
    {"type": "array", "items": {"type": "integer"}},
    {"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 0},
    {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 2},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
     "dependentRequired": {"a": ["b"]}},
    {},  # any value: the @any rule's objects and arrays
]


def _full_dfa_size(g: grammar.CompiledGrammar) -> int:
    dfa = g.dfa
    todo = list(dfa.rule_start)
    seen = set(todo)
    while todo:
        d = todo.pop()
        dfa.compute_row(d)
        nxt = [int(t) for t in np.unique(dfa.trans[d]) if t >= 0] + [r for _, r in dfa.calls(d)]
        for t in nxt:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return len(seen)


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_one_gap_in_empty_containers(bytes_vocab, schema):
    g = grammar.compile_json_schema(schema, bytes_vocab, whitespace="flexible")
    empty = "[{}]" if schema == {} else ("[]" if schema["type"] == "array" else "{}")
    gap = " " * MAX_FLEXIBLE_WS
    inner = empty[:-1] + gap + empty[-1:]
    assert accepts_text(g, inner)
    assert accepts_text(g, empty[:-1] + "\n" + empty[-1:])
    assert not accepts_text(g, empty[:-1] + gap + " " + empty[-1:])  # one gap, bounded (two before: up to 48)
    full = '{"a": 1, "b": 2}' if "properties" in schema or schema.get("additionalProperties") else "[1, 2]"
    if "additionalProperties" in schema and "properties" not in schema:
        full = '{"x": 1,\n "y" : 2}'
    elif "properties" in schema and schema.get("additionalProperties") is False:
        full = '{"a" :\n1}'
    assert accepts_text(g, full.replace("{", "{" + gap, 1).replace("[", "[" + gap, 1))
    assert accepts_text(g, full.replace("}", gap + "}").replace("]", gap + "]"))


def test_flexible_array_dfa_is_one_chain_per_gap(bytes_vocab):
    """`[ ws item (ws , ws item)* ws ]` of integers: three gaps of MAX_FLEXIBLE_WS + 1 states and a
    few for the number and brackets (106 with the empty array's double gap)."""
    g = grammar.compile_json_schema({"type": "array", "items": {"type": "integer"}}, bytes_vocab, whitespace="flexible")
    assert _full_dfa_size(g) <= 3 * (MAX_FLEXIBLE_WS + 1) + 10
    compact = grammar.compile_json_schema({"type": "array", "items": {"type": "integer"}}, bytes_vocab)
    assert accepts_text(compact, "[]") and not accepts_text(compact, "[ ]")


# ---- the walk counts a gap's whitespace instead of stepping through its states ----

WS_PIECES = [b" ", b"\t", b"\n"]
WS_SCHEMAS = SCHEMAS + [
    {"type": "object", "properties": {k: {"type": "string"} for k in "abcdef"}},  # gaps side by side: `ws ,` per optional member
    {"$defs": {"t": {"type": "object", "properties": {"k": {"$ref": "#/$defs/t"}, "v": {"type": "integer"}}}},
     "$ref": "#/$defs/t"},  # a called rule after a gap
    {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}},
]


def _ws_vocab() -> grammar.Vocabulary:
    """Every byte, whitespace runs around the gap's bound (alone and before a value's first bytes,
    or after a comma or colon), and a few JSON pieces."""
    tokens: list[bytes | None] = [bytes([i]) for i in range(256)]
    for n in (2, 3, MAX_FLEXIBLE_WS - 1, MAX_FLEXIBLE_WS, MAX_FLEXIBLE_WS + 1, 2 * MAX_FLEXIBLE_WS):
        for i, w in enumerate(WS_PIECES):
            run = (w * n)[:n] if i == 0 else b"".join(WS_PIECES[(i + j) % 3] for j in range(n))
            tokens += [run, run + b'"', run + b"1", run + b"}", b"," + run, b":" + run + b'"a', run + b"]"]
    tokens += [b'": ', b'", "', b"\n  }", b"[\n  ", b", ", b"{\n  \"", b"true", b" true", b"null"]
    tokens = list(dict.fromkeys(tokens))
    return grammar.Vocabulary(tokens, [], len(tokens))


def _brute(g: grammar.CompiledGrammar, state) -> set[int]:
    return {i for i, data in enumerate(g.vocab.token_bytes) if data and g.advance(state, data)}


def _allowed(g: grammar.CompiledGrammar, m) -> set[int]:
    bitmask = grammar.allocate_bitmask(1, g.vocab)
    m.fill_bitmask(bitmask, 0)
    bits = bitmask[0].numpy().view(np.uint32)
    return {i for i in range(len(g.vocab.token_bytes)) if (bits[i >> 5] >> (i & 31)) & 1}


TEXTS = {  # a document per schema, with whitespace in its gaps
    3: b'{"a":\n  1 ,  "b" : 2\n}', 4: b'{ "a" :\n 1 }', 5: b'{"x": 1,\t"y":2 }', 6: b'{ "b": 1 }', 7: b'[ {"a" : [ ]} , 1 ]',
    8: b'{"a":\n  "x" ,  "c" : "y",\n"f":"z"\n}', 9: b'{"k": {"k":{ } , "v" : 1},  "v":2}',
    10: b"[[true ,false], [ ] ,[\n\ntrue]]",
}


@pytest.mark.parametrize("case", range(len(WS_SCHEMAS)))
def test_counted_gaps_give_the_brute_force_masks(case):
    """At every state along a document written with whitespace, and at every count of the gap
    after its opening bracket, the mask is exactly the tokens the pushdown automaton takes: a
    whitespace run counted against the gap's bound, dead past it, a value's first bytes after it."""
    schema = WS_SCHEMAS[case]
    vocab = _ws_vocab()
    g = grammar.compile_json_schema(schema, vocab, whitespace="flexible")
    text = TEXTS.get(case, b"[1, 2 ,3]" if schema.get("type") == "array" else b'{ "a" : 1 ,\n "b":2 }')
    m = g.matcher()
    for i, byte in enumerate(text):
        assert _allowed(g, m) == _brute(g, m.state), text[:i]
        assert m.accept(byte), text[: i + 1]
    assert m.is_completed()
    gap = g.matcher()
    assert gap.accept(text[0])
    for count in range(MAX_FLEXIBLE_WS + 1):
        assert _allowed(g, gap) == _brute(g, gap.state), count
        if count < MAX_FLEXIBLE_WS:
            assert gap.accept(WS_PIECES[count % 3][0])
    assert not gap.accept(ord(" "))  # past the bound


def test_a_mask_at_a_gap_builds_no_state_of_its_chain(smollm2_tokenizer, smollm2_vocab):
    """The masks along a flexible object make none of its gaps' later states (the walk counts the
    whitespace of SmolLM2's space-led tokens against the bound, and the compile's warm-up leaves
    them unbuilt): about as many DFA states as the compact grammar, where they made 25 per gap."""
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in "abcdefgh"}, "required": ["a"]}
    ids = smollm2_tokenizer.encode('{"a":1,"c":2,"h":3}', add_special_tokens=False)
    sizes = []
    for ws in ("flexible", "compact"):
        g = grammar.compile_json_schema(schema, smollm2_vocab, whitespace=ws)
        g.precompute_done.wait(10)
        m = g.matcher()
        for tid in ids:
            assert tid in _allowed(g, m)
            assert m.accept(tid)
        sizes.append(g.dfa.num_states)
    assert sizes[0] < 1.5 * sizes[1], sizes  # (before: 1,329 against 259, a state per count of each gap)
