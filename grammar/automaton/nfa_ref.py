"""The Python reference of grammar/automaton/_nfa.c: the NFA builder's node walk and its rule-facts pass.

Same signatures and results as the C module: `Emitter(builder, nfa, ref_plans, compact,
hoist_min_copies).emit(node, s, t)` appends a node's automaton from state s to state t to the
Nfa's lists, asking the builder (grammar/automaton/nfa.py's NfaBuilder) for a Ref's plan, a
repeat's plan and a subclass node's base form; `rule_facts(rules)` is the one pass over every
rule's nodes. Used where the C extension is not built, and by the tests that check the C module
against it (tests/grammar/test_nfa_c.py).
"""

from __future__ import annotations

from typing import Any

from grammar.errors import GrammarError
from grammar.ir import Alt, Bytes, Graph, Node, Ref, Repeat, Seq

KINDS = (Bytes, Seq, Alt, Repeat, Ref, Graph)


def node_kind(node: Node) -> type:
    """The node class `node` is (a type check: a subclass, such as Lark's group while parsing,
    is found by isinstance, the slow way)."""
    kind = type(node)
    return kind if kind in KINDS else next(k for k in KINDS if isinstance(node, k))


class Emitter:
    """Emitter(builder, nfa, ref_plans, compact, hoist_min_copies): the walk over a grammar's nodes.
    The last three let the C walk skip calls into the builder; this one asks the builder for every
    Ref's and every repeat's plan (the same answers), so it keeps none of them."""

    def __init__(self, builder: Any, nfa: Any, ref_plans: dict[str, Any], compact: bool,
                 hoist_min_copies: int) -> None:
        self.builder = builder
        self.nfa = nfa

    def new_state(self) -> int:
        return self.nfa.new_state()

    def finish(self) -> None:
        """The packed tables (the C walk's); None: this walk wrote the Nfa's lists."""
        return None

    def emit(self, node: Node, s: int, t: int) -> None:
        nfa = self.nfa
        kind = type(node)
        if kind is Bytes:
            nfa.byte_edges[s].extend([(lo, hi, t) for lo, hi in node.ranges])
        elif kind is Seq:
            self.emit_seq(node.items, s, t)
        elif kind is Alt:
            for item in node.items:
                self.emit(item, s, t)
        elif kind is Repeat:
            self.emit_repeat(node, s, t)
        elif kind is Ref:
            plan = self.builder.ref_plan(node.name)
            if type(plan) is int:
                nfa.calls[s].append((plan, t))
            else:
                self.emit(plan, s, t)
        elif kind is Graph:
            self.emit_graph(node, s, t)
        else:
            self.builder.emit_other(node, s, t)

    def emit_seq(self, items: tuple[Node, ...], s: int, t: int) -> None:
        if not items:
            self.nfa.eps[s].append(t)
            return
        cur, last = s, len(items) - 1
        for i, item in enumerate(items):
            nxt = t if i == last else self.nfa.new_state()
            self.emit(item, cur, nxt)
            cur = nxt

    def emit_repeat(self, node: Repeat, s: int, t: int) -> None:
        split, item = self.builder.repeat_plan(node)
        if split is not None:
            self.emit(split, s, t)
            return
        nfa, cur = self.nfa, s
        for _ in range(node.min):
            nxt = nfa.new_state()
            self.emit(item, cur, nxt)
            cur = nxt
        if node.max is None:
            loop = nfa.new_state()
            nfa.eps[cur].append(loop)
            self.emit(item, loop, loop)
            nfa.eps[loop].append(t)
            return
        for _ in range(node.max - node.min):
            nfa.eps[cur].append(t)
            nxt = nfa.new_state()
            self.emit(item, cur, nxt)
            cur = nxt
        nfa.eps[cur].append(t)

    def emit_graph(self, node: Graph, s: int, t: int) -> None:
        nfa = self.nfa
        states = [nfa.new_state() for _ in range(node.num_states)]
        nfa.eps[s].append(states[0])
        for a, b, label in node.edges:
            if label is None:
                nfa.eps[states[a]].append(states[b])
            else:
                self.emit(label, states[a], states[b])
        for f in node.finals:
            nfa.eps[states[f]].append(t)


def rule_facts(rules: dict[str, Node]) -> tuple[dict[str, set[str]], dict[str, int], dict[str, int],
                                                dict[str, list[tuple[str, int]]]]:
    """(graph, counts, own_size, ref_times): per rule the rules it refers to; per referenced rule
    how many references it has in all; per rule its own nodes counted once per copy its repeats
    make (its ir.node_size), and its references with their copy counts."""
    graph: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    own_size: dict[str, int] = {}
    all_ref_times: dict[str, list[tuple[str, int]]] = {}
    for name, node in rules.items():
        refs: set[str] = set()
        ref_times: list[tuple[str, int]] = []
        size = 0
        ones: list[Node] = [node]  # nodes copied once (most of them: no tuple per node)...
        stack: list[tuple[Node, int]] = []  # ...and nodes inside repeats, with their copy counts
        while ones or stack:
            if ones:
                cur, times = ones.pop(), 1
            else:
                cur, times = stack.pop()
            size += times
            kind = node_kind(cur)
            if kind is Seq or kind is Alt:
                if times == 1:
                    ones.extend(cur.items)
                else:
                    stack.extend([(i, times) for i in cur.items])
            elif kind is Ref:
                if cur.name not in rules:
                    raise GrammarError(f"undefined rule {cur.name!r}")
                refs.add(cur.name)
                counts[cur.name] = counts.get(cur.name, 0) + 1
                ref_times.append((cur.name, times))
            elif kind is Repeat:
                copies = times * max(cur.min if cur.max is None else cur.max, 1)
                if copies == 1:
                    ones.append(cur.item)
                else:
                    stack.append((cur.item, copies))
            elif kind is Graph:
                labels = [e for _, _, e in cur.edges if e is not None]
                if times == 1:
                    ones.extend(labels)
                else:
                    stack.extend([(e, times) for e in labels])
                size += times * (cur.num_states - 1)  # (the graph counted num_states, as node_size does)
        graph[name] = refs
        own_size[name] = size
        all_ref_times[name] = ref_times
    return graph, counts, own_size, all_ref_times
