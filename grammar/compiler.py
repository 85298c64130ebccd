"""Compiling grammars against a vocabulary: the `compile_*` entry points, one compiler per vocabulary and its cache."""

from __future__ import annotations

import functools
import gc
import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from grammar import ir
from grammar.automaton import dfa_ref, nfa_ref
from grammar.automaton.dfa import DEFAULT_BUILDER
from grammar.automaton.nfa import DEFAULT_NFA_WALK
from grammar.bitmask import BitmaskViews
from grammar.compiled import FIRST_MASKS_BUDGET_S, FIRST_MASKS_STATES, CompiledGrammar
from grammar.errors import GrammarError
from grammar.frontends.gbnf import gbnf_to_grammar
from grammar.frontends.json_lenient import MAX_WIDENINGS, widen
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.frontends.lark import lark_to_grammar
from grammar.frontends.regex import regex_to_node
from grammar.frontends.structural import structural_to_grammar
from grammar.ir import Grammar, literals
from grammar.masks import walk_ref
from grammar.masks.index import DEFAULT_WALK, TokenIndex
from grammar.masks.likely_path import token_texts
from grammar.precompute_worker import PrecomputeWorker
from grammar.vocab import Vocabulary

MAX_CACHED_GRAMMARS = 256
LOG = logging.getLogger("grammar")
BUILD_COMMAND = "make setup (or: pip install -e .)"


class Compiler:
    """Compiles grammars against one vocabulary and caches them by (kind, text, options).

    Holds what every grammar of the vocabulary shares: the token index the mask walks read
    (grammar/masks/index.py, built here: about half a second on a 262k vocabulary) and the
    bitmask views its matchers write through. Made once per vocabulary by `compiler_for` (which
    the module's `compile_*` functions use); tests also make one with other implementations of
    the walk and the row builder (the C ones or their references: `walk`, `builder`). Safe to
    share between threads. A cached compile returns once the masks nearest its start are made
    (FIRST_MASKS_STATES states, grammar/compiled.py); the other masks made ahead of use
    follow on the compiler's `PrecomputeWorker` thread (grammar/precompute_worker.py);
    with `deferred=False` they are made before it returns (as before: compile + first mask ~2 ms
    longer, but masks filled right after the compile find them made).
    """

    def __init__(self, vocab: Vocabulary, walk: ModuleType = DEFAULT_WALK, builder: type = DEFAULT_BUILDER,
                 deferred: bool = True) -> None:
        warn_if_unbuilt()
        self.vocab = vocab
        self.index = TokenIndex(vocab, walk)
        self.views = BitmaskViews()
        self.builder = builder
        self.worker = PrecomputeWorker()
        self.deferred = deferred
        self._cache: dict[tuple[Any, ...], CompiledGrammar] = {}
        self._lock = threading.Lock()

    def compile(self, grammar: Grammar, deferred: bool = False) -> CompiledGrammar:
        """`grammar` compiled against the vocabulary (not cached); `deferred`: its masks ahead of
        use not made yet (the caller submits it to `worker`)."""
        return CompiledGrammar(grammar, self.index, self.views, self.builder, deferred)

    def _cached(self, key: tuple[Any, ...], build: Callable[[], Grammar]) -> CompiledGrammar:
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        try:
            with _gc_paused():
                # outside the lock: compiles of other grammars go on
                compiled = self.compile(build(), deferred=self.deferred)
                if self.deferred:
                    compiled.precompute_now(FIRST_MASKS_STATES, FIRST_MASKS_BUDGET_S)  # the masks nearest the start
        except RecursionError:
            raise GrammarError("grammar nested too deeply to compile") from None
        if compiled.allows_nothing(compiled.initial):  # its matcher would allow no token at all
            raise GrammarError("the grammar accepts no text (a rule that refers to itself before any input, "
                               "such as a $ref to itself?)")  # fmt: skip
        if self.deferred:
            self.worker.submit(compiled)  # the rest of its first masks after this returns
        with self._lock:
            if len(self._cache) >= MAX_CACHED_GRAMMARS:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = compiled
        return compiled

    def clear_cache(self) -> None:
        """Drop every cached grammar (matchers of them keep theirs). A compile whose grammars stay
        cached takes fresh memory from the system, which a compile after a freed one reuses: on the
        dev schemas (SmolLM2, flexible) ~1.3 MiB a grammar at p50, ~180 page faults of ~4 us on a
        VM; benchmarks/grammar.py clears after each schema, as xgrammar runs there with its cache
        off, so that both compile into memory another grammar freed."""
        with self._lock:
            self._cache.clear()

    def compile_json_schema(self, schema: dict[str, Any] | str | bool, whitespace: str = "compact",
                            strict: bool = False, property_order: str = "declared") -> CompiledGrammar:
        """See the module function."""
        text = schema if isinstance(schema, str) else _key_text(schema)
        return self._cached(("json", text, whitespace, strict, property_order),
                            lambda: compile_schema_to_grammar(schema, whitespace, strict, property_order))

    def compile_regex(self, pattern: str) -> CompiledGrammar:
        return self._cached(("regex", pattern), lambda: Grammar({"start": regex_to_node(pattern)}))

    def compile_choice(self, choices: list[str]) -> CompiledGrammar:
        if not choices or not all(isinstance(c, str) for c in choices):
            raise GrammarError("choice needs a non-empty list of strings")
        return self._cached(("choice", tuple(choices)), lambda: Grammar({"start": literals([c.encode() for c in choices])}))

    def compile_lark(self, text: str) -> CompiledGrammar:
        return self._cached(("lark", text), lambda: lark_to_grammar(text))

    def compile_gbnf(self, text: str) -> CompiledGrammar:
        return self._cached(("gbnf", text), lambda: gbnf_to_grammar(text))

    def compile_structural_tag(self, spec: dict[str, Any], strict: bool = False) -> CompiledGrammar:
        key = _key_text(spec, sort_keys=True, default=repr)
        return self._cached(("structural", key, strict), lambda: structural_to_grammar(spec, strict))


def unbuilt_extensions() -> list[str]:
    """The C extensions this checkout lacks (their Python references are the defaults then)."""
    defaults = (("grammar/automaton/_nfa.c", DEFAULT_NFA_WALK is nfa_ref), ("grammar/automaton/_dfa.c",
                DEFAULT_BUILDER is dfa_ref.Builder), ("grammar/masks/_walk.c", DEFAULT_WALK is walk_ref),
                ("grammar/_ir.c", ir.copy_size is ir.copy_size_py))
    return [name for name, missing in defaults if missing]


@functools.cache
def warn_if_unbuilt() -> None:
    """One warning per process, at the first compiler made, when a C extension was not built: the
    references give the same masks about 30x slower, which nothing else would show."""
    missing = unbuilt_extensions()
    if missing:
        LOG.warning("grammar: C extensions not built (%s): compiling and masks use the Python references, about "
                    "30x slower; build them with %s", ", ".join(missing), BUILD_COMMAND)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (a compile makes hundreds of thousands
    of small lists and nodes, nearly all freed by reference counts, and the collector's passes
    over them took more than half of a large schema's compile); back on after it unless it was
    off before. With compiles on several threads, the first to finish turns it back on: never
    left off, at worst on a little early."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _key_text(value: Any, **options: Any) -> str:
    """`value` as JSON text for a cache key; GrammarError when it is nested too deeply for that."""
    try:
        return json.dumps(value, **options)
    except RecursionError:
        raise GrammarError("grammar nested too deeply to compile") from None


def compiler_for(vocab: Vocabulary) -> Compiler:
    """The vocabulary's compiler, made on first use (and kept with the vocabulary)."""
    return vocab.derived(Compiler, lambda: Compiler(vocab))


def prepare(vocab: Vocabulary) -> None:
    """Build the vocabulary's compiler (its token index) and the token texts the likely paths split
    into (grammar/masks/likely_path.py) now rather than at its first compile."""
    compiler_for(vocab)
    token_texts(vocab)  # (not in the compiler's constructor: vocab.derived's lock is not re-entrant)


def compile_json_schema(schema: dict[str, Any] | str | bool, vocab: Vocabulary, whitespace: str = "compact",
                        strict: bool = False, property_order: str = "declared") -> CompiledGrammar:
    """A grammar for JSON documents valid under `schema`; `property_order` "declared" (objects'
    declared properties in the schema's order) or "any" (grammar/frontends/json_order.py). `strict`: an
    object schema that names its properties (properties, patternProperties, required) without
    saying `additionalProperties` admits only those, and `prefixItems` without `items` admit nothing
    after them (xgrammar's strict mode, OpenAI's strict tools); False keeps JSON Schema's meaning."""
    return compiler_for(vocab).compile_json_schema(schema, whitespace, strict, property_order)


def compile_json_schema_lenient(schema: dict[str, Any] | str | bool, vocab: Vocabulary, whitespace: str = "compact",
                                strict: bool = False, property_order: str = "declared"
                                ) -> tuple[CompiledGrammar, list[str]]:  # fmt: skip
    """`compile_json_schema`, or where it raises a GrammarError a grammar of a wider schema
    (grammar/frontends/json_lenient.py): (the grammar, what was relaxed: one note per widening
    naming the keyword and its pointer; empty when the grammar is exact). Documents it accepts
    may then break the schema: the caller checks them (engine/structured.py). A compile that ran
    out of time and a schema that is not JSON still raise."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError as exc:
            raise GrammarError(f"schema is not valid JSON: {exc}") from None
    relaxed: list[str] = []
    current: Any = schema
    for _ in range(MAX_WIDENINGS):
        try:
            return compile_json_schema(current, vocab, whitespace, strict, property_order), relaxed
        except GrammarError as exc:
            if current is True or "exceeded the limit" in str(exc):
                raise
            current, note = widen(current, str(exc))
            relaxed.append(note)
    return compile_json_schema(True, vocab, whitespace, strict, property_order), [*relaxed, "the whole schema"]


def compile_regex(pattern: str, vocab: Vocabulary) -> CompiledGrammar:
    """A grammar for strings fully matching `pattern`."""
    return compiler_for(vocab).compile_regex(pattern)


def compile_choice(choices: list[str], vocab: Vocabulary) -> CompiledGrammar:
    """A grammar for exactly one of the given strings."""
    return compiler_for(vocab).compile_choice(choices)


def compile_lark(text: str, vocab: Vocabulary) -> CompiledGrammar:
    """A grammar from Lark EBNF text (start rule `start`)."""
    return compiler_for(vocab).compile_lark(text)


def compile_gbnf(text: str, vocab: Vocabulary) -> CompiledGrammar:
    """A grammar from GBNF text (llama.cpp / xgrammar EBNF, start rule `root`)."""
    return compiler_for(vocab).compile_gbnf(text)


def compile_structural_tag(spec: dict[str, Any], vocab: Vocabulary, strict: bool = False) -> CompiledGrammar:
    """A grammar for tool calls framed by begin/end strings (see grammar/__init__.py); `strict`
    as for compile_json_schema, for the calls' schemas."""
    return compiler_for(vocab).compile_structural_tag(spec, strict)
