"""JSON numbers and integers as byte grammars, including exact integer ranges and multipleOf."""

from __future__ import annotations

import math
from functools import lru_cache

from grammar.errors import GrammarError
from grammar.ir import EMPTY, Bytes, Graph, Node, Repeat, alt, lit, opt, renewed, seq, star

DIGIT = Bytes(((48, 57),))
NONZERO = Bytes(((49, 57),))
MAX_ENUMERATED = 2000
MAX_MODULUS = 1000
# Number nodes by their bounds, built once per process (the same few bounds, none at all most of
# all, come back in schema after schema); callers get them renewed (grammar/ir.py renewed).
NUMBER_CACHE = 1024


def _digit_between(lo: str, hi: str) -> Node:
    return Bytes(((ord(lo), ord(hi)),))


def _same_length_range(a: str, b: str) -> Node:
    """Digit strings of len(a) == len(b) between a and b (inclusive, leading zeros allowed)."""
    if not a:
        return EMPTY
    if a[0] == b[0]:
        return seq(lit(a[0]), _same_length_range(a[1:], b[1:]))
    rest = len(a) - 1
    if a[1:] == "0" * rest and b[1:] == "9" * rest:
        return seq(_digit_between(a[0], b[0]), *[DIGIT] * rest)
    parts = [seq(lit(a[0]), _same_length_range(a[1:], "9" * rest))]
    if ord(b[0]) - ord(a[0]) > 1:
        parts.append(seq(_digit_between(chr(ord(a[0]) + 1), chr(ord(b[0]) - 1)), *[DIGIT] * rest))
    parts.append(seq(lit(b[0]), _same_length_range("0" * rest, b[1:])))
    return alt(*parts)


def natural_range(lo: int, hi: int | None) -> Node:
    """Canonical decimal naturals n with lo <= n <= hi (hi None = unbounded); lo >= 0."""
    parts: list[Node] = []
    if lo == 0:
        parts.append(lit("0"))
        lo = 1
    if hi is not None and hi < lo:
        return alt(*parts)
    n_lo = len(str(lo))
    n_hi = len(str(hi)) if hi is not None else n_lo
    for n in range(n_lo, n_hi + 1):
        a = max(lo, 10 ** (n - 1))
        b = min(hi, 10**n - 1) if hi is not None else 10**n - 1
        if a <= b:
            parts.append(_same_length_range(str(a), str(b)))
    if hi is None:
        parts.append(seq(NONZERO, *[DIGIT] * n_lo, star(DIGIT)))
    return alt(*parts)


def integer_range(lo: int | None, hi: int | None) -> Node:
    """Canonical JSON integers in [lo, hi] (None = unbounded on that side)."""
    return renewed(_integer_range(lo, hi))


@lru_cache(maxsize=NUMBER_CACHE, typed=True)
def _integer_range(lo: int | None, hi: int | None) -> Node:
    parts: list[Node] = []
    if lo is None or lo < 0:
        neg_hi = None if lo is None else -lo
        neg_lo = 1 if hi is None or hi >= 0 else -hi
        if neg_hi is None or neg_lo <= neg_hi:
            parts.append(seq(lit("-"), natural_range(neg_lo, neg_hi)))
    if hi is None or hi >= 0:
        parts.append(natural_range(max(lo or 0, 0), hi))
    return alt(*parts)


def _multiple_graph(k: int) -> Node:
    """Canonical integers divisible by k, as a remainder automaton (state 1 + r = remainder r)."""
    edges: list[tuple[int, int, Node | None]] = [(0, k + 1, lit("0")), (0, k + 2, lit("-"))]
    for d in range(1, 10):
        edges.append((0, 1 + d % k, lit(str(d))))
        edges.append((k + 2, 1 + d % k, lit(str(d))))
    for r in range(k):
        for d in range(10):
            edges.append((1 + r, 1 + (10 * r + d) % k, lit(str(d))))
    return Graph(k + 3, tuple(edges), (1, k + 1))


def integer_node(lo: int | None, hi: int | None, multiple: int | None, where: str) -> Node:
    if multiple is None or multiple == 1:
        return integer_range(lo, hi)
    if lo is not None and hi is not None:
        first = -(-lo // multiple) * multiple
        values = range(first, hi + 1, multiple)
        if len(values) > MAX_ENUMERATED:
            raise GrammarError(f"{where}/multipleOf: too many values between the bounds")
        return alt(*[lit(str(v)) for v in values])
    if lo is not None or hi is not None:
        raise GrammarError(f"{where}/multipleOf: not supported with a one-sided bound")
    if multiple > MAX_MODULUS:
        raise GrammarError(f"{where}/multipleOf: {multiple} is too large")
    return _multiple_graph(multiple)


def _fraction(max_decimals: int | None) -> Node:
    if max_decimals is None:
        return opt(seq(lit("."), Repeat(DIGIT, 1, None)))
    if max_decimals == 0:
        return EMPTY
    return opt(seq(lit("."), Repeat(DIGIT, 1, max_decimals)))


EXPONENT = opt(seq(Bytes(((69, 69), (101, 101))), opt(Bytes(((43, 43), (45, 45)))), Repeat(DIGIT, 1, None)))


def _frac_digits(x: float) -> str:
    """Digits after the point of a non-negative bound, as written by repr (no exponent)."""
    text = f"{x:.17f}".rstrip("0")
    return text.split(".")[1] if "." in text else ""


def _frac_at_least(g: str, nonempty: bool = True) -> Node:
    """Fraction digit strings f with 0.f >= 0.g."""
    g = g.rstrip("0")
    if not g:
        return Repeat(DIGIT, 1 if nonempty else 0, None)
    head = int(g[0])
    parts: list[Node] = []
    if head < 9:
        parts.append(seq(Bytes(((49 + head - 1 + 1, 57),)), star(DIGIT)))
    rest = _frac_at_least(g[1:], False)
    parts.append(seq(lit(g[0]), rest))
    return alt(*parts)


def _frac_at_most(h: str) -> Node:
    """Fraction digit strings f (non-empty) with 0.f <= 0.h."""
    h = h.rstrip("0")
    if not h:
        return Repeat(lit("0"), 1, None)
    head = int(h[0])
    parts: list[Node] = []
    if head > 0:
        parts.append(seq(Bytes(((48, 48 + head - 1),)), star(DIGIT)))
    tail = _frac_at_most(h[1:])
    parts.append(seq(lit(h[0]), alt(EMPTY, tail)))
    return alt(*parts)


def _split_decimal(lo: float, hi: float | None, decimals: int | None, lo_ex: bool, hi_ex: bool) -> Node | None:
    """Exact [lo, hi] for fractional inclusive bounds with different integer parts, else None."""
    if decimals is not None or lo_ex or hi_ex or hi is None:
        return None
    a, b = math.floor(lo), math.floor(hi)
    if a == b or (float(lo).is_integer() and float(hi).is_integer()):
        return None
    low = seq(lit(str(a)), opt(seq(lit("."), _frac_at_least(_frac_digits(lo - a))))) if float(lo).is_integer() else \
        seq(lit(str(a)), lit("."), _frac_at_least(_frac_digits(lo - a)))
    parts = [low]
    if a + 1 <= b - 1:
        parts.append(seq(natural_range(a + 1, b - 1), _fraction(None)))
    parts.append(seq(lit(str(b)), opt(seq(lit("."), _frac_at_most(_frac_digits(hi - b))))))
    return alt(*parts)


def _nonneg_decimal(lo: float, hi: float | None, decimals: int | None, lo_ex: bool, hi_ex: bool) -> Node:
    exact = _split_decimal(lo, hi if hi is not None else None, decimals, lo_ex, hi_ex)
    if exact is not None:
        return exact
    if hi is None and not lo_ex and decimals is None and not float(lo).is_integer():
        a = math.floor(lo)
        return alt(seq(lit(str(a)), lit("."), _frac_at_least(_frac_digits(lo - a))),
                   seq(natural_range(a + 1, None), _fraction(None)))
    return _nonneg_inward(lo, hi, decimals, lo_ex, hi_ex)


def _nonneg_inward(lo: float, hi: float | None, decimals: int | None, lo_ex: bool, hi_ex: bool) -> Node:
    """Decimals m with lo <(=) m <(=) hi; exact for integral bounds, for fractional ones the
    values between the bound and the next integer inward are left out (approximate)."""
    int_lo = math.ceil(lo) + (1 if lo_ex and float(lo).is_integer() else 0)
    parts: list[Node] = []
    if lo_ex and float(lo).is_integer() and decimals != 0 and (hi is None or hi > lo):
        # lo < m < lo + 1: lo followed by a fraction that is not all zeros
        tail = star(DIGIT) if decimals is None else Repeat(DIGIT, 0, decimals - 1)
        frac = alt(seq(NONZERO, tail), seq(Repeat(lit("0"), 1, None if decimals is None else decimals - 1), NONZERO, tail))
        parts.append(seq(lit(str(int(lo))), lit("."), frac))
    if hi is None:
        return alt(*parts, seq(natural_range(int_lo, None), _fraction(decimals)))
    int_hi = math.floor(hi)
    closed_top = not (hi_ex and float(hi).is_integer())
    if int_lo <= int_hi - 1:
        parts.append(seq(natural_range(int_lo, int_hi - 1), _fraction(decimals)))
    if int_lo <= int_hi and closed_top:
        zeros = EMPTY if decimals == 0 else opt(seq(lit("."), Repeat(lit("0"), 1, decimals)))
        parts.append(seq(lit(str(int_hi)), zeros))
    return alt(*parts)


def number_node(lo: float | None, hi: float | None, decimals: int | None,
                lo_ex: bool = False, hi_ex: bool = False) -> Node:
    """JSON numbers in the bounds; unbounded numbers allow exponents, bounded ones do not."""
    if _negative_zero(lo) or _negative_zero(hi):  # -0.0 == 0.0: not one cache entry
        return _number_node.__wrapped__(lo, hi, decimals, lo_ex, hi_ex)
    return renewed(_number_node(lo, hi, decimals, lo_ex, hi_ex))


def _negative_zero(x: float | None) -> bool:
    return type(x) is float and x == 0 and math.copysign(1.0, x) < 0


@lru_cache(maxsize=NUMBER_CACHE, typed=True)
def _number_node(lo: float | None, hi: float | None, decimals: int | None, lo_ex: bool, hi_ex: bool) -> Node:
    if lo is None and hi is None:
        int_part = natural_range(0, None)
        return seq(opt(lit("-")), int_part, _fraction(decimals), EXPONENT if decimals is None else EMPTY)
    parts: list[Node] = []
    if hi is None or hi > 0 or (hi == 0 and not hi_ex):
        pos_lo, pos_ex = (lo, lo_ex) if lo is not None and lo >= 0 else (0.0, False)
        parts.append(_nonneg_decimal(pos_lo, hi, decimals, pos_ex, hi_ex))
    if lo is None or lo < 0:
        neg_lo, neg_ex = (-hi, hi_ex) if hi is not None and hi < 0 else (0.0, True)
        neg_hi = None if lo is None else -lo
        if neg_hi is None or neg_lo <= neg_hi:
            parts.append(seq(lit("-"), _nonneg_decimal(neg_lo, neg_hi, decimals, neg_ex, lo_ex)))
    return alt(*parts)
