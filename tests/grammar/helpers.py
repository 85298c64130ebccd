"""Small helpers shared by the grammar tests: allowed-token sets and whole-text acceptance."""

from __future__ import annotations

import grammar


def allowed(m: grammar.Matcher, vocab: grammar.Vocabulary) -> set[int]:
    bitmask = grammar.allocate_bitmask(1, vocab)
    m.fill_bitmask(bitmask, 0)
    bits = grammar.unpack_bitmask(bitmask, vocab.vocab_size)[0]
    return set(bits.nonzero().flatten().tolist())


def accepts_text(g: grammar.CompiledGrammar, text: str) -> bool:
    """Feed `text` one byte-token at a time (byte vocabulary), then EOS."""
    m = g.matcher()
    for b in text.encode():
        if not m.accept(b):
            return False
    return m.accept(g.vocab.eos_token_ids[0])
