"""Token slices: the tokens made only of a byte set (and optionally complete UTF-8 characters),
precomputed per vocabulary so a DFA state absorbing the set takes them without a trie walk."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from grammar.masks.trie import FlatTrie, TrieLevel

if TYPE_CHECKING:
    from grammar.vocab import Vocabulary

UTF8_BAD = 8
# Decoder states: 0 at a character boundary; 1-3 continuation bytes still due; 4 after E0, 5
# after ED, 6 after F0, 7 after F4 (restricted second byte); 8 broken (absorbing).
_UTF8 = np.full((9, 256), UTF8_BAD, dtype=np.int8)
_UTF8[0, :0x80] = 0
_UTF8[0, 0xC2:0xE0] = 1
_UTF8[0, 0xE1:0xF0] = 2
_UTF8[0, 0xE0] = 4
_UTF8[0, 0xED] = 5
_UTF8[0, 0xF1:0xF4] = 3
_UTF8[0, 0xF0] = 6
_UTF8[0, 0xF4] = 7
_UTF8[1, 0x80:0xC0] = 0
_UTF8[2, 0x80:0xC0] = 1
_UTF8[3, 0x80:0xC0] = 2
_UTF8[4, 0xA0:0xC0] = 1
_UTF8[5, 0x80:0xA0] = 1
_UTF8[6, 0x90:0xC0] = 2
_UTF8[7, 0x80:0x90] = 2

# Every well-formed multi-byte UTF-8 character as byte-range sequences.
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


def utf8_levels(levels: list[TrieLevel]) -> list[np.ndarray]:
    """Per trie depth: the UTF-8 decoder state after each node's prefix (int8 [num_nodes])."""
    out: list[np.ndarray] = []
    prev = np.zeros(1, dtype=np.int8)
    for lv in levels:
        prev = _UTF8[prev[lv.parent], lv.byte]
        out.append(prev)
    return out


def utf8_states(flat: FlatTrie, levels_u8: list[np.ndarray]) -> np.ndarray:
    """The same in flat DFS order (int8 [num_nodes])."""
    if not levels_u8:
        return np.zeros(0, dtype=np.int8)
    return np.concatenate(levels_u8)[flat.order]


def pack_bits(allowed: np.ndarray) -> np.ndarray:
    """bool [num_words * 32] -> int32 [num_words], bit i of word w = token 32 * w + i."""
    return np.packbits(allowed, bitorder="little").view("<i4").astype(np.int32)


class TokenSlice:
    """Tokens grouped by whether they continue with bytes of `in_set` only: a DFA state that loops
    on every byte of the set allows such a trie subtree whole.  `words` has the tokens made of
    set bytes only (what a looping state allows without a walk); `pure_flat` marks flat-trie nodes
    whose descendants' bytes are all in the set (`root_pure_flat`: the same for the walk's first
    state); `pure` is the per-depth form (numpy walk)."""

    __slots__ = ("id", "in_set", "utf8", "set_bytes", "words", "pure_flat", "root_pure_flat", "_pure", "_vocab", "_ok",
                 "_upto", "rest_words", "first_ids", "first_off", "multi_first_words", "char_max", "char_depth", "_row_chars")

    def __init__(self, slice_id: int, in_set: np.ndarray, vocab: Vocabulary, utf8: bool = False) -> None:
        self.id = slice_id
        self.in_set = in_set.copy()
        self.utf8 = utf8  # also every complete UTF-8 character (in_set is then ASCII only)
        member = in_set.copy()  # bytes a token of the slice may hold
        if utf8:
            member[0x80:] = True
        self.set_bytes = member.astype(np.uint8).tobytes()  # uint8 [256] for the C walk
        self._vocab = vocab
        self._pure: list[np.ndarray] | None = None
        flat = vocab.flat
        num_nodes = len(flat.byte)
        bad_node = ~member[flat.byte]
        if utf8:  # a broken sequence, or a token ending inside a character
            first_child_lo = np.where(np.arange(1, num_nodes + 1) < flat.end, flat.lo[1:], flat.lo[flat.end])
            ends_here = first_child_lo > flat.lo[:-1]
            bad_node |= (vocab.utf8_state == UTF8_BAD) | (ends_here & (vocab.utf8_state != 0))
        bad = np.concatenate([[0], np.cumsum(bad_node)])  # [num_nodes + 1]
        pure = (bad[flat.end] - bad[np.arange(1, num_nodes + 1)]) == 0
        # From the walk's start state (a character boundary) a node inside a character is fine;
        # deeper in the walk the suffix must start at a boundary.
        self.root_pure_flat = pure.astype(np.uint8)
        self.pure_flat = (pure & (vocab.utf8_state == 0)).astype(np.uint8) if utf8 else self.root_pure_flat
        ok = np.zeros(len(vocab.lens), dtype=bool)
        path_ok = np.ones(1, dtype=bool)
        level_u8 = vocab.utf8_levels if utf8 else None
        for depth, lv in enumerate(vocab.trie):  # a prefix is in when its parent is and its last byte is
            path_ok = member[lv.byte] & path_ok[lv.parent]
            if level_u8 is not None:
                path_ok &= level_u8[depth] != UTF8_BAD
            ends = lv.token_row >= 0
            done = path_ok[ends] if level_u8 is None else path_ok[ends] & (level_u8[depth][ends] == 0)
            ok[lv.token_row[ends]] = done
        if len(vocab.dup_rows):
            ok[vocab.dup_rows] = ok[vocab.dup_first]
        self._ok = ok  # bool [num_rows]: every byte of the token is in the set
        self._upto: dict[int, np.ndarray] = {}
        self.words = self._pack(ok)
        self.rest_words = np.zeros(vocab.num_words, dtype=np.int32)
        self.first_ids = np.zeros(0, dtype=np.int32)  # token ids b + text, grouped by first byte b
        self.first_off = np.zeros(129, dtype=np.int32)  # [129]: byte b's ids are first_ids[off[b]:off[b + 1]]
        self.multi_first_words = self.rest_words
        # A bounded run of a UTF-8 slice counts characters (a maxLength string): per flat node the
        # most characters of a token below it and the characters of its own prefix (a started
        # one counts), per sorted row its characters. None: characters are bytes.
        self.char_max = self.char_depth = self._row_chars = None
        if utf8:
            self._first_byte_words(member, vocab)
            self._char_counts(vocab)
            self.multi_first_words = self._pack(ok & (vocab.first_byte >= 0x80))  # first char non-ASCII

    def _first_byte_words(self, member: np.ndarray, vocab: Vocabulary) -> None:
        """Per ASCII byte b of the set: the tokens b + (slice text), for a state that sends b to a
        state looping on the slice (`first_ids` from `first_off[b]`); `rest_words` is their union."""
        rest_ok = np.zeros(len(vocab.lens), dtype=bool)
        path_ok = np.ones(1, dtype=bool)
        for depth, lv in enumerate(vocab.trie):
            u8 = vocab.utf8_levels[depth]
            if depth == 0:
                path_ok = self.in_set[lv.byte] & (lv.byte < 0x80)
            else:
                path_ok = member[lv.byte] & path_ok[lv.parent] & (u8 != UTF8_BAD)
            ends = lv.token_row >= 0
            rest_ok[lv.token_row[ends]] = path_ok[ends] & (u8[ends] == 0)
        if len(vocab.dup_rows):
            rest_ok[vocab.dup_rows] = rest_ok[vocab.dup_first]
        rows = np.nonzero(rest_ok)[0]  # sorted rows: grouped by first byte already
        self.first_ids = vocab.sorted_ids[rows].astype(np.int32)
        self.first_off = np.searchsorted(vocab.first_byte[rows], np.arange(129)).astype(np.int32)
        self.rest_words = self._pack(rest_ok)

    def _char_counts(self, vocab: Vocabulary) -> None:
        depth: list[np.ndarray] = []
        prev = np.zeros(1, dtype=np.int32)
        rows = np.zeros(len(vocab.lens), dtype=np.int32)
        for lv in vocab.trie:
            prev = prev[lv.parent] + ((lv.byte & 0xC0) != 0x80).astype(np.int32)
            depth.append(prev)
            ends = lv.token_row >= 0
            rows[lv.token_row[ends]] = prev[ends]
        if len(vocab.dup_rows):
            rows[vocab.dup_rows] = rows[vocab.dup_first]
        self.char_max = vocab.subtree_max([np.where(lv.token_row >= 0, d, 0) for lv, d in zip(vocab.trie, depth)])
        self.char_depth = np.concatenate(depth)[vocab.flat.order].astype(np.int32) if depth else np.zeros(0, np.int32)
        self._row_chars = rows

    def _pack(self, rows: np.ndarray) -> np.ndarray:
        allowed = np.zeros(self._vocab.num_words * 32, dtype=bool)
        allowed[self._vocab.sorted_ids[rows]] = True
        return pack_bits(allowed)

    def words_upto(self, max_len: int) -> np.ndarray:
        """int32 [num_words]: the slice's tokens of at most `max_len` characters (bytes, unless
        UTF-8; cached per length)."""
        if max_len >= self._vocab.max_len:
            return self.words
        hit = self._upto.get(max_len)
        if hit is None:
            size = self._vocab.lens if self._row_chars is None else self._row_chars
            hit = self._upto[max_len] = self._pack(self._ok & (size <= max_len))
        return hit

    @property
    def pure(self) -> list[np.ndarray]:
        """Per depth D: every token below the node continues with bytes of `in_set` only."""
        if self._pure is None:
            self._pure = self._vocab.suffix_pure(self.in_set)
        return self._pure


