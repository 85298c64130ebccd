"""The compile's shortcuts change nothing: shared per-process fragments, alt's identity dedupe, the NFA's one-pass rule facts."""

from __future__ import annotations

import numpy as np
import pytest

import grammar
from grammar import ir
from grammar.errors import GrammarError
from grammar.automaton import nfa_ref
from grammar.automaton.nfa import COMPACT_ABOVE, DEFAULT_NFA_WALK, NfaBuilder, _rule_facts, build_nfa
from grammar.frontends import json_keys, json_numbers, json_order, json_text, unicode
from grammar.frontends.json_order import CopyBudget
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.ir import EMPTY, NOTHING, Alt, Bytes, Grammar, Graph, Ref, Repeat, Seq, alt, is_nothing, lit, node_size, seq, size_exceeds
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 12}, "ünï": {"type": "string", "format": "email"},
                   "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
                   "n": {"type": ["integer", "null"], "minimum": 3}},
    "required": ["name"],
}


def _clear_fragments() -> None:
    for fn in (unicode._ranges_node, json_text._json_char, json_text.any_json_char, json_keys._diverging,
               json_text._any_value, json_text.whitespace):
        fn.cache_clear()


def _nfa_tables(schema):
    nfa = build_nfa(compile_schema_to_grammar(schema, "compact", False))
    return nfa.byte_edges, nfa.eps, nfa.calls, nfa.rule_start, nfa.rule_final


def test_shared_fragments_build_the_same_automaton_and_masks():
    _clear_fragments()
    fresh = _nfa_tables(SCHEMA)
    again = _nfa_tables(SCHEMA)  # now from the cached fragments
    assert fresh == again
    _clear_fragments()
    g1 = grammar.Compiler(VOCAB).compile(compile_schema_to_grammar(SCHEMA, "compact", False))
    g2 = grammar.Compiler(VOCAB).compile(compile_schema_to_grammar(SCHEMA, "compact", False))
    m1, m2 = g1.matcher(), g2.matcher()
    for b in b'{"name":"ab","\xc3\xbcn\xc3\xaf":"a@b.cc","tags":["x"],"n":null}':
        assert np.array_equal(g1.mask(m1.state), g2.mask(m2.state))
        assert m1.accept(b) and m2.accept(b)
    assert m1.is_completed() and m2.is_completed()


def test_alt_dedupes_literals_by_value_and_large_nodes_by_identity():
    big = Seq((lit("ab"), Repeat(Alt((lit("x"), Ref("r"))), 0, None)))
    assert alt(lit("ab"), lit("ab")) == lit("ab")
    assert alt(Bytes(((1, 2),)), Bytes(((1, 2),))) == Bytes(((1, 2),))
    assert alt(big, big) is big
    copy = Seq((lit("ab"), Repeat(Alt((lit("x"), Ref("r"))), 0, None)))
    both = alt(big, copy)  # equal by value, kept twice: the same language
    assert isinstance(both, Alt) and len(both.items) == 2
    assert accepts_text(grammar.compile_json_schema({"enum": ["a", "a", "b"]}, VOCAB), "\"a\"")


def test_inline_size_counts_copies_and_inlined_rules():
    rules = {"start": Seq((Ref("r"), Ref("r"))), "r": Repeat(Bytes(((97, 97),)), 10, 10)}
    builder = NfaBuilder(Grammar(rules))
    assert builder.inline_size("start", {}) == 1 + 2 * (1 + (1 + 10))
    big = {"start": Repeat(Ref("r"), 0, COMPACT_ABOVE), "r": Seq((lit("a"), lit("b")))}
    assert NfaBuilder(Grammar(big)).compact


def test_a_node_subclass_builds_as_its_base_class():
    class Group(Alt):
        pass

    plain = build_nfa(Grammar({"start": Seq((Alt((lit("a"), lit("b"))), Ref("r"))), "r": lit("c")}))
    sub = build_nfa(Grammar({"start": Seq((Group((lit("a"), lit("b"))), Ref("r"))), "r": lit("c")}))
    assert (plain.byte_edges, plain.eps, plain.calls) == (sub.byte_edges, sub.eps, sub.calls)


def _facts_by_recursion(node, times=1):
    """(size, [(ref, times)]) of a rule's nodes, the plain recursive way (what _rule_facts computes)."""
    size, refs = times, []
    if isinstance(node, Bytes):
        parts = []
    elif isinstance(node, (Seq, Alt)):
        parts = [_facts_by_recursion(i, times) for i in node.items]
    elif isinstance(node, Ref):
        parts = []
        refs.append((node.name, times))
    elif isinstance(node, Repeat):
        parts = [_facts_by_recursion(node.item, times * max(node.min if node.max is None else node.max, 1))]
    else:
        parts = [_facts_by_recursion(e, times) for _, _, e in node.edges if e is not None]
        size += times * (node.num_states - 1)  # (a graph counts its states, as node_size does)
    for s, r in parts:
        size += s
        refs += r
    return size, refs


def test_rule_facts_count_nodes_once_per_copy():
    """_rule_facts keeps nodes copied once apart from those inside repeats (no tuple per node)."""
    graph = Graph(3, ((0, 1, lit("k")), (1, 2, None), (1, 1, Repeat(Ref("r"), 2, 3))), (2,))
    rules = {"start": Seq((Repeat(Seq((Ref("r"), graph)), 0, None), Repeat(Alt((graph, lit("xy"))), 4, 4), Ref("r"))),
             "r": Alt((Repeat(lit("ab"), 1, 1), Repeat(Ref("s"), 0, 2))), "s": lit("z")}
    facts = _rule_facts(Grammar(rules))
    for name, node in rules.items():
        size, refs = _facts_by_recursion(node)
        assert facts.own_size[name] == size and sorted(facts.ref_times[name]) == sorted(refs), name
        assert size == node_size(node), name  # (the NFA builder's is_call reads it as the rule's node_size)
        assert facts.graph[name] == {r for r, _ in refs}
    assert facts.counts == {"r": 4, "s": 1}


def test_cached_number_nodes_are_handed_out_renewed():
    """Equal by value, new to alt's identity dedupe: side by side they stay two branches, as when built anew."""
    for make, fresh in ((lambda: json_numbers.number_node(None, None, None),
                         lambda: json_numbers._number_node.__wrapped__(None, None, None, False, False)),
                        (lambda: json_numbers.integer_range(None, 5), lambda: json_numbers._integer_range.__wrapped__(None, 5))):
        a, b = make(), make()
        assert a == b == fresh() and a is not b
        assert alt(a, b) == alt(fresh(), fresh()) and alt(a, a) == alt(a)
    assert json_numbers.number_node(-0.0, 1, None) == json_numbers._number_node.__wrapped__(-0.0, 1, None, False, False)


def test_is_nothing_is_equality_with_nothing():
    class Group(Alt):
        pass

    for node in (NOTHING, Alt(()), EMPTY, lit("a"), lit("ab"), Alt((lit("a"),)), Group(()), Repeat(NOTHING, 0, 1), Ref("r")):
        assert is_nothing(node) == (node == NOTHING)
        assert (seq(lit("x"), node) == NOTHING) == (node == NOTHING)
    assert lit("é") == Seq((Bytes(((0xC3, 0xC3),)), Bytes(((0xA9, 0xA9),)))) and lit(b"\xff") == Bytes(((255, 255),))


def test_size_exceeds_answers_as_node_size_would():
    """The front end's bounded threshold check (ir.size_exceeds) agrees with node_size at every limit."""
    graph = Graph(3, ((0, 1, lit("key")), (1, 2, Repeat(lit("ab"), 2, 5)), (1, 1, None)), (2,))
    nodes = [lit("a"), Ref("r"), seq(lit("xy"), Repeat(alt(lit("p"), lit("qr")), 0, None)), graph,
             Repeat(Seq((graph, lit("z"))), 3, 3), Alt((graph, Repeat(graph, 0, 2)))]
    for node in nodes:
        size = node_size(node)  # (kept: later checks of this node count it at once)
        fresh = Repeat(node, 1, 1)  # a new node around it: walked, its inside read from the kept size
        for limit in range(0, size + 3):
            assert size_exceeds(node, limit) == (size > limit), (node, limit)
            assert size_exceeds(fresh, limit) == (size + 1 > limit), (node, limit)


def test_copy_sizes_are_measured_once_per_compile():
    """An object's members are measured once: the objects around it read their sizes (json_order.CopyBudget)."""
    ws = Repeat(Bytes(((32, 32),)), 0, 4)
    inner = seq(lit("{"), ws, Repeat(lit("ab"), 1, 3), Ref("r"), lit("}"))
    budget = CopyBudget(ws, left=1000)
    first = budget.size(inner)
    # the seq, `{`, ws as one state, the repeat of `ab` (a seq of 2), a rule the builder may inline, `}`
    assert first == 1 + 1 + 1 + (1 + 3 * 3) + json_order.REF_COPY_SIZE + 1
    budget._sizes[id(inner)] = (inner, 5000)  # what a second walk of inner would not find
    outer = Seq((lit("k"), inner, ws))  # (not flattened: inner stays one node)
    assert budget.size(outer) == 1 + 1 + 5000 + 1
    assert budget.spend(600) and budget.left == 400 and not budget.spend(401) and budget.left == 400


def test_the_c_walk_asks_a_repeats_plan_once_per_node():
    """A flexible grammar's whitespace gap, one node met at every separator, is planned once by the builder."""
    gap = Repeat(Bytes(((32, 32), (10, 10))), 0, 20)
    grammar_ = Grammar({"start": seq(*[seq(lit(c), gap) for c in "abcdefgh"])})
    asked = []

    class Counting(NfaBuilder):
        def repeat_plan(self, node):
            asked.append(node)
            return super().repeat_plan(node)

    counted = Counting(grammar_).build()
    assert len(asked) == (1 if DEFAULT_NFA_WALK is not nfa_ref else 8)
    plain = build_nfa(grammar_, nfa_ref)
    assert counted.num_states == plain.num_states
    compiled = grammar.Compiler(VOCAB).compile(grammar_)
    assert accepts_text(compiled, "a b\n\ncdefg  h ") and not accepts_text(compiled, "ab c d")


@pytest.mark.skipif(ir.copy_size is ir.copy_size_py, reason="grammar's C extensions are not built")
def test_the_c_copy_size_is_its_reference(bench_rows):
    """grammar/_ir.c measures every dev grammar's rules as ir.copy_size_py does (a memo kept across rules)."""
    measured = 0
    for row in bench_rows:
        for mode in ("compact", "flexible"):
            try:
                g = compile_schema_to_grammar(row["schema"], mode, False)
            except GrammarError:
                continue
            ws = json_text.whitespace(mode)
            c_memo, py_memo = {id(ws): (ws, 1)}, {id(ws): (ws, 1)}
            for node in g.rules.values():
                assert ir.copy_size(node, c_memo, 200) == ir.copy_size_py(node, py_memo, 200)
            assert {k: v[1] for k, v in c_memo.items()} == {k: v[1] for k, v in py_memo.items()}
            measured += 1
    assert measured >= 90  # (the test sample: 50 schemas, two modes)
    for bad in (1, "x", (lit("a"),)):
        with pytest.raises(TypeError):
            ir.copy_size(bad, {}, 200)
