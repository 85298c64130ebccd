"""The states a likely text passes through at its token boundaries, for the masks made ahead of use.

A frontend may guess what a model will write (Grammar.likely: grammar/frontends/json_likely.py for
a JSON Schema). Its masks are needed where the model's tokens end, so the text is split the way a
byte-level BPE tokenizer splits it: first into pre-tokens (a letter run, a digit run or a
punctuation run, each with at most one leading space; whitespace runs), then each pre-token into the
vocabulary's longest tokens from the left. BPE's merges need not give the longest tokens, but on
JSON they mostly do (`{"`, `user`, `Name`, `":"`, `John`, ` Smith`, `","`: SmolLM2's own split).
The texts' tokens are run through the grammar until one is refused; the start and the states
reached are yielded in order, one text after the other, each once (the precompute walks them before going outward
from the start). Lazy: each next state costs the precompute step that asks for it a token's run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from types import ModuleType

from grammar.automaton.dfa import LazyDfa
from grammar.automaton.pda import States, advance_by
from grammar.masks.state_masks import Key
from grammar.vocab import Vocabulary

# Pre-tokens as GPT-2-style byte-level BPE tokenizers cut them (bytes of 0x80 and up count as letters).
PRE_TOKEN = re.compile(rb" ?[A-Za-z\x80-\xff]+| ?[0-9]+| ?[^\sA-Za-z0-9\x80-\xff]+|\s+")


class _Tokens:
    """A vocabulary's token texts, for the longest-match split (built once per vocabulary)."""

    __slots__ = ("texts", "max_len")

    def __init__(self, vocab: Vocabulary) -> None:
        self.texts = frozenset(t for t in vocab.token_bytes if t)
        self.max_len = max((len(t) for t in self.texts), default=1)


def token_texts(vocab: Vocabulary) -> _Tokens:
    """The vocabulary's token texts (built once per vocabulary: grammar.prepare builds them, so that
    no compile's first-masks budget pays for it)."""
    return vocab.derived(_Tokens, lambda: _Tokens(vocab))


def split_tokens(text: bytes, vocab: Vocabulary) -> Iterator[bytes]:
    """`text` as tokens of the vocabulary (see the module docstring), lazily, up to the first byte
    that no token spells alone."""
    texts, max_len = (tokens := token_texts(vocab)).texts, tokens.max_len
    for piece in PRE_TOKEN.findall(text):
        if piece in texts:  # most pre-tokens of JSON are tokens whole
            yield piece
            continue
        i, n = 0, len(piece)
        while i < n:
            j = next((j for j in range(min(n, i + max_len), i, -1) if piece[i:j] in texts), None)
            if j is None:
                return
            yield piece[i:j]
            i = j


def path_keys(texts: tuple[bytes, ...], vocab: Vocabulary, dfa: LazyDfa, walk: ModuleType, initial: States
              ) -> Iterator[Key]:  # fmt: skip
    """The (state, stack non-empty) of every configuration the texts' tokens reach, the start first,
    one text after the other, each once; a text's path ends at its first refused token. Run by the
    precompute under the grammar's lock (the walk's `run`, as the grammar's `advance` does)."""
    seen: set[Key] = set()
    for text in texts:
        for key in _states(text, vocab, dfa, walk.run, initial):
            if key not in seen:
                seen.add(key)
                yield key


def _states(text: bytes, vocab: Vocabulary, dfa: LazyDfa, run: Callable[..., tuple[int, int]], configs: States
            ) -> Iterator[Key]:  # fmt: skip
    for stack, d in configs:
        yield d, stack != ()
    for token in split_tokens(text, vocab):
        configs = advance_by(dfa, configs, token, run)
        if not configs:
            return
        for stack, d in configs:
            yield d, stack != ()
