"""Free text watched for marker strings (an Aho-Corasick automaton over bytes), as grammar graphs.

Shared by structural tags (free text in which a tool call's begin string starts the call)
and XML-style tool parameters (a raw value runs until its closing string).
"""

from __future__ import annotations

from grammar.ir import Bytes, Graph, Node, merge_ranges


def scan_states(words: list[bytes]) -> tuple[list[bytes], list[dict[int | bytes, Bytes]]]:
    """The proper prefixes of `words` (state i = prefixes[i], state 0 the empty prefix) and
    each state's moves: target state -> bytes, or completed word -> the bytes completing it."""
    prefixes = sorted({w[:k] for w in words for k in range(len(w))}, key=lambda p: (len(p), p))
    index = {p: i for i, p in enumerate(prefixes)}
    complete = set(words)
    moves: list[dict[int | bytes, Bytes]] = []
    for p in prefixes:
        targets: dict[int | bytes, list[tuple[int, int]]] = {}
        for b in range(256):
            s = p + bytes([b])
            if s in complete:
                targets.setdefault(s, []).append((b, b))
                continue
            while s not in index:
                s = s[1:]
            targets.setdefault(index[s], []).append((b, b))
        moves.append({t: Bytes(merge_ranges(r)) for t, r in targets.items()})
    return prefixes, moves


def text_until(stop: bytes) -> Node:
    """Any bytes up to and including the first occurrence of `stop`."""
    prefixes, moves = scan_states([stop])
    end = len(prefixes)
    edges: list[tuple[int, int, Node | None]] = []
    for i, targets in enumerate(moves):
        for target, label in targets.items():
            edges.append((i, end if isinstance(target, bytes) else target, label))
    return Graph(end + 1, tuple(edges), (end,))
