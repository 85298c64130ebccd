"""Compile time limits: an over-long compile stops itself with GrammarError."""

from __future__ import annotations

import threading
import time

import pytest

import grammar
from tests.grammar.conftest import byte_vocab

VOCAB = byte_vocab()


def _big_schema(seed: int) -> dict:
    leaf = {"type": "object", "properties": {f"k{i}_{seed}": {"type": "integer"} for i in range(40)}}
    return {"type": "object", "properties": {f"p{i}": leaf for i in range(200)}}


def test_a_compile_past_its_limit_raises_and_the_thread_is_free_again():
    start = time.monotonic()
    with pytest.raises(grammar.GrammarError, match="exceeded the limit"):
        with grammar.time_limit(0.0):
            grammar.compile_json_schema(_big_schema(1), VOCAB)
    assert time.monotonic() - start < 1.0
    g = grammar.compile_json_schema({"type": "integer"}, VOCAB)  # no limit outside the block
    assert g.matcher().accept(ord("1"))


def test_limits_are_per_thread_and_nest():
    errors: list[Exception] = []

    def other_thread() -> None:
        try:
            grammar.compile_json_schema({"type": "string", "maxLength": 3}, VOCAB)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    with grammar.time_limit(0.0):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        with grammar.time_limit(None):
            grammar.compile_json_schema({"type": "boolean"}, VOCAB)
        with pytest.raises(grammar.GrammarError):
            grammar.compile_json_schema({"type": "array", "items": {"type": "number"}}, VOCAB)
    assert errors == []


def test_the_automaton_build_checks_the_limit_too():
    with pytest.raises(grammar.GrammarError, match="exceeded the limit"):
        with grammar.time_limit(0.0):
            grammar.compile_regex("[a-z]{3000}x", VOCAB)
    assert grammar.compile_regex("[a-z]{3000}y", VOCAB).matcher().accept(ord("q"))
