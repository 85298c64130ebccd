"""A checkout without the grammar's C extensions says so once, at its first compiler, naming the build command (issue 38)."""

from __future__ import annotations

import pytest

import grammar
from grammar import compiler
from grammar.automaton import nfa_ref
from grammar.masks import walk_ref
from tests.grammar.conftest import byte_vocab


@pytest.fixture
def fresh_warning():
    compiler.warn_if_unbuilt.cache_clear()
    yield
    compiler.warn_if_unbuilt.cache_clear()


def test_one_warning_names_the_build_command(monkeypatch, caplog, fresh_warning):
    monkeypatch.setattr(compiler, "DEFAULT_WALK", walk_ref)
    monkeypatch.setattr(compiler, "DEFAULT_NFA_WALK", nfa_ref)
    with caplog.at_level("WARNING", logger="grammar"):
        for _ in range(3):  # three vocabularies, three compilers: one line
            grammar.compile_json_schema({"type": "integer"}, byte_vocab())
    lines = [r.getMessage() for r in caplog.records if "C extensions" in r.getMessage()]
    assert len(lines) == 1
    assert "make setup" in lines[0] and "pip install -e ." in lines[0]
    assert "grammar/masks/_walk.c" in lines[0] and "grammar/automaton/_nfa.c" in lines[0]


def test_a_built_checkout_is_silent(monkeypatch, caplog, fresh_warning):
    if compiler.unbuilt_extensions():
        pytest.skip("this checkout's C extensions are not built")
    with caplog.at_level("WARNING", logger="grammar"):
        grammar.compile_json_schema({"type": "integer"}, byte_vocab())
    assert not [r for r in caplog.records if "C extensions" in r.getMessage()]
