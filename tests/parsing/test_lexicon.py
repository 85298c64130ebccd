"""Lexicon: marker search and the held-back tail."""
from __future__ import annotations

from parsing.lexicon import Lexicon

LEX = Lexicon(["<tool_call>", "</tool_call>", "<tool_call>\n<function=", "</think>"])


def test_search_finds_earliest_and_longest() -> None:
    assert LEX.search("ab </think> <tool_call>", 0) == (3, "</think>")
    assert LEX.search("x<tool_call>\n<function=f>", 0) == (1, "<tool_call>\n<function=")
    assert LEX.search("no markers", 0) is None


def test_hold_start_keeps_only_possible_marker_prefixes() -> None:
    assert LEX.hold_start("hello </th", 0) == 6
    assert LEX.hold_start("hello </x", 0) == 9
    assert LEX.hold_start("a < b", 0) == 5
    assert LEX.hold_start("a <", 0) == 2


def test_may_grow() -> None:
    assert LEX.may_grow("x<tool_call>", 1)
    assert LEX.may_grow("x<tool_call>\n", 1)
    assert not LEX.may_grow("x</think>", 1)
