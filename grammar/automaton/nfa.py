"""Builds a byte NFA with call edges from a `Grammar`: non-recursive rules inlined, recursive ones called."""

from __future__ import annotations

import array
import math
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from grammar.automaton import nfa_ref
from grammar.automaton.nfa_ref import node_kind
from grammar.errors import GrammarError
from grammar.ir import Alt, Grammar, Graph, Node, Ref, Repeat, Seq, node_size
from grammar.time_limit import check_time_limit

try:
    from grammar.automaton import _nfa
except ImportError:  # built by setup.py; without a C compiler the reference walk builds the NFA
    _nfa = None

# The node walk and rule-facts pass: the C module or its Python reference (same results).
DEFAULT_NFA_WALK: ModuleType = _nfa or nfa_ref

HOIST_MIN_SIZE = 150     # a repeated item at least this big becomes its own called rule...
HOIST_MIN_COPIES = 4     # ...when it is copied at least this many times
BIG_RULE_SIZE = 4000     # a rule referenced from several places is called, not inlined, above this
COMPACT_RULE_SIZE = 200  # compact: above this, a rule referenced from several places is called
MAX_NFA_STATES = 400_000
# A grammar whose inlined NFA would pass this many states is built compact: a repeat of a small item
# is built in called blocks (COMPACT_BLOCK below), and any other repeat of COMPACT_REPEAT_SIZE states
# or more calls its item as a rule instead of copying it.
COMPACT_ABOVE = 150_000
COMPACT_REPEAT_SIZE = 64
SPLIT_ABOVE = 1024  # compact: a repeat of more copies is blocks of about sqrt(copies) copies, called
# compact: a repeat of a small item without references (a string's character) of more than this many
# copies is built from two called rules per item, shared by every such repeat: a block of this many
# copies inlined, and up to one fewer; only the rest (under a block before and after) is inlined
# where the repeat stands. A call per character instead put a call and a return inside every token
# of the string, and each position of it was a new stack: 50-110 ms a mask on SmolLM2 (every token
# resolved through the stack), against one walk per position of a block, kept across blocks. On the
# 16 dev schemas with such strings (ad-hoc, SmolLM2): fill mean 5.3 ms -> 125 us at 64 copies, 61 us
# at 128 (compile p50 51 -> 15 / 20 ms); 256 made one of them too large.
COMPACT_BLOCK = 128


class Nfa:
    """Byte edges, epsilon edges and call edges per state; one start and final state per rule.

    Built either as lists (the reference walk, nfa_ref.py: `byte_edges[s]` a list of (lo, hi, t),
    `eps[s]` of targets, `calls[s]` of (rule, return state)) or packed by the C walk (`packed`:
    (num_states, edge_off, edges, eps_off, eps, call_off, calls), int32 bytes, each state's edges
    from off[s] to off[s + 1] in the order the lists would hold them), which the C row builder reads
    as they are; the lists of a packed Nfa are made from it on first use (tests, the reference
    builder). A compile's NFA of ~2,000 states was ~15,000 Python objects, made and freed again:
    a third of a median compile.
    """

    __slots__ = ("_byte_edges", "_eps", "_calls", "packed", "rule_start", "rule_final", "rule_names")

    def __init__(self) -> None:
        self._byte_edges: list[list[tuple[int, int, int]]] | None = []
        self._eps: list[list[int]] | None = []
        self._calls: list[list[tuple[int, int]]] | None = []
        self.packed: tuple[int, bytes, bytes, bytes, bytes, bytes, bytes] | None = None
        self.rule_start: list[int] = []
        self.rule_final: list[int] = []
        self.rule_names: list[str] = []

    @property
    def num_states(self) -> int:
        return self.packed[0] if self.packed is not None else len(self._eps)

    @property
    def byte_edges(self) -> list[list[tuple[int, int, int]]]:
        if self._byte_edges is None:
            self._unpack()
        return self._byte_edges

    @property
    def eps(self) -> list[list[int]]:
        if self._eps is None:
            self._unpack()
        return self._eps

    @property
    def calls(self) -> list[list[tuple[int, int]]]:
        if self._calls is None:
            self._unpack()
        return self._calls

    def set_packed(self, packed: tuple[int, bytes, bytes, bytes, bytes, bytes, bytes]) -> None:
        """Take the C walk's packed tables (the lists are made from them when asked)."""
        self.packed = packed
        self._byte_edges = self._eps = self._calls = None

    def _unpack(self) -> None:
        n, *tables = self.packed
        edge_off, edges, eps_off, eps, call_off, calls = (array.array("i", t) for t in tables)
        self._byte_edges = [[(edges[3 * i], edges[3 * i + 1], edges[3 * i + 2]) for i in range(edge_off[s], edge_off[s + 1])]
                            for s in range(n)]
        self._eps = [list(eps[eps_off[s]:eps_off[s + 1]]) for s in range(n)]
        self._calls = [[(calls[2 * i], calls[2 * i + 1]) for i in range(call_off[s], call_off[s + 1])] for s in range(n)]

    def new_state(self) -> int:
        n = len(self.eps)
        self.byte_edges.append([])
        self.eps.append([])
        self.calls.append([])
        if not (n + 1) & 1023:
            self.check_size(n + 1)
        return n

    def check_size(self, num_states: int) -> None:
        """Every 1024 states: the state limit and the compile's time limit."""
        if num_states > MAX_NFA_STATES:
            raise GrammarError(f"grammar too large (over {MAX_NFA_STATES} automaton states)")
        check_time_limit()


@dataclass(slots=True)
class _RuleFacts:
    """What one pass over every rule's nodes finds: the rules each refers to, how many references
    each has in all, and for the inline size each rule's own nodes (weighted by how many copies
    its repeats make: the rule's ir.node_size) and its references with their copy counts."""

    graph: dict[str, set[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    own_size: dict[str, int] = field(default_factory=dict)
    ref_times: dict[str, list[tuple[str, int]]] = field(default_factory=dict)


def _rule_facts(grammar: Grammar, walk: ModuleType = DEFAULT_NFA_WALK) -> _RuleFacts:
    return _RuleFacts(*walk.rule_facts(grammar.rules))


def _recursive_rules(graph: dict[str, set[str]]) -> set[str]:
    """Rules that can reach themselves through references."""
    out: set[str] = set()
    for start in graph:
        check_time_limit()  # rules times references: thousands of $defs
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            cur = todo.pop()
            if cur == start:
                out.add(start)
                break
            if cur not in seen:
                seen.add(cur)
                todo.extend(graph[cur])
    return out


class NfaBuilder:
    """Turns a `Grammar` into an `Nfa`; called once per compile.

    The walk over the nodes and the rule-facts pass are `walk`'s (grammar/automaton/_nfa.c, or
    its reference nfa_ref.py: the same NFA); the walk asks this builder for the decisions that
    need the rule facts: `ref_plan`, `repeat_plan`, `emit_other`.
    """

    def __init__(self, grammar: Grammar, walk: ModuleType = DEFAULT_NFA_WALK) -> None:
        self.grammar = grammar
        self.rules = dict(grammar.rules)
        self.walk = walk
        self.facts = _rule_facts(grammar, walk)
        self.num_refs = self.facts.counts
        self.recursive = _recursive_rules(self.facts.graph)
        self.nfa = Nfa()
        self.rule_ids: dict[str, int] = {}
        self.pending: list[str] = []
        self.hoisted: dict[int, str] = {}
        self.blocks: dict[tuple[int, int, int], Ref] = {}  # (id(item), min, max) -> its shared rule
        self.small: dict[int, bool] = {}
        self.ref_plans: dict[str, int | Node] = {}
        self.repeat_plans: dict[int, tuple[Repeat, tuple[Node | None, Node]]] = {}
        self._emitter: Any = None
        self.compact = False
        self.compact = self.inline_size(grammar.start, {}) > COMPACT_ABOVE

    def build(self) -> Nfa:
        emitter = self._emitter = self.walk.Emitter(self, self.nfa, self.ref_plans, self.compact, HOIST_MIN_COPIES)
        try:
            self.rule_id(self.grammar.start)
            while self.pending:
                name = self.pending.pop()
                rid = self.rule_ids[name]
                emitter.emit(self.rules[name], self.nfa.rule_start[rid], self.nfa.rule_final[rid])
            packed = emitter.finish()
        finally:
            self._emitter = None  # (the emitter holds this builder: no cycle left behind)
        if packed is not None:
            self.nfa.set_packed(packed)
        return self.nfa

    def rule_id(self, name: str) -> int:
        if name not in self.rule_ids:
            self.rule_ids[name] = len(self.nfa.rule_start)
            self.nfa.rule_start.append(self._emitter.new_state())
            self.nfa.rule_final.append(self._emitter.new_state())
            self.nfa.rule_names.append(name)
            self.pending.append(name)
        return self.rule_ids[name]

    def inline_size(self, name: str, memo: dict[str, int]) -> int:
        """About how many NFA states rule `name` takes with the rules it inlines (its nodes, each
        counted once per copy; refs of called rules count one). Only compared with COMPACT_ABOVE."""
        if name in memo:
            return memo[name]
        memo[name] = 1  # (a recursive rule is called: counted once)
        total = self.facts.own_size[name]
        for ref, times in self.facts.ref_times[name]:
            if total > COMPACT_ABOVE:
                break
            if not self.is_call(ref):
                total += times * self.inline_size(ref, memo)
        memo[name] = total
        return total

    def is_call(self, name: str) -> bool:
        if name in self.recursive:
            return True
        if self.num_refs.get(name, 0) <= 1:
            return False
        # its node_size, from the C pass (the rules this builder adds are recursive: answered above)
        return self.facts.own_size[name] > (COMPACT_RULE_SIZE if self.compact else BIG_RULE_SIZE)

    def ref_plan(self, name: str) -> int | Node:
        """What a reference to rule `name` becomes: the rule's id when it is called (a call
        edge), else its node (inlined); memoized in `ref_plans` (which the walk reads first)."""
        plan = self.ref_plans.get(name)
        if plan is None:
            if name not in self.rules:
                raise GrammarError(f"undefined rule {name!r}")
            plan = self.ref_plans[name] = self.rule_id(name) if self.is_call(name) else self.rules[name]
        return plan

    def repeat_plan(self, node: Repeat) -> tuple[Node | None, Node]:
        """(a node to build instead, the item) for a repeat split into called blocks (compact), else
        (None, the item to copy): a big item copied several times becomes a called rule. The same
        node gets the same plan (memoized by identity: a flexible grammar's whitespace gap, one
        shared node, is met at every separator)."""
        hit = self.repeat_plans.get(id(node))
        if hit is not None:
            return hit[1]
        plan = self._repeat_plan(node)
        self.repeat_plans[id(node)] = (node, plan)  # (the node kept: its id stays its own)
        return plan

    def _repeat_plan(self, node: Repeat) -> tuple[Node | None, Node]:
        if self.compact and self.is_small(node.item):
            return self.in_blocks(node), node.item
        if self.compact and (node.min > SPLIT_ABOVE or (node.max is not None and node.max - node.min > SPLIT_ABOVE)):
            return _split(node), node.item
        item = node.item
        copies = node.min if node.max is None else node.max
        size = node_size(item) if copies >= HOIST_MIN_COPIES else 0
        if size >= HOIST_MIN_SIZE or (self.compact and size * copies >= COMPACT_REPEAT_SIZE):
            name = self.hoisted.setdefault(id(item), f"@repeat{len(self.hoisted)}")
            self.rules[name] = item
            item = Ref(name)
            self.recursive.add(name)  # force a call
        return None, item

    def is_small(self, node: Node) -> bool:
        """Whether `node` is copied rather than called in a compact grammar's repeats: under
        HOIST_MIN_SIZE states and no rule reference inside (a character, a digit)."""
        small = self.small.get(id(node))
        if small is None:
            small = self.small[id(node)] = node_size(node) < HOIST_MIN_SIZE and not _refers(node)
        return small

    def in_blocks(self, node: Repeat) -> Node | None:
        """A repeat of a small item as COMPACT_BLOCK-copy blocks (None: few enough copies to copy
        them all): item^min as block^(min // B) item^(min % B), then item^0..m (m = k B + r) as
        block^0..k-1 (upto | block item^0..r), upto = item^0..B-1; block and upto are called rules,
        one each per item (the same language; at most three configurations under way)."""
        item, lo, hi, b = node.item, node.min, node.max, COMPACT_BLOCK
        if (lo if hi is None else hi) <= b:
            return None
        full, part = divmod(lo, b)
        parts: list[Node] = [Repeat(self.shared(item, b, b), full, full), Repeat(item, part, part)]
        if hi is None:
            parts.append(Repeat(item, 0, None))
        else:
            k, r = divmod(hi - lo, b)
            if k:
                parts += [Repeat(self.shared(item, b, b), 0, k - 1),
                          Alt((self.shared(item, 0, b - 1), Seq((self.shared(item, b, b), Repeat(item, 0, r)))))]
            else:
                parts.append(Repeat(item, 0, r))
        return Seq(tuple(p for p in parts if not (isinstance(p, Repeat) and p.max == 0)))

    def shared(self, item: Node, lo: int, hi: int) -> Ref:
        """A reference to the called rule item^lo..hi, one per item and counts."""
        key = (id(item), lo, hi)
        ref = self.blocks.get(key)
        if ref is None:
            name = f"@block{len(self.blocks)}"
            self.rules[name] = Repeat(item, lo, hi)
            self.recursive.add(name)  # (called, never inlined)
            ref = self.blocks[key] = Ref(name)
        return ref

    def emit_other(self, node: Node, s: int, t: int) -> None:
        """A node of a subclass (such as Lark's group while parsing): built as its base class."""
        base = node_kind(node)
        self._emitter.emit(base(*(getattr(node, f) for f in base.__slots__)), s, t)


def _refers(node: Node) -> bool:
    """Whether a rule reference lies anywhere inside `node`."""
    if isinstance(node, Ref):
        return True
    if isinstance(node, (Seq, Alt)):
        return any(_refers(i) for i in node.items)
    if isinstance(node, Repeat):
        return _refers(node.item)
    if isinstance(node, Graph):
        return any(e is not None and _refers(e) for _, _, e in node.edges)
    return False


def _split(node: Repeat) -> Node:
    """The same language with no repeat of more than about SPLIT_ABOVE copies, in blocks of b
    copies that are then called rules: item^n as (item^b)^(n // b) item^(n % b), and item^0..m
    (m = k b + r, r < b) as (item^b)^0..k-1 (item^0..b-1 | item^b item^0..r), where at each point
    only the block, the short tail and the last block can be under way (a few pushdown
    configurations, not one per way of cutting the text into blocks)."""
    item, parts = node.item, []
    lo = node.min
    if lo > SPLIT_ABOVE:
        b = math.isqrt(lo)
        parts += [Repeat(Repeat(item, b, b), lo // b, lo // b), Repeat(item, lo % b, lo % b)]
    else:
        parts.append(Repeat(item, lo, lo))
    if node.max is None:
        parts.append(Repeat(item, 0, None))
    elif node.max - lo > SPLIT_ABOVE:
        m = node.max - lo
        b = math.isqrt(m)
        k, r = divmod(m, b)
        block = Repeat(item, b, b)
        parts += [Repeat(block, 0, k - 1), Alt((Repeat(item, 0, b - 1), Seq((block, Repeat(item, 0, r)))))]
    else:
        parts.append(Repeat(item, 0, node.max - lo))
    return Seq(tuple(p for p in parts if not (isinstance(p, Repeat) and p.max == 0)))


def build_nfa(grammar: Grammar, walk: ModuleType = DEFAULT_NFA_WALK) -> Nfa:
    """`grammar`'s NFA, its nodes walked by `walk` (grammar/automaton/_nfa.c or nfa_ref.py)."""
    return NfaBuilder(grammar, walk).build()
