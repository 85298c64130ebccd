"""GBNF text (llama.cpp's grammar format, also xgrammar's EBNF) -> grammar, start rule `root`.

Many clients send vLLM's `structured_outputs.grammar` in this form (`root ::= ...`) rather
than Lark. Supported: rules `name ::= ...` (names of letters, digits, `-`, `_`), string
literals with `\\n \\r \\t \\\\ \\" \\xHH \\uHHHH \\UHHHHHHHH` escapes, character classes
`[a-z]` / `[^...]`, `.` (any character), grouping, `|`, `* + ?`, `{m}`, `{m,}`, `{m,n}`,
`#` comments. As in llama.cpp, a newline ends a rule except inside parentheses and right
after `::=` or `|`.
"""

from __future__ import annotations

from grammar.errors import GrammarError
from grammar.ir import EMPTY, Grammar, Node, Ref, Repeat, alt, lit, merge_ranges, seq, subtract_ranges
from grammar.frontends.lark import check_left_recursion
from grammar.frontends.regex import MAX_REPEAT, negate
from grammar.frontends.unicode import ALL_CHARS, SURROGATES, codepoint_ranges_to_node

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-", "^": "^",
            "/": "/", "'": "'"}  # fmt: skip
_HEX_LEN = {"x": 2, "u": 4, "U": 8}


class GbnfParser:
    """Recursive descent over the text; errors name the line and column."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.rules: dict[str, Node] = {}
        self.used: dict[str, int] = {}  # referenced rule -> position of a first use

    def fail(self, message: str, at: int | None = None) -> GrammarError:
        pos = self.i if at is None else at
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return GrammarError(f"gbnf: {message} at line {line}, column {col}")

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def space(self, newlines: bool) -> None:
        while self.i < len(self.text):
            c = self.text[self.i]
            if c in " \t" or (newlines and c in "\r\n"):
                self.i += 1
            elif c == "#":
                while self.i < len(self.text) and self.text[self.i] not in "\r\n":
                    self.i += 1
            else:
                return

    def name(self) -> str:
        start = self.i
        while self.peek() and self.peek() in _NAME_CHARS:
            self.i += 1
        if start == self.i:
            raise self.fail("expected a rule name")
        return self.text[start : self.i]

    def parse(self) -> Grammar:
        self.space(True)
        while self.i < len(self.text):
            start = self.i
            name = self.name()
            self.space(False)
            if not self.text.startswith("::=", self.i):
                raise self.fail("expected '::='")
            self.i += 3
            self.space(True)
            body = self.alternates(nested=False)
            if name in self.rules:
                raise self.fail(f"rule {name!r} is defined twice", start)
            self.rules[name] = body
            if self.peek() not in ("", "\r", "\n"):
                raise self.fail(f"unexpected {self.peek()!r}")
            self.space(True)
        if "root" not in self.rules:
            raise GrammarError("gbnf: the grammar has no 'root' rule")
        for name, pos in self.used.items():
            if name not in self.rules:
                raise self.fail(f"rule {name!r} is used but not defined", pos)
        grammar = Grammar(self.rules, start="root")
        try:
            check_left_recursion(grammar)
        except GrammarError as exc:
            raise GrammarError(str(exc).replace("lark:", "gbnf:", 1)) from None
        return grammar

    def alternates(self, nested: bool) -> Node:
        options = [self.sequence(nested)]
        while self.peek() == "|":
            self.i += 1
            self.space(True)
            options.append(self.sequence(nested))
        return alt(*options)

    def sequence(self, nested: bool) -> Node:
        items: list[Node] = []
        while True:
            c = self.peek()
            if c == "" or c in "|)\r\n":
                return seq(*items) if items else EMPTY
            items.append(self.postfix(self.primary()))
            self.space(nested)

    def primary(self) -> Node:
        c = self.peek()
        if c == '"':
            return lit(self.string())
        if c == "[":
            return codepoint_ranges_to_node(self.char_class())
        if c == ".":
            self.i += 1
            return codepoint_ranges_to_node(ALL_CHARS)
        if c == "(":
            self.i += 1
            self.space(True)
            inner = self.alternates(nested=True)
            if self.peek() != ")":
                raise self.fail("expected ')'")
            self.i += 1
            return inner
        if c in _NAME_CHARS:
            pos = self.i
            name = self.name()
            self.used.setdefault(name, pos)
            return Ref(name)
        raise self.fail(f"unexpected {c!r}")

    def postfix(self, node: Node) -> Node:
        while True:
            c = self.peek()
            if c == "*":
                node = Repeat(node, 0, None)
            elif c == "+":
                node = Repeat(node, 1, None)
            elif c == "?":
                node = Repeat(node, 0, 1)
            elif c == "{":
                low, high = self.braces()
                node = Repeat(node, low, high)
                continue
            else:
                return node
            self.i += 1

    def braces(self) -> tuple[int, int | None]:
        start = self.i
        end = self.text.find("}", start)
        if end < 0:
            raise self.fail("unclosed '{'")
        body = self.text[start + 1 : end].replace(" ", "")
        low_text, comma, high_text = body.partition(",")
        try:
            low = int(low_text)
            high = (int(high_text) if high_text else None) if comma else low
        except ValueError:
            raise self.fail(f"bad repetition {{{body}}}", start) from None
        if low < 0 or (high is not None and (high < low or high > MAX_REPEAT)) or low > MAX_REPEAT:
            raise self.fail(f"bad repetition {{{body}}} (bounds 0..{MAX_REPEAT})", start)
        self.i = end + 1
        return low, high

    def char(self, in_class: bool) -> str:
        """One (possibly escaped) character of a string or class."""
        c = self.peek()
        if c == "":
            raise self.fail("unterminated string or class")
        if c in "\r\n" and not in_class:
            raise self.fail("newline inside a string")
        self.i += 1
        if c != "\\":
            return c
        e = self.peek()
        self.i += 1
        if e in _HEX_LEN:
            digits = self.text[self.i : self.i + _HEX_LEN[e]]
            try:
                cp = int(digits, 16)
            except ValueError:
                raise self.fail(f"bad escape \\{e}{digits}") from None
            if len(digits) != _HEX_LEN[e] or cp > 0x10FFFF:
                raise self.fail(f"bad escape \\{e}{digits}")
            self.i += _HEX_LEN[e]
            return chr(cp)
        if e in _ESCAPES:
            return _ESCAPES[e]
        raise self.fail(f"unknown escape \\{e}")

    def string(self) -> str:
        self.i += 1  # the opening quote
        out = []
        while self.peek() != '"':
            out.append(self.char(in_class=False))
        self.i += 1
        return "".join(out)

    def char_class(self) -> tuple[tuple[int, int], ...]:
        start = self.i
        self.i += 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        ranges: list[tuple[int, int]] = []
        while self.peek() != "]":
            if self.peek() == "":
                raise self.fail("unclosed '['", start)
            lo = ord(self.char(in_class=True))
            hi = lo
            if self.peek() == "-" and self.text[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                hi = ord(self.char(in_class=True))
                if hi < lo:
                    raise self.fail("reversed range in a character class", start)
            ranges.append((lo, hi))
        self.i += 1
        merged = merge_ranges(ranges)
        result = negate(merged) if negated else subtract_ranges(merged, SURROGATES)
        if not result:
            raise self.fail("empty character class", start)
        return result


def gbnf_to_grammar(text: str) -> Grammar:
    return GbnfParser(text).parse()
