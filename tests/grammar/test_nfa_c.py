"""The C node walk of the NFA builder (grammar/automaton/_nfa.c) builds the NFA its Python reference builds."""

from __future__ import annotations

import pytest

from grammar.automaton import nfa as nfa_module
from grammar.automaton import nfa_ref
from grammar.automaton.nfa import COMPACT_ABOVE, NfaBuilder, _rule_facts, build_nfa
from grammar.errors import GrammarError
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.frontends.lark import lark_to_grammar
from grammar.ir import Alt, Bytes, Grammar, Graph, Ref, Repeat, Seq, lit, literals

pytestmark = pytest.mark.skipif(nfa_module._nfa is None, reason="grammar's C extensions are not built")
C = nfa_module._nfa
WALKS = [C, nfa_ref]


def _tables(grammar: Grammar, walk):
    nfa = build_nfa(grammar, walk)
    return nfa.byte_edges, nfa.eps, nfa.calls, nfa.rule_start, nfa.rule_final, nfa.rule_names


def _same_both_ways(grammar: Grammar) -> None:
    assert nfa_module.DEFAULT_NFA_WALK is C
    assert _tables(grammar, C) == _tables(grammar, nfa_ref)
    c, ref = _rule_facts(grammar, C), _rule_facts(grammar, nfa_ref)
    assert (c.graph, c.counts, c.own_size, c.ref_times) == (ref.graph, ref.counts, ref.own_size, ref.ref_times)


@pytest.mark.parametrize("mode", ["compact", "flexible"])
@pytest.mark.parametrize("strict", [False, True])
def test_dev_schemas_build_the_same_nfa(bench_rows, mode, strict):
    built = 0
    for row in bench_rows:
        try:
            g = compile_schema_to_grammar(row["schema"], mode, strict)
        except GrammarError:
            continue
        _same_both_ways(g)
        built += 1
    assert built >= 45


GRAPH = Graph(4, ((0, 1, lit("ab")), (1, 2, None), (2, 1, Bytes(((48, 57), (97, 102)))), (1, 3, Ref("r"))), (2, 3))
CASES = {
    "ranges, empty seq, optional, bounded and unbounded repeats": Grammar({"start": Seq((
        Bytes(((1, 3), (10, 10), (200, 255))), Seq(()), Repeat(lit("x"), 0, 1), Repeat(Ref("r"), 2, 5),
        Repeat(Alt((lit("yz"), Seq(()))), 1, None), Repeat(lit("q"), 0, 0))), "r": lit("rr")}),
    "graph with epsilon edges and labels": Grammar({"start": Seq((GRAPH, GRAPH)), "r": Alt((lit("s"), lit("tu")))}),
    "a literal trie": Grammar({"start": literals([f"v{i}".encode() for i in range(40)])}),
    "recursive rules are called": Grammar({"start": Ref("value"), "value": Alt((lit("n"), Seq((lit("["), Ref("items"), lit("]"))))),
                                           "items": Alt((Seq(()), Seq((Ref("value"), Repeat(Seq((lit(","), Ref("value"))), 0, None)))))}),
    "a big repeated item is hoisted": Grammar({"start": Seq((Repeat(Seq(tuple(Bytes(((i, i + 1),)) for i in range(160))), 4, 6),
                                                             Repeat(Alt((Ref("r"), lit("w"))), 5, 5))), "r": lit("rr")}),
    "compact: long repeats split and called": Grammar({"start": Seq((Repeat(Ref("r"), 0, COMPACT_ABOVE),
                                                                    Repeat(lit("z"), 3000, 3000)))}) ,
}
CASES["compact: long repeats split and called"].rules["r"] = Seq((lit("a"), Repeat(lit("b"), 0, 70)))


@pytest.mark.parametrize("name", list(CASES))
def test_hand_made_grammars_build_the_same_nfa(name):
    g = CASES[name]
    _same_both_ways(g)
    if name.startswith("compact"):
        assert NfaBuilder(g).compact
    if name.startswith("a big"):
        assert any(n.startswith("@repeat") for n in build_nfa(g, C).rule_names)


def test_lark_groups_and_subclass_nodes_build_as_their_base_class():
    class Group(Alt):
        pass

    _same_both_ways(Grammar({"start": Seq((Group((lit("a"), Ref("r"))), Repeat(Group((lit("b"),)), 0, 3))), "r": lit("c")}))
    _same_both_ways(lark_to_grammar('start: ("a" | "b")+ item\nitem: /[0-9]{2,4}/ ("," item)?\n'))


def test_errors_are_the_references(monkeypatch):
    undefined = Grammar({"start": Seq((lit("a"), Ref("nope")))})
    for walk in WALKS:
        with pytest.raises(GrammarError, match="undefined rule 'nope'"):
            build_nfa(undefined, walk)
    monkeypatch.setattr(nfa_module, "MAX_NFA_STATES", 3000)  # (checked every 1024 states)
    huge = Grammar({"start": Repeat(lit("ab"), 2000, 2000)})
    for walk in WALKS:
        with pytest.raises(GrammarError, match="over 3000"):
            build_nfa(huge, walk)
    deep = lit("x")
    for _ in range(5000):
        deep = Seq((lit("("), Alt((deep, lit("y")))))
    for walk in WALKS:
        with pytest.raises(RecursionError):  # the compiler turns it into "nested too deeply"
            build_nfa(Grammar({"start": deep}), walk)


def test_the_c_nfa_is_packed():
    """The C walk's NFA is its packed int32 tables, no Python object per state (making and freeing
    ~15,000 of them was a third of a median compile); the lists are made from them on demand and
    equal the reference walk's."""
    g = compile_schema_to_grammar({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}})
    nfa = build_nfa(g, C)
    assert nfa.packed is not None and nfa._eps is None and nfa._byte_edges is None and nfa._calls is None
    assert all(type(t) is bytes for t in nfa.packed[1:]) and nfa.num_states == nfa.packed[0]
    ref = build_nfa(g, nfa_ref)
    assert (nfa.byte_edges, nfa.eps, nfa.calls) == (ref.byte_edges, ref.eps, ref.calls)
    assert nfa.num_states == ref.num_states == len(ref.eps)
