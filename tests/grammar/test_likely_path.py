"""The masks made first follow the document a model is likely to write (grammar/frontends/json_likely.py,
grammar/masks/likely_path.py): the guess of a schema's instance, its split into tokens, the states
those reach, and the frontier walking them before going outward from the start."""

from __future__ import annotations

import json

import grammar
from grammar.compiler import Compiler
from grammar.frontends.json_likely import MAX_BYTES, likely_texts
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.masks.likely_path import path_keys, split_tokens
from grammar.masks.precompute import Frontier

WORDS = [b'{"', b'":"', b'","', b'":', b',"', b'"}', b'}', b'text', b'user', b'Name', b' Smith', b'zeta', b'alpha',
         b'id', b'a_long_member_name', b'": "', b'", "', b'": ']


def word_vocab() -> grammar.Vocabulary:
    """Every byte but 0xff, then JSON's usual multi-byte tokens; EOS is the last id."""
    tokens = [bytes([b]) for b in range(255)] + WORDS
    return grammar.Vocabulary(tokens + [None], [len(tokens)], len(tokens) + 1)


def _guess(schema, whitespace="compact"):
    return [json.loads(t) for t in likely_texts(schema, whitespace)]


def test_the_guess_names_every_declared_property_in_declared_order():
    schema = {"type": "object", "required": ["zeta", "extra"],
              "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer", "minimum": 7},
                             "when": {"type": "string", "format": "date-time"}, "flag": {"type": "boolean"},
                             "kind": {"enum": ["b", "c"]}, "fixed": {"const": 3}, "ex": {"type": "string", "examples": ["e1"]},
                             "dflt": {"type": "number", "default": 2.5}, "none": {"type": "null"}}}
    (value,) = _guess(schema)
    assert list(value) == ["zeta", "alpha", "when", "flag", "kind", "fixed", "ex", "dflt", "none", "extra"]
    assert value == {"zeta": "text", "alpha": 8, "when": "2024-01-01T00:00:00Z", "flag": True, "kind": "b",
                     "fixed": 3, "ex": "e1", "dflt": 2.5, "none": None, "extra": "text"}


def test_the_guess_follows_refs_combinators_and_arrays():
    schema = {"$defs": {"item": {"type": "object", "properties": {"id": {"type": "integer"}}},
                        "base": {"properties": {"first": {"type": "string"}}, "required": ["first"]}},
              "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"second": {"type": "boolean"}}}],
              "type": "object",
              "properties": {"maybe": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
                             "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 5},
                             "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}}
    (value,) = _guess(schema)
    assert value == {"maybe": 1, "items": [{"id": 1}, {"id": 1}], "pair": ["text", 1], "first": "text", "second": True}


def test_the_flexible_guess_is_also_written_with_spaces_after_the_compact_one():
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    assert likely_texts(schema, "compact") == (b'{"a":"text","b":1}',)
    assert likely_texts(schema, "flexible") == (b'{"a":"text","b":1}', b'{"a": "text", "b": 1}')


def test_the_guess_stops_at_recursion_and_odd_schemas_without_raising():
    assert likely_texts({"$ref": "#"}, "compact") == ()
    tree = {"type": "object", "properties": {"name": {"type": "string"}, "child": {"$ref": "#"}}}
    (value,) = _guess(tree)
    assert value == {"name": "text", "child": {"name": "text"}}  # one level down, then no guess
    assert likely_texts({"$ref": "https://example.com/remote.json"}, "compact") == ()
    assert likely_texts({"type": "object", "properties": 5}, "compact") == (b"{}",)
    assert likely_texts(False, "compact") == ()
    big = {"type": "object", "properties": {f"member{i}": {"type": "string"} for i in range(1000)}}
    (text,) = likely_texts(big, "compact")
    assert len(text) == MAX_BYTES and text.startswith(b'{"member0":"text","member1":')


def test_tokens_split_like_a_byte_level_bpe_pretokenizer():
    vocab = word_vocab()
    assert list(split_tokens(b'{"userName":" Smith","id":12}', vocab)) == [
        b'{"', b"user", b"Name", b'":"', b" Smith", b'","', b"id", b'":', b"1", b"2", b"}"]
    # (`"}` after the letters is a pre-token and a token whole; no token spells 0xff: the split ends there)
    assert list(split_tokens(b'{"text"}', vocab)) == [b'{"', b"text", b'"}']
    assert list(split_tokens(b'{"te\xffxt"}', vocab)) == [b'{"', b"t", b"e"]


def test_the_path_is_the_start_then_each_new_state_the_tokens_reach_until_one_is_refused():
    vocab = word_vocab()
    schema = {"type": "object", "properties": {"user": {"type": "string"}, "id": {"type": "integer"}},
              "additionalProperties": False}
    compiled = Compiler(vocab).compile(compile_schema_to_grammar(schema), deferred=True)
    text = b'{"user":"text","id":1}'
    expected, configs = [], compiled.initial
    for stack, d in configs:
        expected.append((d, stack != ()))
    for token in split_tokens(text, vocab):
        configs = compiled.advance(configs, token)
        expected += [(d, stack != ()) for stack, d in configs if (d, stack != ()) not in expected]
    keys = list(path_keys((text,), vocab, compiled.dfa, compiled.index.walk, compiled.initial))
    assert keys == expected and len(keys) == len(set(keys))
    # a refused token ends the path there: `{"zeta` is no member
    wrong = list(path_keys((b'{"zeta":"text"}',), vocab, compiled.dfa, compiled.index.walk, compiled.initial))
    assert wrong == expected[:2]  # the start and the state after `{"`


def test_the_first_masks_made_are_the_likely_documents():
    """A schema whose first declared member has a short name among long ones: walking outward from
    the start, the longest tokens lead first to the long name's states; the guess leads along the
    document, so a few states made ahead cover its first fills."""
    vocab = word_vocab()
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "a_long_member_name": {"type": "string"},
                                               "alpha": {"type": "string"}}}
    doc = b'{"id":1,"a_long_member_name":"text","alpha":"text"}'
    ids = [vocab.token_bytes.index(t) for t in split_tokens(doc, vocab)] + [vocab.eos_token_ids[0]]
    ir = compile_schema_to_grammar(schema)
    assert ir.likely == (doc,)

    def made_ahead(likely: tuple[bytes, ...]) -> int:
        """How many of the document's first fills find their mask made, after 8 states walked ahead."""
        ir.likely = likely
        compiled = Compiler(vocab).compile(ir, deferred=True)
        for _ in range(8):
            compiled.precompute_step()
        m, found = compiled.matcher(), 0
        bitmask = grammar.allocate_bitmask(1, vocab)
        for tid in ids:
            found += m.state in compiled.masks
            m.fill_bitmask(bitmask, 0)
            assert m.accept(tid)
        return found

    assert made_ahead((doc,)) >= 8  # every state walked is one the document fills
    assert made_ahead(()) < made_ahead((doc,))


def test_the_frontier_walks_the_path_first_then_outward_from_its_states():
    vocab = word_vocab()
    schema = {"type": "object", "properties": {"user": {"type": "string"}, "id": {"type": "integer"}}}
    compiled = Compiler(vocab).compile(compile_schema_to_grammar(schema), deferred=True)
    text = b'{"user":"text","id":1}'
    path = list(path_keys((text,), vocab, compiled.dfa, compiled.index.walk, compiled.initial))
    frontier = Frontier(compiled.dfa, compiled.index, {}, {}, iter(path))
    walked = []
    while frontier.step():
        walked.append(next(k for k in frontier.walked if k not in walked))
    assert walked[: len(path)] == path
    assert len(walked) > len(path)  # then the states the path's walks lead to
    plain = Frontier(compiled.dfa, compiled.index, {}, {})
    while plain.step():
        pass
    assert plain.walked == frontier.walked  # the same states in the end, in another order


def test_a_tool_call_grammar_is_likely_to_call_its_first_tool_with_guessed_arguments():
    """A structural tag (how the gateway constrains tool calls) carries its first alternative's call
    as the likely text: begin, the arguments' guess, end; the whole call is a path through it."""
    from grammar.frontends.structural import structural_to_grammar

    spec = {"alternatives": [
        {"begin": '<tool_call>{"name": "get_weather", "arguments": ', "end": "}</tool_call>",
         "schema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city"]}},
        {"begin": '<tool_call>{"name": "search", "arguments": ', "end": "}</tool_call>",
         "schema": {"type": "object", "properties": {"q": {"type": "string"}}}}],
        "allow_free_text": True}
    ir = structural_to_grammar(spec)
    call = b'<tool_call>{"name": "get_weather", "arguments": {"city":"text","days":1}}</tool_call>'
    assert ir.likely == (call,)
    vocab = word_vocab()
    compiled = Compiler(vocab).compile(ir, deferred=True)
    configs = compiled.initial
    for token in split_tokens(call, vocab):
        configs = compiled.advance(configs, token)
        assert configs  # every token of the guessed call is allowed
    assert compiled.is_complete(configs)
    keys = list(path_keys(ir.likely, vocab, compiled.dfa, compiled.index.walk, compiled.initial))
    assert len(keys) > 20  # the call's states, from the free text's start to the end string's


def test_a_path_that_fails_ends_there_and_the_frontier_goes_on_outward():
    """A guess must never fail a compile: an error while running its path ends the path."""
    vocab = word_vocab()
    schema = {"type": "object", "properties": {"user": {"type": "string"}, "id": {"type": "integer"}}}
    compiled = Compiler(vocab).compile(compile_schema_to_grammar(schema), deferred=True)
    start = next(path_keys((b"{}",), vocab, compiled.dfa, compiled.index.walk, compiled.initial))

    def broken():
        yield start
        raise MemoryError("a path that cannot go on")

    frontier = Frontier(compiled.dfa, compiled.index, {}, {}, broken())
    while frontier.step():
        pass
    plain = Frontier(compiled.dfa, compiled.index, {}, {})
    while plain.step():
        pass
    assert frontier.path is None and frontier.walked == plain.walked


def test_the_module_functions_prepare_and_compile_on_a_fresh_vocabulary():
    """grammar.prepare and compile_json_schema (compiler_for: the gateway's path) build the token
    texts beside the compiler, never inside its construction (vocab.derived's lock)."""
    vocab = word_vocab()
    grammar.prepare(vocab)
    compiled = grammar.compile_json_schema({"type": "object", "properties": {"user": {"type": "string"}}}, vocab)
    assert compiled.precomputed > 0  # the compile made its first masks (along the path) and returned
    assert grammar.compile_json_schema(True, word_vocab()).matcher() is not None  # no prepare first
