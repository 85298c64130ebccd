"""Decimal digit strings as byte grammars: natural ranges, and exact decimal intervals (fixed point and exponent forms).

A bound is read as the decimal its float prints as (`repr`: 0.1 is 0.1), and a text is in the
interval when its decimal value is: rounding to a float is monotonic, so a validator that parses
the text to a float and compares agrees on every text accepted here. A fraction's digits are
compared digit by digit against the bound's (`_fraction`); exponent forms are taken with a
normalized mantissa (one nonzero digit before the point, as `repr` and most writers print them:
`1e-06`, `2.5E+3`), the exponent written with any sign and leading zeros, decade by decade:
every decade wholly inside the interval takes any mantissa (above an exclusive zero, from 1e-307
on), the (at most two) it cuts take the
mantissas inside it. `0e5` and `12e3` are not accepted (a mantissa of another shape would tie
the exponent to the count of its digits, which no regular language can).
"""

from __future__ import annotations

from decimal import Decimal

from grammar.ir import EMPTY, NOTHING, Bytes, Node, Repeat, alt, is_nothing, lit, opt, seq, star

DIGIT = Bytes(((48, 57),))
NONZERO = Bytes(((49, 57),))
EXP_MARK = Bytes(((69, 69), (101, 101)))
MIN_NORMAL_EXP = -307  # above zero, exclusive: no smaller exponent, whose value a double would round to zero


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


def as_decimal(x: float) -> Decimal:
    """A bound as the decimal it prints as."""
    return Decimal(repr(x)) if isinstance(x, float) else Decimal(x)


def _digits(x: Decimal) -> str:
    """The digits after the point of a non-negative decimal, without trailing zeros."""
    frac = x - int(x)
    return format(frac, "f").split(".")[1].rstrip("0") if frac else ""


def _fraction(g: str | None, g_ex: bool, h: str | None, h_ex: bool) -> tuple[Node, bool]:
    """Fraction digit strings f (after the point) with 0.g <(=) 0.f <(=) 0.h (None: no bound):
    the non-empty ones as a node, and whether the empty one (no fraction) is in."""
    if g == "" and not g_ex:
        g = None
    empty_ok = g is None and (h is None or h != "" or not h_ex)
    if g is None and h is None:
        return Repeat(DIGIT, 1, None), True
    if h == "":  # 0.f <= 0: zeros, and nothing above a lower bound
        return (Repeat(lit("0"), 1, None), empty_ok) if g is None and not h_ex else (NOTHING, False)
    if g == "" and h is None:  # 0.f > 0
        return seq(star(lit("0")), NONZERO, star(DIGIT)), False
    g0 = -1 if g is None else int(g[0]) if g else 0
    h0 = 10 if h is None else int(h[0])
    parts: list[Node] = []
    if g0 + 1 <= h0 - 1:
        parts.append(seq(Bytes(((49 + g0, 47 + h0),)), star(DIGIT)))
    if g is not None and g0 == h0:
        parts.append(seq(lit(str(g0)), _with_empty(_fraction(g[1:], g_ex, h[1:], h_ex))))  # type: ignore[index]
    else:
        if g is not None:
            parts.append(seq(lit(str(g0)), _with_empty(_fraction(g[1:], g_ex, None, False))))
        if h is not None:
            parts.append(seq(lit(str(h0)), _with_empty(_fraction(None, False, h[1:], h_ex))))
    return alt(*parts), empty_ok


def _with_empty(fraction: tuple[Node, bool]) -> Node:
    node, empty_ok = fraction
    return alt(EMPTY, node) if empty_ok else node


def _point(fraction: tuple[Node, bool]) -> Node:
    """`.` and the fraction, or nothing where no fraction is in."""
    node, empty_ok = fraction
    dotted = NOTHING if is_nothing(node) else seq(lit("."), node)
    return alt(EMPTY, dotted) if empty_ok else dotted


def fixed_point(lo: Decimal, hi: Decimal | None, lo_ex: bool, hi_ex: bool, int_lo: int = 0,
                int_hi: int | None = None) -> Node:
    """Texts `I(.F)?` (I a canonical natural in [int_lo, int_hi]) whose value v has lo <(=) v <(=) hi; lo >= 0."""
    a, g = int(lo), _digits(lo)
    b, h = (None, None) if hi is None else (int(hi), _digits(hi))
    if b is not None and b < a:
        return NOTHING

    def inside(i: int) -> bool:
        return i >= int_lo and (int_hi is None or i <= int_hi)

    if b == a:
        return seq(lit(str(a)), _point(_fraction(g, lo_ex, h, hi_ex))) if inside(a) else NOTHING
    parts: list[Node] = []
    if inside(a):
        parts.append(seq(lit(str(a)), _point(_fraction(g, lo_ex, None, False))))
    mid_hi = None if b is None else b - 1
    if int_hi is not None:
        mid_hi = int_hi if mid_hi is None else min(mid_hi, int_hi)
    mid_lo = max(a + 1, int_lo)
    if mid_hi is None or mid_lo <= mid_hi:
        parts.append(seq(natural_range(mid_lo, mid_hi), _point(_fraction(None, False, None, False))))
    if b is not None and inside(b):
        parts.append(seq(lit(str(b)), _point(_fraction(None, False, h, hi_ex))))
    return alt(*parts)


def _exponent(lo: int | None, hi: int | None) -> Node:
    """`e`/`E` and the exponents n with lo <= n <= hi (None: unbounded), in every sign and leading-zero spelling."""
    if lo is None and hi is None:
        return seq(EXP_MARK, opt(Bytes(((43, 43), (45, 45)))), Repeat(DIGIT, 1, None))
    parts: list[Node] = []
    zeros = star(lit("0"))
    if hi is None or hi >= 0:
        parts.append(seq(opt(lit("+")), zeros, natural_range(max(lo or 0, 0), hi)))
    if lo is None or lo <= 0:
        neg_hi = None if lo is None else -lo
        neg_lo = 0 if hi is None or hi >= 0 else -hi
        parts.append(seq(lit("-"), zeros, natural_range(neg_lo, neg_hi)))
    return seq(EXP_MARK, alt(*parts))


def exponent_forms(lo: Decimal, hi: Decimal | None, lo_ex: bool, hi_ex: bool) -> Node:
    """Texts `D(.F)?e<n>` (D a nonzero digit) whose value v has lo <(=) v <(=) hi; lo >= 0."""
    if hi is not None and (hi <= 0 or hi < lo):
        return NOTHING
    full_lo = (MIN_NORMAL_EXP if lo_ex else None) if lo == 0 else lo.adjusted() + (0 if lo == Decimal(1).scaleb(lo.adjusted()) and not lo_ex else 1)
    full_hi = None if hi is None else hi.adjusted() - 1
    parts: list[Node] = []
    if full_lo is None or full_hi is None or full_lo <= full_hi:
        parts.append(seq(NONZERO, _point(_fraction(None, False, None, False)), _exponent(full_lo, full_hi)))
    cut = {n for n in (None if lo == 0 else lo.adjusted(), None if hi is None else hi.adjusted()) if n is not None}
    for n in sorted(cut):
        if (full_lo is None or n >= full_lo) and (full_hi is None or n <= full_hi):
            continue  # a whole decade, above
        m_lo, m_hi = lo.scaleb(-n), None if hi is None else hi.scaleb(-n)
        low = (m_lo, lo_ex) if m_lo >= 1 else (Decimal(1), False)
        high = (m_hi, hi_ex) if m_hi is not None and m_hi < 10 else (None, False)
        mantissa = fixed_point(low[0], high[0], low[1], high[1], 1, 9)
        if not is_nothing(mantissa):
            parts.append(seq(mantissa, _exponent(n, n)))
    return alt(*parts)
