"""A vocabulary's token index for mask walks: its trie, its token slices, their rest tries and the walk's tables."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from grammar.masks import walk_ref
from grammar.masks.rest_trie import long_trie, rest_tries, run_prefix_max, run_rests
from grammar.masks.slices import ASCII_TEXT_SLICE, SliceSet
from grammar.masks.trie import TokenTrie
from grammar.vocab import Vocabulary

try:
    from grammar.masks import _walk as c_walk
except ImportError:  # built by setup.py; without a C compiler the reference walk (numpy) makes the masks
    c_walk = None

DEFAULT_WALK: ModuleType = c_walk or walk_ref
# The longest bounded run a DFA state's absorb length counts (grammar/compiled.py): each slice's
# tokens of up to this many characters are packed with the walk's tables, not at the first mask
# of such a run (~1-3 ms each on a 262k vocabulary).
MAX_RUN = 16


class TokenIndex:
    """Everything the mask walks read about one vocabulary, built once (by grammar/compiler.py) and
    shared read-only by every grammar compiled against it: the token trie, the token slices, and
    the tables of `walk` (the C walk grammar/masks/_walk.c, or its reference
    grammar/masks/walk_ref.py: the same functions). Building it costs about half a second on a
    262k vocabulary (the slices' words and rest tries)."""

    def __init__(self, vocab: Vocabulary, walk: ModuleType = DEFAULT_WALK) -> None:
        self.vocab = vocab
        self.walk = walk
        self.trie = TokenTrie(vocab)
        self.slices = SliceSet(self.trie, vocab.num_words)
        self.slice_list = self.slices.slice_list  # (read by the C walk as `vocab.slice_list`)
        self.tables = self._walk_tables()
        # EOS as the walk's (position, value) pairs, OR-ed into a complete state's mask by `or_put`
        self.eos_pairs: bytes = walk.sparse(vocab.eos_words, vocab.num_words)

    def _walk_tables(self) -> object:
        """The vocabulary's arrays as the walk holds them."""
        trie, slices = self.trie, self.slices
        rows = tuple((sl.set_bytes, sl.pure_flat, sl.root_pure_flat, sl.words)
                     + ((sl.char_max, sl.char_depth) if sl.char_max is not None else ()) for sl in slices.slice_list)
        text = slices.slice_list[slices.utf8_text_slice]
        first = text.in_set[:128].astype(np.uint8).tobytes()
        # (slice id, three rest tries or None, run rests or None, their run_max, the tokens outside
        # whole or None, the tokens of more than MAX_RUN slice characters first or None, MAX_RUN) of
        # the walk's slices: the rest tries, the tokens outside and the long trie only for the text
        # slice (the walk reads a long run's tokens from it for UTF-8 slices only)
        rests = []
        for sl in slices.slice_list[: slices.num_canonical] + [text]:
            for k in range(1, min(MAX_RUN, trie.max_len) + 1):
                sl.words_upto(k)
            rest = rest_tries(trie, text) if sl is text else None
            run = run_rests(trie, sl)
            if rest is not None or run is not None:
                starts, rests_, keyed, outside = rest or (None, None, None, None)
                rests.append((sl.id, starts, rests_, keyed, run, run_prefix_max(trie, sl) if run is not None else None,
                              outside, long_trie(trie, sl, MAX_RUN) if sl is text and run is not None else None,
                              MAX_RUN))
        return self.walk.Tables(self.vocab.num_words, trie.flat.arrays(), rows, (
            ASCII_TEXT_SLICE, text.id, first, text.first_ids, text.first_off, text.rest_words, text.multi_first_words),
            tuple(rests))
