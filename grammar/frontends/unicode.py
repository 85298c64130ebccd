"""Unicode code point classes as UTF-8 byte automata (ranges -> byte-range sequences)."""

from __future__ import annotations

from functools import lru_cache

from grammar.ir import Bytes, Node, NOTHING, alt, merge_ranges, seq, subtract_ranges

MAX_CODEPOINT = 0x10FFFF
SURROGATES = ((0xD800, 0xDFFF),)
ALL_CHARS = subtract_ranges(((0, MAX_CODEPOINT),), SURROGATES)
_BOUNDS = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, MAX_CODEPOINT))


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def _split_same_length(lo: int, hi: int) -> list[list[tuple[int, int]]]:
    """Byte-range sequences covering [lo, hi] where both encode to the same length."""
    a, b = _encode(lo), _encode(hi)
    n = len(a)
    if n == 1:
        return [[(a[0], b[0])]]
    # Find the longest common prefix; split on the first differing byte.
    for i in range(n):
        if a[i] != b[i]:
            break
    else:
        return [[(x, x) for x in a]]
    prefix = [(x, x) for x in a[:i]]
    tail = n - i - 1
    shift = 6 * tail
    mask = (1 << shift) - 1
    out: list[list[tuple[int, int]]] = []
    lo_full = (lo & mask) == 0
    hi_full = (hi & mask) == mask
    first_lo, first_hi = a[i], b[i]
    if not lo_full:
        end = lo | mask
        out.extend(_split_same_length(lo, end))
        first_lo += 1
    if not hi_full:
        first_hi -= 1
    if first_lo <= first_hi:
        out.append(prefix + [(first_lo, first_hi)] + [(0x80, 0xBF)] * tail)
    if not hi_full:
        start = hi & ~mask
        out.extend(_split_same_length(start, hi))
    if not lo_full or not hi_full:
        # the recursive pieces already carry the full prefix
        return [p for p in out]
    return out


# Classes built once per process: the same few (any character, non-ASCII, a key's next
# character) come back in every JSON schema's compile; nodes are immutable, so sharing is safe.
FRAGMENT_CACHE = 4096


def codepoint_ranges_to_node(ranges: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> Node:
    """A node matching the UTF-8 encoding of any code point in `ranges` (surrogates dropped)."""
    return _ranges_node(tuple((lo, hi) for lo, hi in ranges))


@lru_cache(maxsize=FRAGMENT_CACHE)
def _ranges_node(ranges: tuple[tuple[int, int], ...]) -> Node:
    ranges = subtract_ranges(merge_ranges(ranges), SURROGATES)
    options: list[Node] = []
    single: list[tuple[int, int]] = []
    for lo, hi in ranges:
        for blo, bhi in _BOUNDS:
            clo, chi = max(lo, blo), min(hi, bhi)
            if clo > chi:
                continue
            for pieces in _split_same_length(clo, chi):
                if len(pieces) == 1:
                    single.append(pieces[0])
                else:
                    options.append(seq(*[Bytes((p,)) for p in pieces]))
    if single:
        options.insert(0, Bytes(merge_ranges(single)))
    return alt(*options) if options else NOTHING
