"""Constraints on which declared properties an object holds, and the members graph that enforces them.

Property dependencies (`dependentRequired` and its older spellings) and a `oneOf` whose
branches only require properties are both rules about the set of present properties. With
properties emitted in declared order, the graph carries that set (restricted to the
properties the rules mention) from member to member and accepts the closing brace only
where the rules hold; states from which no accepted set is reachable are pruned, so every
prefix the grammar allows can still be completed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grammar.errors import GrammarError
from grammar.ir import NOTHING, Graph, Node, node_size
from grammar.frontends.json_merge import ANNOTATIONS, ONE_OF_REQUIRED

MAX_INVOLVED = 12  # properties a rule may mention: the graph has up to 2**MAX_INVOLVED sets per member
MAX_PRESENCE_SIZE = 20_000  # NFA states the copies of members may take


@dataclass(slots=True)
class Presence:
    """needs: property -> properties it requires when present; exactly_one: groups of required
    sets of which exactly one must be wholly present (a oneOf of `required`)."""

    needs: dict[str, set[str]] = field(default_factory=dict)
    exactly_one: list[list[frozenset[str]]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.needs or self.exactly_one)

    def involved(self) -> set[str]:
        out = set(self.needs).union(*self.needs.values())
        for group in self.exactly_one:
            out.update(*group)
        return out

    def holds(self, present: frozenset[str]) -> bool:
        if any(t in present and not need <= present for t, need in self.needs.items()):
            return False
        return all(sum(req <= present for req in group) == 1 for group in self.exactly_one)


def presence_rule(schema: dict[str, Any], where: str) -> Presence:
    """The object schema's rules on present properties: its dependencies and the groups a
    oneOf of `required` branches left on it (json_schema puts them under ONE_OF_REQUIRED)."""
    groups = [[frozenset(r) for r in group] for group in schema.get(ONE_OF_REQUIRED, [])]
    return Presence(dependencies(schema, where), groups)


def dependencies(schema: dict[str, Any], where: str) -> dict[str, set[str]]:
    """`dependentRequired`, and `dependencies`/`dependentSchemas` in their property-list (or
    `required`-only schema) form, as trigger -> the other properties it needs."""
    needs: dict[str, set[str]] = {}
    for key in ("dependencies", "dependentRequired", "dependentSchemas"):
        table = schema.get(key)
        if table is None:
            continue
        here = f"{where}/{key}"
        if not isinstance(table, dict):
            raise GrammarError(f"{here}: must be an object")
        for trigger, need in table.items():
            at = f"{here}/{escape(trigger)}"
            if isinstance(need, dict) and key != "dependentRequired":
                rest = {k: v for k, v in need.items() if k not in ANNOTATIONS}
                if rest.keys() - {"required"}:
                    raise GrammarError(f"{at}: only dependencies that require properties are supported")
                need = rest.get("required", [])
            elif need is True and key != "dependentRequired":
                need = []
            if not isinstance(need, list) or not all(isinstance(n, str) for n in need):
                raise GrammarError(f"{at}: must be an array of property names")
            needs.setdefault(trigger, set()).update(n for n in need if n != trigger)
    return {t: need for t, need in needs.items() if need}


def presence_graph(members: list[tuple[Node, bool]], names: list[str], extra: Node | None, comma: Node,
                   rule: Presence, where: str, ws: Node, lead: Node | None = None, nonempty: bool = False) -> Node:
    """Members in declared order (then extra ones) where the present set must satisfy `rule`
    (`nonempty`: and one member at least, minProperties 1).

    State ("at", i, S, some): at member i, S the involved properties emitted, `some` whether
    any member was (for the comma; the first member comes after `lead`); ("pre", i, S) is shared
    by both `some`, so a member is built once per S."""
    involved = rule.involved()
    if len(involved) > MAX_INVOLVED:
        raise GrammarError(f"{where}: rules on which properties are present mention {len(involved)} properties "
                           f"(at most {MAX_INVOLVED})")  # fmt: skip
    n = len(members)
    edges: dict[tuple, list[tuple[tuple, Node | None]]] = {}
    start = ("at", 0, frozenset(), False)
    todo, seen = [start], {start}
    order = [start]  # states as first reached: numbered in this order (a set's order follows the hash seed)

    def add(src: tuple, dst: tuple, label: Node | None) -> None:
        edges.setdefault(src, []).append((dst, label))
        if dst not in seen:
            seen.add(dst)
            todo.append(dst)
            order.append(dst)

    while todo:
        state = todo.pop()
        if state[0] == "pre":
            _, i, present = state
            name = names[i]
            add(state, ("at", i + 1, present | {name} if name in involved else present, True), members[i][0])
        elif state[0] == "at":
            _, i, present, some = state
            if i < n:
                add(state, ("pre", i, present), comma if some else lead)
                if not members[i][1]:
                    add(state, ("at", i + 1, present, some), None)
            elif rule.holds(present):
                if some or not nonempty:
                    add(state, ("end",), None)
                if extra is not None:
                    add(state, ("pre_extra",), comma if some else lead)
        elif state == ("pre_extra",):
            add(state, ("rest_extra",), extra)
        elif state == ("rest_extra",):
            add(state, ("pre_extra",), comma)
            add(state, ("end",), None)
    live = _reaching(edges, ("end",))
    if start not in live:
        return NOTHING
    ids = {start: 0}
    for state in order:
        if state in live:
            ids.setdefault(state, len(ids))
    kept = [(ids[src], ids[dst], label) for src, outs in edges.items() if src in live
            for dst, label in outs if dst in live]  # fmt: skip
    memo = {id(ws): 1}  # free whitespace counts as one state: the limit is the same in both modes
    sizes = {id(m): node_size(m, memo) for m, _ in members}
    if sum(sizes.get(id(label), 0) for _, _, label in kept) > MAX_PRESENCE_SIZE:
        raise GrammarError(f"{where}: too many combinations of present properties to track for these property schemas")
    return Graph(len(ids), tuple(kept), (ids[("end",)],))


def _reaching(edges: dict[tuple, list[tuple[tuple, Node | None]]], target: tuple) -> set[tuple]:
    """States from which `target` is reachable (target included)."""
    back: dict[tuple, list[tuple]] = {}
    for src, outs in edges.items():
        for dst, _ in outs:
            back.setdefault(dst, []).append(src)
    live, todo = {target}, [target]
    while todo:
        for src in back.get(todo.pop(), []):
            if src not in live:
                live.add(src)
                todo.append(src)
    return live


def escape(name: str) -> str:
    """A property name as a JSON pointer segment."""
    return name.replace("~", "~0").replace("/", "~1")
