"""Seeded request generators for the fuzz test: values drawn from the API's msgspec types, then mutated.

`Fuzzer(seed).case()` returns one `Case` (method, path, raw body bytes, headers, category). Bodies start
from each route's request Struct (schemas.openai / schemas.openai_embeddings): required fields always,
optional ones at random, each value drawn from its declared type with realistic overrides for the fields
that would otherwise always fail validation (messages, max_tokens, ...), so that a good share reach the
engine. Then 0-3 mutations: wrong types, out-of-range numbers, huge or deeply nested values, invalid
UTF-8, duplicate keys, unknown fields, truncation, byte flips, odd headers.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import msgspec

from schemas.openai import ChatCompletionRequest, CompletionRequest, DetokenizeRequest, TokenizeRequest
from schemas.openai_embeddings import EmbeddingRequest

BODY_ROUTES = {
    "/v1/chat/completions": ChatCompletionRequest,
    "/v1/completions": CompletionRequest,
    "/tokenize": TokenizeRequest,
    "/detokenize": DetokenizeRequest,
    "/v1/embeddings": EmbeddingRequest,
}
GET_ROUTES = ["/v1/models", "/v1/models/tiny", "/health", "/metrics", "/openapi.json", "/v1/models/%ff%00"]
ODD_NUMBERS = [0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**40, -(10**40),
               0.5, -0.0, 1e-320, 1e308, -1e308, 3.4e38]  # fmt: skip
ODD_STRINGS = ["", " ", "\u0000", "\ud7ff\ue000", "null", "{}", "é" * 50, "<|im_start|>", "\\u0000", "a" * 5000]
MUTATIONS = ["wrong_type", "odd_number", "huge_string", "huge_list", "deep_nesting", "invalid_utf8",
             "duplicate_key", "unknown_field", "drop_required", "truncate", "byte_flip", "null_field",
             "odd_header"]  # fmt: skip

# Realistic values for fields that random values would (almost) always make invalid.
_MESSAGES = [[{"role": "user", "content": "Hi"}],
             [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say a word"}],
             [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
             [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": None,
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
              {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]]  # fmt: skip
_TOOLS = [{"type": "function", "function": {"name": "w", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}}, "required": ["city"]}}}]  # fmt: skip
_FORMATS = [{"type": "json_object"}, {"type": "text"},
            {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {
                "a": {"type": "integer"}}, "required": ["a"]}}}]  # fmt: skip


def _override(rng: random.Random, name: str) -> Any:
    """A realistic value for `name`, or NotImplemented to draw one from the type."""
    table = {
        "messages": lambda: rng.choice(_MESSAGES),
        "prompt": lambda: rng.choice(["Hi", "Once upon a time", ["a", "b"], [1, 2, 3], [[1, 2], [3]]]),
        "input": lambda: rng.choice(["hello", ["a", "b"], [1, 2, 3]]),
        "tokens": lambda: [rng.randrange(0, 200) for _ in range(rng.randrange(1, 6))],
        "max_tokens": lambda: rng.choice([1, 2, 4, 8, 16]),
        "max_completion_tokens": lambda: rng.choice([1, 4, 8]),
        "n": lambda: rng.choice([1, 1, 2, 3]),
        "model": lambda: rng.choice([None, "tiny"]),
        "temperature": lambda: rng.choice([0.0, 0.7, 1.0, 2.0]),
        "top_p": lambda: rng.choice([0.1, 0.9, 1.0]),
        "top_k": lambda: rng.choice([-1, 0, 1, 5, 10**6, 2**63 - 1]),
        "seed": lambda: rng.choice([0, 1, -1, 2**63 - 1, -(2**63)]),
        "logit_bias": lambda: {str(rng.randrange(0, 200)): rng.uniform(-100, 100)},
        "stop_token_ids": lambda: [rng.randrange(0, 200)],
        "tools": lambda: _TOOLS,
        "tool_choice": lambda: rng.choice(["auto", "none", "required", {"type": "function", "function": {"name": "w"}}]),
        "response_format": lambda: rng.choice(_FORMATS),
        "top_logprobs": lambda: rng.choice([0, 2, 20]),
        "logprobs": lambda: rng.choice([True, False, 0, 3]),
        "min_tokens": lambda: rng.choice([0, 1, 2]),
        "dimensions": lambda: rng.choice([None, 8, 16]),
        "encoding_format": lambda: rng.choice(["float", "base64", None]),
        "truncate_prompt_tokens": lambda: rng.choice([None, -1, 2]),
    }
    fn = table.get(name)
    return NotImplemented if fn is None else fn()


def _from_type(rng: random.Random, t: Any, depth: int = 0) -> Any:
    """A value of msgspec type info `t` (small sizes)."""
    ti = msgspec.inspect
    if isinstance(t, ti.UnionType):
        return _from_type(rng, rng.choice(t.types), depth)
    if isinstance(t, ti.NoneType):
        return None
    if isinstance(t, ti.BoolType):
        return rng.random() < 0.5
    if isinstance(t, ti.IntType):
        return rng.choice([0, 1, 2, 7, -1, rng.randrange(-1000, 1000)])
    if isinstance(t, ti.FloatType):
        return rng.choice([0.0, 0.5, 1.0, rng.uniform(-3, 3)])
    if isinstance(t, ti.StrType):
        return rng.choice(["x", "hello", "", "tiny", "auto", "function"])
    if isinstance(t, ti.ListType):
        return [_from_type(rng, t.item_type, depth + 1) for _ in range(rng.randrange(0, 3))]
    if isinstance(t, ti.DictType):
        return {f"k{i}": _from_type(rng, t.value_type, depth + 1) for i in range(rng.randrange(0, 3))}
    if isinstance(t, ti.StructType):
        return _struct_value(rng, t, depth + 1)
    return _any_value(rng, depth)


def _any_value(rng: random.Random, depth: int) -> Any:
    kinds = [None, True, 1, 1.5, "s"] + ([[], {}] if depth > 3 else [["a", 1], {"a": {"b": [1]}}])
    return rng.choice(kinds)


def _struct_value(rng: random.Random, t: Any, depth: int = 0) -> dict:
    out: dict[str, Any] = {}
    for f in t.fields:
        value = _override(rng, f.name) if depth == 0 else NotImplemented
        if not f.required and rng.random() < (0.6 if value is not NotImplemented else 0.92):
            continue
        out[f.encode_name] = _from_type(rng, f.type, depth) if value is NotImplemented else value
    return out


@dataclass
class Case:
    """One fuzzed request."""

    method: str
    path: str
    body: bytes | None
    headers: dict[str, str] = field(default_factory=dict)
    category: str = "valid"


class Fuzzer:
    """Seeded: the same seed gives the same sequence of cases."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def case(self) -> Case:
        rng = self.rng
        roll = rng.random()
        if roll < 0.06:
            return Case(rng.choice(["GET", "DELETE", "PUT"]), rng.choice(list(BODY_ROUTES)), None, category="method")
        if roll < 0.12:
            return Case(rng.choice(["GET", "POST"]), rng.choice(GET_ROUTES), None, category="get_route")
        path, struct = rng.choice(list(BODY_ROUTES.items()))
        body = _struct_value(rng, msgspec.inspect.type_info(struct))
        if path in ("/v1/chat/completions", "/v1/completions") and rng.random() < 0.3:
            body["stream"] = True
        names = rng.sample(MUTATIONS, rng.choice([0, 1, 1, 2, 3]))
        case = Case("POST", path, None, {"Content-Type": "application/json"}, "+".join(names) or "valid")
        raw = self._mutate_tree(body, names)
        case.body = self._mutate_bytes(raw, names, case)
        return case

    def _mutate_tree(self, body: dict, names: list[str]) -> Any:
        rng = self.rng
        key = rng.choice(list(body)) if body else "messages"
        if "wrong_type" in names:
            body[key] = rng.choice([None, True, 3, -2.5, "str", [1, "a"], {"x": 1}])
        if "odd_number" in names:
            body[rng.choice([key, "max_tokens", "top_k", "n", "seed", "temperature", "logprobs", "top_logprobs",
                             "min_tokens", "dimensions", "truncate_prompt_tokens"])] = rng.choice(ODD_NUMBERS)
        if "huge_string" in names:
            body[key] = rng.choice(ODD_STRINGS) * rng.choice([1, 200])
        if "huge_list" in names:
            body[key] = [rng.choice([1, "a", None])] * rng.choice([1000, 20000])
        if "null_field" in names:
            body[key] = None
        if "drop_required" in names and body:
            body.pop(key, None)
        if "unknown_field" in names:
            body[f"unknown_{rng.randrange(100)}"] = _any_value(rng, 0)
        if "deep_nesting" in names:
            body[key] = "@DEEP@"
        return body

    def _mutate_bytes(self, body: Any, names: list[str], case: Case) -> bytes:
        rng = self.rng
        raw = json.dumps(body).encode()
        if "deep_nesting" in names:
            depth = rng.choice([100, 1000, 10_000, 100_000])
            opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
            raw = raw.replace(b'"@DEEP@"', (opener * depth + "1" + closer * depth).encode())
        if "duplicate_key" in names and raw.startswith(b"{") and len(raw) > 2:
            key = rng.choice(["messages", "max_tokens", "prompt", "n", "stream"])
            raw = b'{"%s": %s, ' % (key.encode(), rng.choice([b"1", b'"x"', b"null", b"[]"])) + raw[1:]
        if "invalid_utf8" in names:
            at = raw.find(b'"', 1)
            if at > 0:
                raw = raw[: at + 1] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]) + raw[at + 1:]
        if "truncate" in names and raw:
            raw = raw[: rng.randrange(len(raw))]
        if "byte_flip" in names and raw:
            flips = bytearray(raw)
            for _ in range(rng.randrange(1, 4)):
                flips[rng.randrange(len(flips))] = rng.randrange(256)
            raw = bytes(flips)
        if "odd_header" in names:
            case.headers.update(rng.choice([{"Content-Type": "text/plain"}, {"Content-Type": "application/json; charset=latin-1"},
                                            {"Content-Encoding": "gzip"}, {"Content-Encoding": "deflate"},
                                            {"Authorization": "Bearer " + "x" * 100}, {"Accept": "text/html"}]))  # fmt: skip
        return raw
