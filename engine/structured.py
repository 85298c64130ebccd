"""Structured output in the engine core: grammars compiled off the step loop, one matcher per request.

A request with a `StructuredSpec` waits here until its grammar is compiled on a worker
thread (other requests keep stepping meanwhile), then enters the scheduler. Each step the
matchers of the rows about to sample fill their bitmask rows on another worker thread
while the model's forward pass runs (torch releases the GIL in its kernels), so mask time
hides behind compute; after sampling, each matcher accepts its request's token. A compile
error or a compile that overruns the time limit refuses the request at admission (an error
output under `structured` before it was ever accepted: the gateway's 400).

JSON schemas (`json_schema` and the calls of a `structural_tag`) compile in the grammar's strict
mode unless `open_objects` is set (`--structured-outputs-open-objects`): an object schema that
names its properties admits no others, and `prefixItems` without `items` admit nothing after them,
as in vLLM's default (xgrammar) backend; `json_object` is any object either way. A `json_schema`'s
objects take their properties in declared order unless `property_order` is "any"
(`--structured-outputs-property-order`, grammar/frontends/json_order.py).

With `lenient` (`--structured-outputs-lenient`) a `json_schema` that has no exact grammar (a
GrammarError naming the keyword, the default's 400) compiles a wider one instead
(grammar.compile_json_schema_lenient: the keyword dropped or relaxed), and the finished document is
checked against the original schema with `jsonschema` (formats asserted); a violation goes out with
the request's last output (`EngineOutput.structured_violation`, the choice's
`structured_output_violation`), never hidden. An exact grammar needs no check.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import torch

import grammar
from engine.tokenizer import load_tokenizer
from schemas.engine import (
    ChoiceSpec,
    GbnfSpec,
    JsonObjectSpec,
    JsonSchemaSpec,
    LarkSpec,
    RegexSpec,
    StructuralTagSpec,
    StructuredSpec,
)


@dataclass(frozen=True, slots=True)
class GrammarRows:
    """A step's grammar masks, packed as the grammar fills them: `bitmask` int32 [rows, ceil(vocab/32)]
    (grammar.allocate_bitmask's layout, which compute_kernels.apply_token_bitmask reads), and the first row
    of each constrained request (one row, or 1 + its drafts' count when verifying drafts)."""

    bitmask: torch.Tensor
    start: dict[str, int]


@dataclass(slots=True)
class _Pending:
    request: object  # engine.request.Request
    future: Future
    deadline: float


@dataclass(slots=True)
class LenientCheck:
    """A widened grammar's document check: the original schema, what the grammar relaxed, and the
    tokens the request has written so far."""

    schema: Any
    relaxed: list[str]
    token_ids: list[int]

    def violation(self, vocab) -> str | None:
        """Why the document the tokens spell breaks the schema (None when it is valid)."""
        data = b"".join(vocab.token_bytes[t] or b"" for t in self.token_ids if 0 <= t < len(vocab.token_bytes))
        relaxed = f" (the grammar relaxed {', '.join(self.relaxed[:3])}{', ...' if len(self.relaxed) > 3 else ''})"
        try:
            document = json.loads(data.decode("utf-8"))
        except ValueError:
            return "the document is not complete JSON" + relaxed
        validator = jsonschema.validators.validator_for(self.schema)
        error = jsonschema.exceptions.best_match(validator(self.schema, format_checker=validator.FORMAT_CHECKER)
                                                 .iter_errors(document))  # fmt: skip
        return None if error is None else f"{error.json_path}: {error.message[:200]}{relaxed}"


def start_thread(fn: Callable[[], object], name: str) -> Future:
    """Runs `fn` on a new daemon thread; its result or exception in the returned future. A
    caller that stops waiting abandons the thread, and nothing else waits for it."""
    future: Future = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:  # handed to whoever waits
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def compile_spec(spec: StructuredSpec, vocab, limit: float | None = None, open_objects: bool = False,
                 property_order: str = "declared", lenient: bool = False):
    """Compiles a spec to a grammar.CompiledGrammar; raises grammar.GrammarError or ValueError
    (also once `limit` seconds have passed: the compile stops and frees its thread).
    `open_objects`: JSON Schema's open objects and tuples instead of strict mode. `lenient`: a
    json_schema without an exact grammar returns (a wider grammar, its LenientCheck) instead of raising."""
    with grammar.time_limit(limit):
        if isinstance(spec, JsonSchemaSpec) and lenient:
            schema = json.loads(spec.json_schema)
            compiled, relaxed = grammar.compile_json_schema_lenient(schema, vocab, whitespace=spec.whitespace,
                                                                    strict=not open_objects,
                                                                    property_order=property_order)  # fmt: skip
            return (compiled, LenientCheck(schema, relaxed, [])) if relaxed else compiled
        if isinstance(spec, JsonSchemaSpec) and property_order != "declared":
            return grammar.compile_json_schema(json.loads(spec.json_schema), vocab, whitespace=spec.whitespace,
                                               strict=not open_objects, property_order=property_order)
        return _compile(spec, vocab, not open_objects)


# How each kind of constraint compiles: (spec, vocabulary, strict JSON Schema) -> CompiledGrammar.
_COMPILERS: dict[type, Callable] = {
    JsonSchemaSpec: lambda s, v, strict: grammar.compile_json_schema(json.loads(s.json_schema), v,
                                                                     whitespace=s.whitespace, strict=strict),
    JsonObjectSpec: lambda s, v, strict: grammar.compile_json_schema({"type": "object"}, v, whitespace=s.whitespace),
    RegexSpec: lambda s, v, strict: grammar.compile_regex(s.regex, v),
    ChoiceSpec: lambda s, v, strict: grammar.compile_choice(list(s.choice), v),
    LarkSpec: lambda s, v, strict: grammar.compile_lark(s.lark, v),
    GbnfSpec: lambda s, v, strict: grammar.compile_gbnf(s.gbnf, v),
    StructuralTagSpec: lambda s, v, strict: grammar.compile_structural_tag(json.loads(s.structural_tag), v,
                                                                           strict=strict),
}  # fmt: skip


def _compile(spec: StructuredSpec, vocab, strict: bool):
    compile_kind = _COMPILERS.get(type(spec))
    if compile_kind is None:
        raise ValueError(f"unknown structured output spec {type(spec).__name__}")
    return compile_kind(spec, vocab, strict)


def build_vocabulary(tokenizer, vocab_size: int, eos_token_ids: list[int]):
    """The grammar vocabulary of `tokenizer`, padded to the model's `vocab_size`, with every EOS id of the model."""
    vocab = grammar.Vocabulary.from_tokenizer(tokenizer, vocab_size=vocab_size, extra_eos=list(eos_token_ids))
    grammar.prepare(vocab)  # the mask tables (about half a second on a 262k vocabulary), here rather than in a request
    return vocab


class StructuredOutputs:
    """Owned by the engine core; holds compiling requests and the live matchers. `open_objects`
    as in `compile_spec` (EngineConfig.structured_outputs_open_objects)."""

    def __init__(self, tokenizer_folder: str, vocab_size: int, eos_token_ids: list[int], compile_timeout: float,
                 open_objects: bool = False, property_order: str = "declared", lenient: bool = False) -> None:
        self._folder = tokenizer_folder
        self._vocab_size = vocab_size
        self._eos_token_ids = eos_token_ids
        self._timeout = compile_timeout
        self._open_objects = open_objects
        self._property_order = property_order
        self._lenient = lenient
        self.checks: dict[str, LenientCheck] = {}  # requests whose grammar was widened (lenient)
        self._vocab = None
        self._executor: ThreadPoolExecutor | None = None
        self._mask_executor: ThreadPoolExecutor | None = None
        self._vocab_lock = threading.Lock()
        self.pending: list[_Pending] = []
        self.matchers: dict[str, object] = {}

    def _vocabulary(self):
        with self._vocab_lock:  # built once, by whichever thread asks first
            if self._vocab is None:
                tokenizer = load_tokenizer(Path(self._folder))
                self._vocab = build_vocabulary(tokenizer, self._vocab_size, self._eos_token_ids)
            return self._vocab

    def _compile_executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grammar-compile")
        return self._executor

    def warm(self) -> None:
        """Builds the vocabulary on the compile thread now, so the first constrained request does not wait for it."""
        self._compile_executor().submit(self._vocabulary)

    def check(self, spec: StructuredSpec) -> None:
        """Compiles `spec` now, on the caller's thread; raises what the compiler raises."""
        compile_spec(spec, self._vocabulary(), self._timeout, self._open_objects, self._property_order, self._lenient)

    def submit(self, request) -> None:
        """Starts compiling the request's grammar on a thread of its own (a slow compile holds up no other)."""
        spec = request.params.structured
        future = start_thread(lambda: compile_spec(spec, self._vocabulary(), self._timeout, self._open_objects,
                                                   self._property_order, self._lenient),
                              "grammar-compile")  # fmt: skip
        self.pending.append(_Pending(request, future, time.monotonic() + self._timeout))

    def poll(self) -> tuple[list, list[tuple[object, str]]]:
        """Returns (requests now ready to schedule, (request, error message) pairs)."""
        ready, failed, still = [], [], []
        now = time.monotonic()
        for item in self.pending:
            if item.future.done():
                try:
                    compiled = item.future.result()
                except Exception as exc:  # GrammarError, bad JSON, unsupported spec
                    failed.append((item.request, str(exc)))
                    continue
                if isinstance(compiled, tuple):  # lenient: a widened grammar and its document check
                    compiled, self.checks[item.request.request_id] = compiled
                self.matchers[item.request.request_id] = compiled.matcher()
                ready.append(item.request)
            elif now > item.deadline:
                item.future.cancel()
                failed.append((item.request, f"grammar compilation exceeded the limit of {self._timeout:g} s"))
            else:
                still.append(item)
        self.pending = still
        return ready, failed

    def remove(self, request_id: str) -> bool:
        """Drops a pending or live request; True if it was still pending."""
        self.matchers.pop(request_id, None)
        self.checks.pop(request_id, None)
        before = len(self.pending)
        self.pending = [p for p in self.pending if p.request.request_id != request_id]
        return len(self.pending) != before

    def masks(self, request_ids: list[str], drafts: dict[str, list[int]] | None = None) -> GrammarRows | None:
        """The packed masks of the constrained requests among request_ids (None when there are none):
        one row each, or 1 + len(drafts) rows for a request verifying draft tokens (row j as if
        drafts[:j] were accepted; the matcher is rolled back after)."""
        live = [r for r in request_ids if r in self.matchers]
        if not live:
            return None
        drafts = drafts or {}
        counts = [len(drafts.get(r, ())) + 1 for r in live]
        bitmask = grammar.allocate_bitmask(sum(counts), self._vocab)
        start, row = {}, 0
        for request_id, count in zip(live, counts):
            self._fill_rows(self.matchers[request_id], drafts.get(request_id, []), bitmask, row)
            start[request_id] = row
            row += count
        return GrammarRows(bitmask, start)

    @staticmethod
    def _fill_rows(matcher, draft_ids: list[int], bitmask: torch.Tensor, row: int) -> None:
        """Rows row..row+len(draft_ids): the mask before each draft; past a draft the grammar
        refuses (the target cannot accept it) the rows repeat the last mask."""
        accepted = 0
        for j in range(len(draft_ids) + 1):
            if j == accepted:
                matcher.fill_bitmask(bitmask, row + j)
            else:
                bitmask[row + j] = bitmask[row + j - 1]
            if j < len(draft_ids) and j == accepted and matcher.accept(draft_ids[j]):
                accepted += 1
        matcher.rollback(accepted)

    def num_allowed_drafts(self, request_id: str, draft_ids: list[int]) -> int:
        """How many leading drafts the request's grammar allows (all when unconstrained)."""
        matcher = self.matchers.get(request_id)
        if matcher is None:
            return len(draft_ids)
        accepted = 0
        while accepted < len(draft_ids) and matcher.accept(draft_ids[accepted]):
            accepted += 1
        matcher.rollback(accepted)
        return accepted

    def masks_async(self, request_ids: list[str], drafts: dict[str, list[int]] | None = None
                    ) -> Callable[[], GrammarRows | None] | None:  # fmt: skip
        """Starts `masks(request_ids, drafts)` on the mask thread; returns a function that waits for
        it (None when no row is constrained). Matchers are not touched elsewhere until it is waited on."""
        if not any(r in self.matchers for r in request_ids):
            return None
        if self._mask_executor is None:
            self._mask_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grammar-mask")
        return self._mask_executor.submit(self.masks, request_ids, drafts).result

    def accept(self, request_id: str, token_id: int) -> bool:
        matcher = self.matchers.get(request_id)
        if matcher is None:
            return True
        accepted = matcher.accept(token_id)
        check = self.checks.get(request_id)
        if accepted and check is not None:
            check.token_ids.append(token_id)
        return accepted

    def violation(self, request_id: str) -> str | None:
        """For a finished request whose grammar was widened: how its document breaks the schema."""
        check = self.checks.get(request_id)
        return None if check is None else check.violation(self._vocab)

    def is_terminated(self, request_id: str) -> bool:
        matcher = self.matchers.get(request_id)
        return matcher is not None and matcher.is_terminated()

    def has_pending(self) -> bool:
        return bool(self.pending)

    def is_pending(self, request_id: str) -> bool:
        return any(p.request.request_id == request_id for p in self.pending)
