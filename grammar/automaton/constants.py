"""The values the DFA tables hold and the pushdown limits, as grammar/include/grammar_core.h gives them to the C core.

Both C extensions export the header's values as CONSTANTS; tests/grammar/test_reference_impls.py
checks that they equal these.
"""

from __future__ import annotations

UNKNOWN = -2  # trans: the row is not built yet
DEAD = -1  # trans: the byte is rejected; dominant: no dominant target
FLAG_CALLS = 1  # flags: the state calls a rule
FLAG_FINAL = 2  # flags: the state ends its rule
NO_SLICE = -1  # slice_of: no token slice
SLICE_UNKNOWN = -2  # slice_of: not computed yet
UNBOUNDED = 1 << 30  # absorb: the state loops on its slice
MIN_DOMINANT_BYTES = 26  # dominant: a target of at least this many bytes ([a-z] is the smallest slice)
MAX_STACK = 128  # pushdown: calls past this depth are not taken
MAX_CONFIGS = 4096  # pushdown: an expansion stops growing here
MAX_SEQS = 16  # text closure: UTF-8 sequence families set_utf8 takes
MAX_CLOSED_NODES = 4096  # a search gives up (answers no) past this many (state, character position) pairs,
MAX_CLOSED_ROWS = 64  # or past this many rows it had to build;
MAX_CLOSURE_ROWS = 1024  # past this many rows built by all of a DFA's searches, states not known are not closed
WS_UNKNOWN = -2  # ws_run: not known yet
NOT_WS_RUN = -1  # ws_run: the state is not in a bounded whitespace gap
WS_MAX_RUN = 100  # ws_run: longer gaps are stepped state by state

# Every well-formed multi-byte UTF-8 character as byte-range sequences (the builders' set_utf8).
UTF8_SEQUENCES = (
    ((0xC2, 0xDF), (0x80, 0xBF)),
    ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)),
    ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)),
    ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)),
)
