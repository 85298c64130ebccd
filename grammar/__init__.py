"""Constrained decoding: JSON Schema, Lark EBNF, regex, choice lists and structural tags -> token bitmasks.

Usage (the engine and tests call exactly this)::

    vocab = grammar.Vocabulary.from_tokenizer(hf_tokenizer, vocab_size=None)
    grammar.prepare(vocab)   # optional: build the vocabulary's mask tables now, not at the first compile
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

from grammar.bitmask import allocate_bitmask, apply_bitmask, unpack_bitmask
from grammar.compiled import CompiledGrammar
from grammar.compiler import (Compiler, compile_choice, compile_gbnf, compile_json_schema, compile_json_schema_lenient,
                              compile_lark, compile_regex, compile_structural_tag, compiler_for, prepare)
from grammar.errors import GrammarError
from grammar.matcher import Matcher
from grammar.time_limit import time_limit
from grammar.vocab import Vocabulary

__all__ = [
    "CompiledGrammar", "Compiler", "GrammarError", "Matcher", "Vocabulary", "allocate_bitmask", "apply_bitmask",
    "compile_choice", "compile_gbnf", "compile_json_schema", "compile_json_schema_lenient", "compile_lark", "compile_regex", "compile_structural_tag",
    "compiler_for", "prepare", "time_limit", "unpack_bitmask",
]
