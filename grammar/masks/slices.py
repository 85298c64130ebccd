"""Token slices: the tokens made only of a byte set (and optionally complete UTF-8 characters),
precomputed per vocabulary so a DFA state absorbing the set takes them without a trie walk."""

from __future__ import annotations

import threading

import numpy as np

from grammar.masks.trie import UTF8_BAD, TokenTrie


def pack_bits(allowed: np.ndarray) -> np.ndarray:
    """bool [num_words * 32] -> int32 [num_words], bit i of word w = token 32 * w + i."""
    return np.packbits(allowed, bitorder="little").view("<i4").astype(np.int32)


class TokenSlice:
    """Tokens grouped by whether they continue with bytes of `in_set` only: a DFA state that loops
    on every byte of the set allows such a trie subtree whole.  `words` has the tokens made of
    set bytes only (what a looping state allows without a walk); `pure_flat` marks flat-trie nodes
    whose descendants' bytes are all in the set (`root_pure_flat`: the same for the walk's first
    state); `pure` is the per-depth form (numpy walk)."""

    __slots__ = ("id", "in_set", "utf8", "set_bytes", "words", "pure_flat", "root_pure_flat", "_pure", "_trie", "_num_words", "_ok",
                 "_upto", "rest_words", "first_ids", "first_off", "multi_first_words", "char_max", "char_depth", "_row_chars")

    def __init__(self, slice_id: int, in_set: np.ndarray, trie: TokenTrie, num_words: int, utf8: bool = False) -> None:
        self.id = slice_id
        self.in_set = in_set.copy()
        self.utf8 = utf8  # also every complete UTF-8 character (in_set is then ASCII only)
        member = in_set.copy()  # bytes a token of the slice may hold
        if utf8:
            member[0x80:] = True
        self.set_bytes = member.astype(np.uint8).tobytes()  # uint8 [256] for the C walk
        self._trie = trie
        self._num_words = num_words
        self._pure: list[np.ndarray] | None = None
        flat = trie.flat
        num_nodes = len(flat.byte)
        bad_node = ~member[flat.byte]
        if utf8:  # a broken sequence, or a token ending inside a character
            first_child_lo = np.where(np.arange(1, num_nodes + 1) < flat.end, flat.lo[1:], flat.lo[flat.end])
            ends_here = first_child_lo > flat.lo[:-1]
            bad_node |= (trie.utf8_state == UTF8_BAD) | (ends_here & (trie.utf8_state != 0))
        bad = np.concatenate([[0], np.cumsum(bad_node)])  # [num_nodes + 1]
        pure = (bad[flat.end] - bad[np.arange(1, num_nodes + 1)]) == 0
        # From the walk's start state (a character boundary) a node inside a character is fine;
        # deeper in the walk the suffix must start at a boundary.
        self.root_pure_flat = pure.astype(np.uint8)
        self.pure_flat = (pure & (trie.utf8_state == 0)).astype(np.uint8) if utf8 else self.root_pure_flat
        ok = np.zeros(len(trie.lens), dtype=bool)
        path_ok = np.ones(1, dtype=bool)
        level_u8 = trie.utf8_levels if utf8 else None
        for depth, lv in enumerate(trie.levels):  # a prefix is in when its parent is and its last byte is
            path_ok = member[lv.byte] & path_ok[lv.parent]
            if level_u8 is not None:
                path_ok &= level_u8[depth] != UTF8_BAD
            ends = lv.token_row >= 0
            done = path_ok[ends] if level_u8 is None else path_ok[ends] & (level_u8[depth][ends] == 0)
            ok[lv.token_row[ends]] = done
        if len(trie.dup_rows):
            ok[trie.dup_rows] = ok[trie.dup_first]
        self._ok = ok  # bool [num_rows]: every byte of the token is in the set
        self._upto: dict[int, np.ndarray] = {}
        self.words = self._pack(ok)
        self.rest_words = np.zeros(num_words, dtype=np.int32)
        self.first_ids = np.zeros(0, dtype=np.int32)  # token ids b + text, grouped by first byte b
        self.first_off = np.zeros(129, dtype=np.int32)  # [129]: byte b's ids are first_ids[off[b]:off[b + 1]]
        self.multi_first_words = self.rest_words
        # A bounded run of a UTF-8 slice counts characters (a maxLength string): per flat node the
        # most characters of a token below it and the characters of its own prefix (a started
        # one counts), per sorted row its characters. None: characters are bytes.
        self.char_max = self.char_depth = self._row_chars = None
        if utf8:
            self._first_byte_words(member, trie)
            self._char_counts(trie)
            self.multi_first_words = self._pack(ok & (trie.first_byte >= 0x80))  # first char non-ASCII

    def _first_byte_words(self, member: np.ndarray, trie: TokenTrie) -> None:
        """Per ASCII byte b of the set: the tokens b + (slice text), for a state that sends b to a
        state looping on the slice (`first_ids` from `first_off[b]`); `rest_words` is their union."""
        rest_ok = np.zeros(len(trie.lens), dtype=bool)
        path_ok = np.ones(1, dtype=bool)
        for depth, lv in enumerate(trie.levels):
            u8 = trie.utf8_levels[depth]
            if depth == 0:
                path_ok = self.in_set[lv.byte] & (lv.byte < 0x80)
            else:
                path_ok = member[lv.byte] & path_ok[lv.parent] & (u8 != UTF8_BAD)
            ends = lv.token_row >= 0
            rest_ok[lv.token_row[ends]] = path_ok[ends] & (u8[ends] == 0)
        if len(trie.dup_rows):
            rest_ok[trie.dup_rows] = rest_ok[trie.dup_first]
        rows = np.nonzero(rest_ok)[0]  # sorted rows: grouped by first byte already
        self.first_ids = trie.sorted_ids[rows].astype(np.int32)
        self.first_off = np.searchsorted(trie.first_byte[rows], np.arange(129)).astype(np.int32)
        self.rest_words = self._pack(rest_ok)

    def _char_counts(self, trie: TokenTrie) -> None:
        depth: list[np.ndarray] = []
        prev = np.zeros(1, dtype=np.int32)
        rows = np.zeros(len(trie.lens), dtype=np.int32)
        for lv in trie.levels:
            prev = prev[lv.parent] + ((lv.byte & 0xC0) != 0x80).astype(np.int32)
            depth.append(prev)
            ends = lv.token_row >= 0
            rows[lv.token_row[ends]] = prev[ends]
        if len(trie.dup_rows):
            rows[trie.dup_rows] = rows[trie.dup_first]
        self.char_max = trie.subtree_max([np.where(lv.token_row >= 0, d, 0) for lv, d in zip(trie.levels, depth)])
        self.char_depth = np.concatenate(depth)[trie.flat.order].astype(np.int32) if depth else np.zeros(0, np.int32)
        self._row_chars = rows

    def _pack(self, rows: np.ndarray) -> np.ndarray:
        allowed = np.zeros(self._num_words * 32, dtype=bool)
        allowed[self._trie.sorted_ids[rows]] = True
        return pack_bits(allowed)

    def words_upto(self, max_len: int) -> np.ndarray:
        """int32 [num_words]: the slice's tokens of at most `max_len` characters (bytes, unless
        UTF-8; cached per length)."""
        if max_len >= self._trie.max_len:
            return self.words
        hit = self._upto.get(max_len)
        if hit is None:
            size = self._trie.lens if self._row_chars is None else self._row_chars
            hit = self._upto[max_len] = self._pack(self._ok & (size <= max_len))
        return hit

    @property
    def pure(self) -> list[np.ndarray]:
        """Per depth D: every token below the node continues with bytes of `in_set` only."""
        if self._pure is None:
            self._pure = self._trie.suffix_pure(self.in_set)
        return self._pure


# Canonical slices, built with the vocabulary (largest first): the C walk only uses these, so a
# schema never pays for building one. JSON string text without escapes; ASCII letters and digits;
# lowercase letters (patterns such as `^[a-z ]*$` or `^[a-z0-9-]+$`: without a slice their
# states walk every path of such letters, ~3 ms on a 262k vocabulary).
_SLICE_BYTES = (((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)), ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)), ((0x61, 0x7A),))
MAX_SLICES = 256
MAX_CANONICAL_CACHE = 1 << 16  # byte sets remembered by canonical_slice
MIN_SLICE_BYTES = 8
ASCII_TEXT_SLICE = 0  # the first canonical slice (JSON string text), widened to UTF-8 by LazyDfa.upgrade_to_utf8


class SliceSet:
    """A vocabulary's token slices: the canonical ones (made here, in this order), their UTF-8
    widening of JSON string text, and those the numpy walk asks for by byte set (`slice_for`).
    Slice ids are indices into `slice_list` and never change; owned by grammar/masks/index.py."""

    def __init__(self, trie: TokenTrie, num_words: int) -> None:
        self._trie = trie
        self._num_words = num_words
        self._slices: dict[bytes, TokenSlice] = {}
        self._canonical_of: dict[bytes, int] = {}  # byte set (256 0/1 bytes) -> canonical slice id
        self.slice_list: list[TokenSlice] = []
        self._lock = threading.Lock()
        for byte_ranges in _SLICE_BYTES:
            in_set = np.zeros(256, dtype=bool)
            for lo, hi in byte_ranges:
                in_set[lo : hi + 1] = True
            self.slice_for(in_set)
        self.num_canonical = len(self.slice_list)
        # their byte sets as 32-byte bitsets (bit c of byte c >> 3): canonical_slice in C (grammar/automaton/_dfa.c)
        self.canonical_sets = b"".join(np.packbits(sl.in_set, bitorder="little").tobytes() for sl in self.slice_list)
        text = TokenSlice(len(self.slice_list), self.slice_list[ASCII_TEXT_SLICE].in_set, trie, num_words, utf8=True)
        self.slice_list.append(text)  # JSON string text including every complete UTF-8 character
        self.utf8_text_slice = text.id

    def canonical_slice(self, in_set: np.ndarray) -> int:
        """Id of the first canonical slice whose bytes all lie in `in_set` (bool [256]), or -1.

        Remembered per byte set for the vocabulary's lifetime: every new grammar asks again for
        the same few sets (string characters, digits, ...), ~15 us each when computed."""
        key = in_set.tobytes()
        hit = self._canonical_of.get(key)
        if hit is None:
            hit = -1
            for sl in self.slice_list[: self.num_canonical]:
                if not (sl.in_set & ~in_set).any():
                    hit = sl.id
                    break
            if len(self._canonical_of) < MAX_CANONICAL_CACHE:
                self._canonical_of[key] = hit
        return hit

    def slice_for(self, in_set: np.ndarray) -> TokenSlice | None:
        """The slice of tokens over the byte set `in_set` (bool [256]); built once per set and
        kept for the vocabulary's lifetime (ids are stable); None past MAX_SLICES sets."""
        key = np.packbits(in_set).tobytes()
        sl = self._slices.get(key)
        if sl is not None:
            return sl
        with self._lock:
            sl = self._slices.get(key)
            if sl is None and len(self.slice_list) < MAX_SLICES:
                sl = TokenSlice(len(self.slice_list), in_set, self._trie, self._num_words)
                self.slice_list.append(sl)
                self._slices[key] = sl
        return sl
