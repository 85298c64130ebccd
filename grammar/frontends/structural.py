"""Structural tags: tool calls framed by begin/end strings with JSON-schema arguments, optionally in free text."""

from __future__ import annotations

from typing import Any

from grammar.errors import GrammarError
from grammar.ir import Alt, Grammar, Graph, Node, Ref, Repeat, Seq, alt, lit, opt, seq
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.frontends.text_scan import scan_states
from grammar.frontends.xml_params import xml_params_grammar

MAX_COUNTED_CALLS = 16  # free text is copied once per count of calls


def _rename(node: Node, prefix: str) -> Node:
    if isinstance(node, Ref):
        return Ref(prefix + node.name)
    if isinstance(node, Seq):
        return Seq(tuple(_rename(i, prefix) for i in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(_rename(i, prefix) for i in node.items))
    if isinstance(node, Repeat):
        return Repeat(_rename(node.item, prefix), node.min, node.max)
    if isinstance(node, Graph):
        edges = tuple((a, b, None if n is None else _rename(n, prefix)) for a, b, n in node.edges)
        return Graph(node.num_states, edges, node.finals)
    return node


def _alternatives(spec: dict[str, Any], rules: dict[str, Node], strict: bool,
                  likely: list[bytes] | None = None) -> list[tuple[bytes, Node]]:  # fmt: skip
    """(begin bytes, body = schema + end) per alternative; the schemas' rules go into `rules`, and
    into `likely` the first alternative's call as its arguments' likely texts make it (a forced tool
    choice has one alternative; of several, the first is a guess like any other)."""
    alts = spec.get("alternatives")
    if not isinstance(alts, list) or not alts:
        raise GrammarError("structural tag: 'alternatives' must be a non-empty list")
    ws = spec.get("whitespace", "compact")
    out: list[tuple[bytes, Node]] = []
    for i, item in enumerate(alts):
        if not isinstance(item, dict) or not isinstance(item.get("begin"), str) or not isinstance(item.get("end"), str):
            raise GrammarError(f"structural tag: alternatives/{i} needs string 'begin' and 'end'")
        if not item["begin"]:
            raise GrammarError(f"structural tag: alternatives/{i}/begin must not be empty")
        try:
            sub = _arguments_grammar(item, ws, i, strict)
        except GrammarError as exc:
            raise GrammarError(f"structural tag: alternatives/{i}/schema: {exc}") from None
        if likely is not None and not likely:
            likely += [item["begin"].encode() + text + item["end"].encode() for text in sub.likely]
        prefix = f"tag{i}/"
        for name, node in sub.rules.items():
            rules[prefix + name] = _rename(node, prefix)
        out.append((item["begin"].encode(), seq(Ref(prefix + sub.start), lit(item["end"]))))
    return out


def _arguments_grammar(item: dict[str, Any], ws: str, i: int, strict: bool) -> Grammar:
    """One JSON value for the schema, or with `xml_params` {begin, end} XML-style parameters."""
    xml = item.get("xml_params")
    if xml is None:
        return compile_schema_to_grammar(item.get("schema", True), ws, strict)
    if not isinstance(xml, dict) or not all(isinstance(xml.get(k), str) and xml.get(k) for k in ("begin", "end")):
        raise GrammarError(f"structural tag: alternatives/{i}/xml_params needs non-empty string 'begin' and 'end'")
    return xml_params_grammar(item.get("schema", True), xml["begin"], xml["end"], "", strict)


def _text_graph(calls: list[tuple[bytes, Node]], min_calls: int, max_calls: int | None) -> Graph:
    """Free text where reaching a begin string starts that call.

    One copy of the text states per number of calls made so far (0 .. max_calls, or up to
    min_calls and staying there when there is no maximum); in the copy at max_calls the byte
    that would complete a begin string is not allowed, so no further call can start."""
    prefixes, moves = scan_states([b for b, _ in calls])
    begins = {b: body for b, body in calls}
    n = len(prefixes)
    top = min_calls if max_calls is None else max_calls
    edges: list[tuple[int, int, Node | None]] = []
    for count in range(top + 1):
        base = count * n
        after = None if count == max_calls else min(count + 1, top) * n
        for i, targets in enumerate(moves):
            for target, label in targets.items():
                if not isinstance(target, bytes):
                    edges.append((base + i, base + target, label))
                elif after is not None:
                    edges.append((base + i, after, seq(label, begins[target])))
    finals = tuple(range(min_calls * n, (top + 1) * n))
    return Graph((top + 1) * n, tuple(edges), finals)


def structural_to_grammar(spec: dict[str, Any], strict: bool = False) -> Grammar:
    """The grammar of a structural tag spec (grammar/__init__.py); `strict` closes the objects and
    tuples of the calls' schemas (grammar/frontends/json_closed.py)."""
    if not isinstance(spec, dict):
        raise GrammarError("structural tag spec must be a dict")
    known = {"alternatives", "separator", "allow_free_text", "min_calls", "max_calls", "whitespace"}
    for key in spec:
        if key not in known:
            raise GrammarError(f"structural tag: unknown field {key!r}")
    rules: dict[str, Node] = {}
    likely: list[bytes] = []  # a call as the model is likely to write it (grammar/frontends/json_likely.py)
    calls = _alternatives(spec, rules, strict, likely)
    free = bool(spec.get("allow_free_text", False))
    min_calls = spec.get("min_calls", 0 if free else 1)
    max_calls = spec.get("max_calls")
    if not isinstance(min_calls, int) or min_calls < 0 or (max_calls is not None and (not isinstance(max_calls, int) or max_calls < max(min_calls, 1))):
        raise GrammarError("structural tag: bad min_calls/max_calls")
    if free:
        if max(min_calls, max_calls or 0) > MAX_COUNTED_CALLS:
            raise GrammarError(f"structural tag: with free text min_calls and max_calls are at most {MAX_COUNTED_CALLS}")
        rules["start"] = _text_graph(calls, min_calls, max_calls)
        return Grammar(rules, "start", tuple(likely))
    sep = spec.get("separator", "")
    if not isinstance(sep, str):
        raise GrammarError("structural tag: 'separator' must be a string")
    call = alt(*[seq(lit(b), body) for b, body in calls])
    more = Repeat(seq(lit(sep), call), max(min_calls - 1, 0), None if max_calls is None else max_calls - 1)
    body = seq(call, more)
    rules["start"] = opt(body) if min_calls == 0 else body
    return Grammar(rules, "start", tuple(likely))
