"""Regular expressions (Python/ECMA syntax subset) -> grammar nodes over UTF-8 or JSON-string bytes."""

from __future__ import annotations

from typing import Callable

from grammar.errors import GrammarError
from grammar.frontends.regular import between, to_dfa, to_node
from grammar.frontends.unicode import ALL_CHARS, codepoint_ranges_to_node
from grammar.ir import EMPTY, Alt, Bytes, Node, Repeat, Seq, alt, merge_ranges, seq, subtract_ranges

Ranges = tuple[tuple[int, int], ...]
DIGIT: Ranges = ((48, 57),)
WORD: Ranges = ((48, 57), (65, 90), (95, 95), (97, 122))
SPACE: Ranges = ((9, 13), (32, 32))
_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11, "0": 0, "a": 7, "e": 27}
_CLASS_ESCAPES = {"d": DIGIT, "w": WORD, "s": SPACE}
MAX_REPEAT = 10_000


def negate(ranges: Ranges) -> Ranges:
    return subtract_ranges(ALL_CHARS, merge_ranges(ranges))


# Anchors as marker bytes that never occur in UTF-8 (a text is matched as START text END):
# grammar/frontends/regular.py `between` takes them off again.
START = Bytes(((0xFE, 0xFE),))
END = Bytes(((0xFF, 0xFF),))
NON_ASCII: Ranges = ((0x80, 0x10FFFF),)


class RegexParser:
    """Recursive-descent parser; `char_node` turns a code point class into bytes. `^` and `$`
    become the START and END markers wherever they are. `wide`: a superset of Python `re`'s
    language as well as of ours (its \\d, \\w, \\s also take non-ASCII characters; `$` also
    before a final newline), for the keys no pattern may match."""

    def __init__(self, pattern: str, char_node: Callable[[Ranges], Node], where: str, wide: bool = False) -> None:
        self.p = pattern
        self.i = 0
        self.char_node = char_node
        self.where = where
        self.wide = wide
        self.has_anchors = False
        self.anchors = 0  # how many `^` and `$` it met (`_end_anchors`: none left inside when its ends took them all)

    def error(self, msg: str) -> GrammarError:
        return GrammarError(f"{self.where}: regex {self.p!r}: {msg} at offset {self.i}")

    def parse(self) -> Node:
        node = self.alternation()
        if self.i != len(self.p):
            raise self.error("unbalanced ')'")
        return node

    def alternation(self) -> Node:
        options = [self.sequence()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            options.append(self.sequence())
        return alt(*options)

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            c = self.p[self.i]
            if c in "^$":
                self.i += 1
                self.has_anchors = True
                self.anchors += 1
                if c == "$" and self.wide:  # Python's `$` also matches before a final newline
                    items.append(seq(Repeat(self.char_node(((10, 10),)), 0, 1), END))
                else:
                    items.append(START if c == "^" else END)
                continue
            items.append(self.quantified(self.atom()))
        return seq(*items) if items else EMPTY

    def quantified(self, node: Node) -> Node:
        while self.i < len(self.p) and self.p[self.i] in "*+?{":
            c = self.p[self.i]
            if c == "{":
                bounds = self.braces()
                if bounds is None:
                    return node
                lo, hi = bounds
            else:
                self.i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            if self.i < len(self.p) and self.p[self.i] in "?+":
                self.i += 1  # lazy / possessive: same language
            node = Repeat(node, lo, hi)
        return node

    def braces(self) -> tuple[int, int | None] | None:
        end = self.p.find("}", self.i)
        body = self.p[self.i + 1 : end] if end > 0 else ""
        parts = body.split(",")
        if end < 0 or len(parts) > 2 or not parts[0].strip().isdigit() and not (len(parts) == 2 and parts[0] == ""):
            return None  # a literal '{'
        lo = int(parts[0]) if parts[0].strip() else 0
        hi: int | None = lo if len(parts) == 1 else (int(parts[1]) if parts[1].strip() else None)
        if hi is not None and (hi < lo or hi > MAX_REPEAT):
            raise self.error(f"bad repeat {{{body}}}")
        self.i = end + 1
        return lo, hi

    def atom(self) -> Node:
        c = self.p[self.i]
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_node(self.char_class())
        if c == ".":
            self.i += 1
            return self.char_node(negate(((10, 10),)))
        if c == "\\":
            wide = self.wide and self.p[self.i + 1 : self.i + 2].lower() in _CLASS_ESCAPES
            ranges = self.escape(in_class=False)
            return self.char_node(merge_ranges(ranges + NON_ASCII) if wide else ranges)
        if c in "*+?":
            raise self.error("nothing to repeat")
        self.i += 1
        return self.char_node(((ord(c), ord(c)),))

    def group(self) -> Node:
        self.i += 1
        if self.p.startswith("?:", self.i):
            self.i += 2
        elif self.p.startswith("?P<", self.i) or self.p.startswith("?<", self.i) and self.p[self.i + 2] not in "=!":
            self.i = self.p.index(">", self.i) + 1
        elif self.p.startswith("?", self.i):
            raise self.error("lookaround and inline flags are not supported")
        node = self.alternation()
        if self.i >= len(self.p) or self.p[self.i] != ")":
            raise self.error("missing ')'")
        self.i += 1
        return node

    def escape(self, in_class: bool) -> Ranges:
        self.i += 1
        if self.i >= len(self.p):
            raise self.error("trailing backslash")
        c = self.p[self.i]
        self.i += 1
        if c in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[c]
        if c.lower() in _CLASS_ESCAPES:
            return negate(_CLASS_ESCAPES[c.lower()])
        if c in _SIMPLE_ESCAPES:
            cp = _SIMPLE_ESCAPES[c]
            return ((cp, cp),)
        if c in "xu":
            n = 2 if c == "x" else 4
            digits = self.p[self.i : self.i + n]
            try:
                cp = int(digits, 16)
            except ValueError:
                raise self.error(f"bad \\{c} escape") from None
            self.i += n
            return ((cp, cp),)
        if c == "b" and in_class:
            return ((8, 8),)
        if c.isalnum():
            raise self.error(f"unsupported escape \\{c}")
        return ((ord(c), ord(c)),)

    def char_class(self) -> Ranges:
        start = self.i
        self.i += 1
        negated = self.p.startswith("^", self.i)
        if negated:
            self.i += 1
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            if self.i >= len(self.p):
                raise self.error("missing ']'")
            c = self.p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            lo_r = self.class_atom()
            if self.p.startswith("-", self.i) and self.i + 1 < len(self.p) and self.p[self.i + 1] != "]":
                self.i += 1
                hi_r = self.class_atom()
                if len(lo_r) != 1 or len(hi_r) != 1 or lo_r[0][0] != lo_r[0][1] or hi_r[0][0] > hi_r[0][1]:
                    raise self.error("bad class range")
                if hi_r[0][0] < lo_r[0][0]:
                    raise self.error("reversed class range")
                ranges.append((lo_r[0][0], hi_r[0][0]))
            else:
                ranges.extend(lo_r)
        merged = merge_ranges(ranges)
        out = negate(merged) if negated else merged
        if self.wide and self._class_escape_at(start):  # Python's \\d \\w \\s differ on non-ASCII only
            out = merge_ranges(out + NON_ASCII)
        return out

    def _class_escape_at(self, start: int) -> bool:
        """Whether the class that began at `start` holds a \\d \\w \\s escape (or a negated one)."""
        body, k = self.p[start : self.i], 0
        while k < len(body):
            if body[k] == "\\":
                if body[k + 1 : k + 2].lower() in _CLASS_ESCAPES:
                    return True
                k += 1
            k += 1
        return False

    def class_atom(self) -> Ranges:
        if self.p[self.i] == "\\":
            return self.escape(in_class=True)
        cp = ord(self.p[self.i])
        self.i += 1
        return ((cp, cp),)


def regex_to_node(pattern: str, char_node: Callable[[Ranges], Node] = codepoint_ranges_to_node,
                  where: str = "regex", search: bool = False, wide: bool = False) -> Node:
    """The language of `pattern`: full match, or with `search` JSON-Schema `re.search` semantics
    (`wide`: see RegexParser). Anchors at the ends of the pattern shape the node directly; an
    anchor anywhere else (`^a|b$`, `(^x|y)z`) goes through the marker automaton."""
    parser = RegexParser(pattern, char_node, where, wide)
    node = parser.parse()
    ends = _end_anchors(node, parser.anchors) if parser.has_anchors else (node, False, False)
    anything = Repeat(char_node(ALL_CHARS), 0, None)
    if ends is None and isinstance(node, Alt):
        # `^$|^(...)$`: each alternative anchored at its own ends only, one alternative at a time
        # (a text matches the alternation where it matches one of them), no marker automaton
        options = [_end_anchors(option) for option in node.items]
        if all(o is not None for o in options):
            return alt(*[_anchored(o, search, anything) for o in options])
    if ends is not None:
        return _anchored(ends, search, anything)
    around = (anything, node, anything) if search else (node,)
    try:
        return to_node(between(to_dfa(seq(Repeat(START, 0, 1), *around, Repeat(END, 0, 1))), 0xFE, 0xFF))
    except GrammarError as exc:
        raise GrammarError(f"{where}: regex {pattern!r}: anchors inside the pattern: {exc}") from None


def _anchored(ends: tuple[Node, bool, bool], search: bool, anything: Node) -> Node:
    """The language of a pattern anchored only at its ends (`_end_anchors`'s answer)."""
    node, start_anchor, end_anchor = ends
    if not search:
        return node
    return seq(*([] if start_anchor else [anything]), node, *([] if end_anchor else [anything]))


def _end_anchors(node: Node, anchors: int | None = None) -> tuple[Node, bool, bool] | None:
    """(the node without them, anchored at the start, at the end) when the only anchors are a
    leading `^` and a trailing `$` of the whole pattern; None otherwise. `anchors`: how many the
    pattern has, if known: when the ends took them all, none is searched for in the rest (a walk
    of every character class's UTF-8 tree, a quarter of a pattern's compile: issue 39)."""
    items = list(node.items) if isinstance(node, Seq) else [node]
    start = bool(items) and items[0] == START
    if start:
        items = items[1:]
    end = bool(items) and items[-1] == END  # (wide: the optional newline before it stays)
    if end:
        items = items[:-1]
    rest = seq(*items) if items else EMPTY
    if anchors is not None and anchors == start + end:
        return rest, start, end
    return None if _has_anchor(rest) else (rest, start, end)


def _has_anchor(node: Node) -> bool:
    if node in (START, END):
        return True
    if isinstance(node, (Seq, Alt)):
        return any(_has_anchor(i) for i in node.items)
    if isinstance(node, Repeat):
        return _has_anchor(node.item)
    return False
