"""Constrained decoding: JSON Schema, Lark EBNF, regex, choice lists and structural tags -> token bitmasks.

Usage (the engine and tests call exactly this)::

    vocab = grammar.Vocabulary.from_tokenizer(hf_tokenizer, vocab_size=None)
    g = grammar.compile_json_schema(schema, vocab, whitespace="compact")   # or "flexible"; strict=True closes
    # objects that name their properties and tuples without `items` (as xgrammar's strict mode)
    # also compile_lark (Lark EBNF), compile_gbnf (llama.cpp GBNF), compile_regex, compile_choice
    m = g.matcher()
    bitmask = grammar.allocate_bitmask(batch_size, vocab)   # int32 [batch, ceil(V / 32)]
    m.fill_bitmask(bitmask, row); grammar.apply_bitmask(logits, bitmask)
    m.accept(token_id); m.rollback(n); m.is_terminated(); m.is_completed()

Structural tag spec (a dict, built by the gateway from a parsing format and the tools)::

    {"alternatives": [{"begin": "<tool_call>", "schema": {...JSON schema...}, "end": "</tool_call>",
                       # optional: arguments as XML-style parameters instead of one JSON value
                       "xml_params": {"begin": "<parameter={key}>", "end": "</parameter>"}}],
     "separator": "\\n",          # between consecutive calls ("" allowed)
     "allow_free_text": False,   # True: any text, where each begin string starts a constrained call
     "min_calls": 1,             # optional; default 1 without free text, 0 with it
     "max_calls": None,          # optional upper bound on the number of calls
     "whitespace": "compact"}    # optional, for the schemas

`with grammar.time_limit(seconds):` makes compiles on this thread stop with `GrammarError`
once the limit has passed (they free their thread instead of running on).

Every compile raises `GrammarError` naming the unsupported or invalid construct (for JSON
Schema: the keyword and its JSON pointer). Compiled grammars are cached per vocabulary.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from grammar.bitmask import allocate_bitmask, apply_bitmask, unpack_bitmask
from grammar.compiled import CompiledGrammar
from grammar.ir import Grammar, GrammarError, alt, lit
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.matcher import Matcher
from grammar.frontends.regex import regex_to_node
from grammar.time_limit import time_limit
from grammar.vocab import Vocabulary

__all__ = [
    "CompiledGrammar", "GrammarError", "Matcher", "Vocabulary", "allocate_bitmask", "apply_bitmask",
    "compile_choice", "compile_gbnf", "compile_json_schema", "compile_lark", "compile_regex", "compile_structural_tag",
    "time_limit", "unpack_bitmask",
]
MAX_CACHED_GRAMMARS = 256


def _cached(vocab: Vocabulary, key: tuple[Any, ...], build: Callable[[], Grammar]) -> CompiledGrammar:
    with vocab.cache_lock:
        hit = vocab.cache.get(key)
    if hit is not None:
        return hit
    compiled = CompiledGrammar(build(), vocab)
    with vocab.cache_lock:
        if len(vocab.cache) >= MAX_CACHED_GRAMMARS:
            vocab.cache.pop(next(iter(vocab.cache)))
        vocab.cache[key] = compiled
    return compiled


def compile_json_schema(schema: dict[str, Any] | str | bool, vocab: Vocabulary, whitespace: str = "compact",
                        strict: bool = False) -> CompiledGrammar:
    """A grammar for JSON documents valid under `schema` (declared property order). `strict`: an
    object schema that names its properties (properties, patternProperties, required) without
    saying `additionalProperties` admits only those, and `prefixItems` without `items` admit nothing
    after them (xgrammar's strict mode, OpenAI's strict tools); False keeps JSON Schema's meaning."""
    text = schema if isinstance(schema, str) else json.dumps(schema, sort_keys=False)
    return _cached(vocab, ("json", text, whitespace, strict), lambda: compile_schema_to_grammar(schema, whitespace, strict))


def compile_regex(pattern: str, vocab: Vocabulary) -> CompiledGrammar:
    """A grammar for strings fully matching `pattern`."""
    return _cached(vocab, ("regex", pattern), lambda: Grammar({"start": regex_to_node(pattern)}))


def compile_choice(choices: list[str], vocab: Vocabulary) -> CompiledGrammar:
    """A grammar for exactly one of the given strings."""
    if not choices or not all(isinstance(c, str) for c in choices):
        raise GrammarError("choice needs a non-empty list of strings")
    return _cached(vocab, ("choice", tuple(choices)), lambda: Grammar({"start": alt(*[lit(c) for c in choices])}))


def compile_lark(text: str, vocab: Vocabulary) -> CompiledGrammar:
    """A grammar from Lark EBNF text (start rule `start`)."""
    from grammar.frontends.lark import lark_to_grammar

    return _cached(vocab, ("lark", text), lambda: lark_to_grammar(text))


def compile_gbnf(text: str, vocab: Vocabulary) -> CompiledGrammar:
    """A grammar from GBNF text (llama.cpp / xgrammar EBNF, start rule `root`)."""
    from grammar.frontends.gbnf import gbnf_to_grammar

    return _cached(vocab, ("gbnf", text), lambda: gbnf_to_grammar(text))


def compile_structural_tag(spec: dict[str, Any], vocab: Vocabulary, strict: bool = False) -> CompiledGrammar:
    """A grammar for tool calls framed by begin/end strings (see the module docstring); `strict`
    as for compile_json_schema, for the calls' schemas."""
    from grammar.frontends.structural import structural_to_grammar

    key = json.dumps(spec, sort_keys=True, default=repr)
    return _cached(vocab, ("structural", key, strict), lambda: structural_to_grammar(spec, strict))
