"""Object keys beyond the declared ones: a quoted key whose raw bytes spell none of the names, as a trie graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from grammar.frontends.json_text import SPECIAL, json_string_content
from grammar.frontends.regex import Ranges
from grammar.frontends.unicode import FRAGMENT_CACHE, codepoint_ranges_to_node
from grammar.ir import Bytes, Graph, Node, alt, lit, merge_ranges, subtract_ranges


def key_excluding(names: list[str], char: Node, prefix: str = "") -> Node:
    """A quoted key whose raw bytes spell none of `names` (escapes only after diverging): a trie
    of the names whose nodes may also leave for `free` (any key text), `close` or, from nodes
    with only ASCII children, `multi` (a multi-byte character, then free). With `prefix` (plain
    ASCII), only keys that begin with it, written as it is."""
    trie = _key_trie([n[len(prefix):] for n in names if n.startswith(prefix)])
    children, ends, mid_char, byte_in = trie.children, trie.ends, trie.mid_char, trie.byte_in
    free, close, multi = len(children), len(children) + 1, len(children) + 2
    start = len(children) + 3  # Graph state 0 must be the start: the trie's root is numbered `start`
    quote = _BYTE_NODES[34]
    edges: list[tuple[int, int, Node | None]] = [(free, free, char), (free, close, quote),
                                                 (multi, free, codepoint_ranges_to_node(((0x80, 0x10FFFF),)))]
    done = 0  # nodes below this have their edges
    for i in sorted(trie.special):
        # The plain nodes before i: one ASCII child, the next node (what the loop below makes of them).
        edges += [e for k in range(done, i) for e in ((k, k + 1, _BYTE_NODES[byte_in[k + 1]]), (k, close, quote),
                                                      (k, free, _DIVERGING_ASCII[byte_in[k + 1]]), (k, multi, None))]
        done = i + 1
        at = i or start
        kids = trie.kids(i)
        for b, child in kids.items():
            edges.append((at, child, _BYTE_NODES[b]))
        if i in mid_char:
            continue
        if i not in ends:
            edges.append((at, close, quote))
        # a name's end that no other name goes on from (the common special node) skips the sort and the cache
        firsts = _diverging(tuple(sorted(kids))) if kids else _DIVERGING_NONE
        if firsts is not None:
            edges.append((at, free, firsts))
        if not kids or all(b < 0x80 for b in kids):  # any multi-byte character through the shared state
            edges.append((at, multi, None))
    edges.append((0, start, lit('"' + prefix) if prefix else quote))
    return Graph(len(children) + 4, tuple(edges), (close,))


@dataclass(slots=True)
class _KeyTrie:
    """The trie of key_excluding's names: children per node (byte -> node; None: only the next
    node, the rest of a name's chain), the nodes where a name ends, the nodes inside a multi-byte
    character, the byte into each node, and the nodes that are not plain (plain: one ASCII child,
    no name ending)."""

    children: list[dict[int, int] | None] = field(default_factory=lambda: [{}])
    ends: set[int] = field(default_factory=set)
    mid_char: set[int] = field(default_factory=set)
    byte_in: list[int] = field(default_factory=lambda: [-1])
    special: set[int] = field(default_factory=lambda: {0})

    def kids(self, node: int) -> dict[int, int]:
        """The node's children, as a dict from now on."""
        kids = self.children[node]
        if kids is None:
            kids = self.children[node] = {self.byte_in[node + 1]: node + 1}
        return kids


def _key_trie(names: list[str]) -> _KeyTrie:
    """The names' raw bytes (as JSON writes them, escapes and all) in a trie."""
    trie = _KeyTrie()
    children, byte_in, special = trie.children, trie.byte_in, trie.special
    for name in names:
        word = json_string_content(name)
        if not word.isascii():
            _add_word(trie, word)
            continue
        node, j = 0, 0
        for b in word:  # down the shared prefix
            kids = children[node]
            nxt = (node + 1 if byte_in[node + 1] == b else None) if kids is None else kids.get(b)
            if nxt is None:
                break
            node, j = nxt, j + 1
        if j < len(word):  # the rest as new nodes in a chain
            kids = trie.kids(node)
            if kids:
                special.add(node)  # a second child
            kids[word[j]] = len(children)
            children += [None] * (len(word) - j - 1)
            children.append({})
            byte_in += word[j:]
            node = len(children) - 1
        trie.ends.add(node)
    special |= trie.ends
    return trie


def _add_word(trie: _KeyTrie, word: bytes) -> None:
    """Add a word with multi-byte characters, byte by byte."""
    children, pending, node = trie.children, 0, 0
    for b in word:
        pending = (3 if b >= 0xF0 else 2 if b >= 0xE0 else 1 if b >= 0xC0 else 0) if b >= 0xC0 or b < 0x80 else pending - 1
        kids = trie.kids(node)
        nxt = kids.get(b)
        if nxt is None:
            if kids or b >= 0x80:
                trie.special.add(node)
            nxt = kids[b] = len(children)
            children.append({})
            trie.byte_in.append(b)
        node = nxt
        if pending:
            trie.mid_char.add(node)
    trie.ends.add(node)


_BYTE_NODES = tuple(lit(bytes((b,))) for b in range(256))  # the shared one-byte literals


@lru_cache(maxsize=FRAGMENT_CACHE)
def _diverging(taken: tuple[int, ...]) -> Node | None:
    """The characters that leave a key trie's node whose children are the bytes `taken` (None:
    none): by ASCII byte class when every child is ASCII (multi-byte characters go through the
    shared state), else whole characters by their first byte. Built once per set of bytes."""
    taken_ranges = merge_ranges([(b, b) for b in taken])
    if all(b < 0x80 for b in taken):
        firsts = subtract_ranges(subtract_ranges(((0x20, 0x7F),), SPECIAL), taken_ranges)
        return Bytes(firsts) if firsts else None
    firsts = subtract_ranges(subtract_ranges(((0x20, 0x7F), (0xC2, 0xF4)), SPECIAL), taken_ranges)
    return _chars_starting_with(firsts) if firsts else None


_DIVERGING_ASCII = tuple(_diverging((b,)) for b in range(0x80))  # never None: a key's one ASCII next byte
_DIVERGING_NONE = _diverging(())  # what leaves a node without children: any character


def _chars_starting_with(firsts: Ranges) -> Node:
    """Whole UTF-8 characters (no escapes) whose first byte is in `firsts`."""
    options: list[Node] = []
    for lo, hi in firsts:
        a1, b1 = max(lo, 0x20), min(hi, 0x7F)
        if a1 <= b1:
            options.append(Bytes(((a1, b1),)))
        for lead_lo, lead_hi, cp_lo, cp_hi in ((0xC2, 0xDF, 0x80, 0x7FF), (0xE0, 0xEF, 0x800, 0xFFFF), (0xF0, 0xF4, 0x10000, 0x10FFFF)):
            a, b = max(lo, lead_lo), min(hi, lead_hi)
            if a <= b:
                cps = _lead_range_to_cps(a, b, cp_lo, cp_hi)
                options.append(codepoint_ranges_to_node(cps))
    return alt(*options)


def _lead_range_to_cps(a: int, b: int, cp_lo: int, cp_hi: int) -> Ranges:
    n = 2 if cp_hi == 0x7FF else 3 if cp_hi == 0xFFFF else 4
    shift = 6 * (n - 1)
    base = {2: 0xC0, 3: 0xE0, 4: 0xF0}[n]
    lo = max(cp_lo, (a - base) << shift)
    hi = min(cp_hi, ((b - base + 1) << shift) - 1)
    return ((lo, hi),)
