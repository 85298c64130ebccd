"""Lark EBNF text -> grammar (scannerless: terminals are inlined byte patterns, %ignore between items)."""

from __future__ import annotations

import re

from grammar.errors import GrammarError
from grammar.ir import EMPTY, Alt, Grammar, Node, Ref, Repeat, Seq, alt, lit, opt, seq, star
from grammar.frontends.regex import regex_to_node

_TOKEN = re.compile(r"""
    (?P<ws>[ \t]+|\\\n|//[^\n]*|\#[^\n]*)
  | (?P<nl>\n)
  | (?P<string>"(?:[^"\\\n]|\\.)*"i?)
  | (?P<regex>/(?:[^/\\\n]|\\.)+/[imslux]*)
  | (?P<directive>%[a-z]+)
  | (?P<range>\.\.)
  | (?P<name>[?!]?[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_0-9]+)*)
  | (?P<number>\d+)
  | (?P<arrow>->)
  | (?P<op>[:|()\[\]*+?~,.])
""", re.VERBOSE)

COMMON = {
    "DIGIT": r"[0-9]", "HEXDIGIT": r"[a-fA-F0-9]", "INT": r"[0-9]+", "SIGNED_INT": r"[+-]?[0-9]+",
    "DECIMAL": r"[0-9]+\.[0-9]*|\.[0-9]+", "FLOAT": r"([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+",
    "SIGNED_FLOAT": r"[+-]?(([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)",
    "NUMBER": r"([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+([eE][+-]?[0-9]+)?",
    "SIGNED_NUMBER": r"[+-]?(([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+([eE][+-]?[0-9]+)?)",
    "ESCAPED_STRING": r'"(\\.|[^"\\])*"', "LETTER": r"[a-zA-Z]", "LCASE_LETTER": r"[a-z]",
    "UCASE_LETTER": r"[A-Z]", "WORD": r"[a-zA-Z]+", "CNAME": r"[a-zA-Z_][a-zA-Z0-9_]*",
    "WS_INLINE": r"[ \t]+", "WS": r"[ \t\f\r\n]+", "CR": r"\r", "LF": r"\n", "NEWLINE": r"(\r?\n)+",
}


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise GrammarError(f"lark: cannot parse grammar at {text[pos:pos + 20]!r}")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append((kind, m.group()))
        pos = m.end()
    out.append(("nl", "\n"))
    return out


def _string_literal(tok: str) -> Node:
    insensitive = tok.endswith("i")
    body = tok[1:-2] if insensitive else tok[1:-1]
    value = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), body)
    if not insensitive:
        return lit(value)
    return seq(*[alt(lit(c.lower()), lit(c.upper())) if c.isalpha() else lit(c) for c in value])


def _regex_literal(tok: str) -> Node:
    end = tok.rindex("/")
    flags = tok[end + 1 :]
    if set(flags) - {"x"}:
        raise GrammarError(f"lark: regex flags {flags!r} are not supported")
    pattern = tok[1:end].replace("\\/", "/")
    if "x" in flags:
        pattern = re.sub(r"\s+|#[^\n]*", "", pattern)
    return regex_to_node(pattern, where="lark")


class LarkParser:
    """Recursive descent over the token list of one Lark grammar text."""

    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.rules: dict[str, Node] = {}
        self.terminals: set[str] = set()
        self.ignore: list[str] = []

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i]

    def take(self, kind: str, value: str | None = None) -> str:
        k, v = self.toks[self.i]
        if k != kind or (value is not None and v != value):
            raise GrammarError(f"lark: expected {value or kind}, got {v!r}")
        self.i += 1
        return v

    def parse(self) -> Grammar:
        while self.i < len(self.toks):
            kind, value = self.peek()
            if kind == "nl":
                self.i += 1
            elif kind == "directive":
                self.directive()
            elif kind == "name":
                self.definition()
            else:
                raise GrammarError(f"lark: unexpected {value!r}")
        if "start" not in self.rules:
            raise GrammarError("lark: no 'start' rule")
        return self.finish()

    def directive(self) -> None:
        name = self.take("directive")
        args: list[str] = []
        while self.peek()[0] != "nl":
            args.append(self.toks[self.i][1])
            self.i += 1
        if name == "%ignore":
            self.ignore.append("".join(args))
        elif name == "%import":
            self.import_common(args)
        else:
            raise GrammarError(f"lark: directive {name} is not supported")

    def import_common(self, args: list[str]) -> None:
        path = "".join(args)
        m = re.fullmatch(r"common\.([A-Z_]+)(?:->([A-Z_]+))?|common\.\(([A-Z_,]+)\)", path)
        if not m:
            raise GrammarError(f"lark: only '%import common.NAME' is supported, got {path!r}")
        names = m.group(3).split(",") if m.group(3) else [m.group(1)]
        for name in names:
            if name not in COMMON:
                raise GrammarError(f"lark: common.{name} is not known")
            alias = m.group(2) or name
            self.rules[alias] = regex_to_node(COMMON[name], where="lark")
            self.terminals.add(alias)

    def definition(self) -> None:
        name = self.take("name").lstrip("?!")
        if self.peek() == ("op", "."):
            self.i += 1
            self.take("number")  # priority: ignored, it does not change the language
        self.take("op", ":")
        if name in self.rules:
            raise GrammarError(f"lark: {name!r} defined twice")
        if name.lstrip("_").isupper():
            self.terminals.add(name)
        self.rules[name] = self.expansions()

    def expansions(self) -> Node:
        options = [self.expansion()]
        while True:
            if self.peek() == ("op", "|"):
                self.i += 1
            elif self.peek()[0] == "nl" and self.toks[self.i + 1] == ("op", "|") if self.i + 1 < len(self.toks) else False:
                self.i += 2
            else:
                break
            options.append(self.expansion())
        return alt(*options)

    def expansion(self) -> Node:
        items: list[Node] = []
        while True:
            kind, value = self.peek()
            if kind == "arrow":
                self.i += 1
                self.take("name")
                continue
            if kind in ("nl",) or (kind == "op" and value in "|)]"):
                break
            items.append(self.expr())
        return Seq(tuple(items)) if len(items) != 1 else items[0]

    def expr(self) -> Node:
        node = self.atom()
        kind, value = self.peek()
        if kind == "op" and value in "*+?":
            self.i += 1
            return {"*": star, "+": lambda n: Repeat(n, 1, None), "?": opt}[value](node)
        if kind == "op" and value == "~":
            self.i += 1
            lo = int(self.take("number"))
            hi = lo
            if self.peek()[0] == "range":
                self.i += 1
                hi = int(self.take("number"))
            return Repeat(node, lo, hi)
        return node

    def atom(self) -> Node:
        kind, value = self.peek()
        self.i += 1
        if kind == "op" and value in "([":
            inner = self.expansions()
            self.take("op", ")" if value == "(" else "]")
            return opt(inner) if value == "[" else _Group(inner)
        if kind == "string":
            if self.peek()[0] == "range":
                self.i += 1
                hi = self.take("string")
                lo_c, hi_c = value[1:-1], hi[1:-1]
                return regex_to_node(f"[{re.escape(lo_c)}-{re.escape(hi_c)}]", where="lark")
            return _string_literal(value)
        if kind == "regex":
            return _regex_literal(value)
        if kind == "name":
            return Ref(value.lstrip("?!"))
        raise GrammarError(f"lark: unexpected {value!r}")

    def finish(self) -> Grammar:
        ignore_nodes = [Ref(n) if n in self.rules else _unknown(n) for n in self.ignore]
        ws = star(alt(*ignore_nodes)) if ignore_nodes else None
        rules: dict[str, Node] = {}
        for name, node in self.rules.items():
            node = _ungroup(node, ws if name not in self.terminals else None)
            rules[name] = seq(ws, node, ws) if ws is not None and name == "start" else node
        grammar = Grammar(rules, "start")
        check_left_recursion(grammar)
        return grammar


def _unknown(name: str) -> Node:
    raise GrammarError(f"lark: %ignore of undefined {name!r}")


class _Group(Alt):
    """A parenthesized group (kept distinct only while parsing)."""

    def __init__(self, inner: Node) -> None:
        Alt.__init__(self, (inner,))


def _ungroup(node: Node, ws: Node | None) -> Node:
    """Drop group markers; in rules (not terminals) allow ignored text between items."""
    if isinstance(node, _Group):
        return _ungroup(node.items[0], ws)
    if isinstance(node, Seq):
        items = [_ungroup(i, ws) for i in node.items]
        if ws is not None and len(items) > 1:
            spaced: list[Node] = []
            for i, item in enumerate(items):
                spaced += [ws, item] if i else [item]
            return Seq(tuple(spaced))
        return Seq(tuple(items)) if len(items) != 1 else items[0]
    if isinstance(node, Alt):
        return alt(*[_ungroup(i, ws) for i in node.items])
    if isinstance(node, Repeat):
        inner = _ungroup(node.item, ws)
        if ws is not None and (node.max is None or node.max > 1):
            first = inner
            more = seq(ws, inner)
            if node.max is None:
                return alt(EMPTY, seq(first, star(more))) if node.min == 0 else seq(first, star(more))
            rest = Repeat(more, max(node.min - 1, 0), node.max - 1)
            return seq(first, rest) if node.min else alt(EMPTY, seq(first, rest))
        return Repeat(inner, node.min, node.max)
    return node


def _nullable_and_first(grammar: Grammar) -> dict[str, set[str]]:
    nullable: dict[str, bool] = {n: False for n in grammar.rules}

    def walk(node: Node, first: set[str]) -> bool:
        if isinstance(node, Ref):
            first.add(node.name)
            return nullable.get(node.name, False)
        if isinstance(node, Seq):
            for item in node.items:
                if not walk(item, first):
                    return False
            return True
        if isinstance(node, Alt):
            results = [walk(i, first) for i in node.items]
            return any(results)
        if isinstance(node, Repeat):
            return walk(node.item, first) or node.min == 0
        return False

    firsts: dict[str, set[str]] = {}
    for _ in range(len(grammar.rules) + 1):
        changed = False
        for name, node in grammar.rules.items():
            first: set[str] = set()
            value = walk(node, first)
            firsts[name] = first
            if value != nullable[name]:
                nullable[name], changed = value, True
        if not changed:
            break
    return firsts


def check_left_recursion(grammar: Grammar) -> None:
    """Raise for a rule that can reach itself without consuming input (not supported)."""
    firsts = _nullable_and_first(grammar)
    for start in grammar.rules:
        seen: set[str] = set()
        todo = list(firsts.get(start, ()))
        while todo:
            cur = todo.pop()
            if cur == start:
                raise GrammarError(f"lark: rule {start!r} is left-recursive (rewrite it with repetition)")
            if cur not in seen and cur in firsts:
                seen.add(cur)
                todo.extend(firsts[cur])


def lark_to_grammar(text: str) -> Grammar:
    return LarkParser(text).parse()
