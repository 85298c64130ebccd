"""JSON numbers and integers as byte grammars, including exact integer ranges and multipleOf."""

from __future__ import annotations

import math
from decimal import Decimal
from functools import lru_cache

from grammar.errors import GrammarError
from grammar.frontends.json_decimals import DIGIT, NONZERO, as_decimal, exponent_forms, fixed_point, natural_range
from grammar.frontends.regular import intersect, to_dfa, to_node
from grammar.ir import EMPTY, Bytes, Graph, Node, Repeat, alt, lit, opt, renewed, seq, star

MAX_ENUMERATED = 2000
MAX_MODULUS = 1000
# Number nodes by their bounds, built once per process (the same few bounds, none at all most of
# all, come back in schema after schema); callers get them renewed (grammar/ir.py renewed).
NUMBER_CACHE = 1024


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


def _nonneg_bounded(lo: float, hi: float | None, decimals: int | None, lo_ex: bool, hi_ex: bool) -> Node:
    """Non-negative numbers m with lo <(=) m <(=) hi, exactly: integral bounds by digit ranges, others
    (grammar/frontends/json_decimals.py) digit by digit; exponent forms where decimals are not limited.
    A fractional exclusive bound is the next double inclusive: a longer text than a double holds
    would otherwise round onto the bound itself."""
    low, high = _inclusive(lo, lo_ex, math.inf), None if hi is None else _inclusive(hi, hi_ex, -math.inf)
    if float(lo).is_integer() and (hi is None or float(hi).is_integer()):
        plain = _nonneg_inward(lo, hi, decimals, lo_ex, hi_ex)
    else:
        plain = fixed_point(low[0], None if high is None else high[0], low[1], high is not None and high[1])
        if decimals is not None:  # multipleOf 10^-decimals: at most that many fraction digits
            limit = seq(natural_range(0, None), _fraction(decimals))
            plain = to_node(intersect(to_dfa(plain), to_dfa(limit)))
    if decimals is not None:
        return plain
    return alt(plain, exponent_forms(low[0], None if high is None else high[0], low[1], high is not None and high[1]))


def _inclusive(bound: float, exclusive: bool, toward: float) -> tuple[Decimal, bool]:
    """A bound as a decimal; an exclusive one other than zero as the next double toward `toward`, inclusive."""
    if exclusive and bound != 0:
        return as_decimal(math.nextafter(float(bound), toward)), False
    return as_decimal(bound), exclusive


def _nonneg_inward(lo: float, hi: float | None, decimals: int | None, lo_ex: bool, hi_ex: bool) -> Node:
    """Decimals m with lo <(=) m <(=) hi for integral bounds."""
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
    """JSON numbers in the bounds; exponents where the decimals are not limited (bounded ones with a
    normalized mantissa: grammar/frontends/json_decimals.py)."""
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
        parts.append(_nonneg_bounded(pos_lo, hi, decimals, pos_ex, hi_ex))
    if lo is None or lo < 0:
        neg_lo, neg_ex = (-hi, hi_ex) if hi is not None and hi < 0 else (0.0, True)
        neg_hi = None if lo is None else -lo
        if neg_hi is None or neg_lo <= neg_hi:
            parts.append(seq(lit("-"), _nonneg_bounded(neg_lo, neg_hi, decimals, neg_ex, lo_ex)))
    return alt(*parts)
