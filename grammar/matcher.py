"""The per-request matcher: fills a bitmask row, accepts tokens, rolls back, says when done."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch

from grammar.automaton.pda import States
from grammar.bitmask import BitmaskViews
from grammar.masks.words import Words, dense, write_row
from grammar.vocab import Vocabulary


class Compiled(Protocol):
    """What a Matcher reads of its grammar (grammar/compiled.py CompiledGrammar)."""

    vocab: Vocabulary
    views: BitmaskViews
    initial: States
    masks: dict[States, Words]

    def fill(self, configs: States, rows: np.ndarray, row: int) -> None: ...
    def mask(self, configs: States) -> np.ndarray: ...
    def advance(self, configs: States, data: bytes) -> States: ...
    def is_complete(self, configs: States) -> bool: ...
    def token_allowed(self, configs: States, token_id: int) -> bool | None: ...


class Matcher:
    """State of one request's constrained output; created by `CompiledGrammar.matcher()`.

    The engine calls `fill_bitmask` before sampling each step and `accept` with the sampled
    token; speculative decoding calls `accept` per draft token and `rollback` on rejection.
    Never raises for a rejected token: `accept` returns False and changes nothing.
    """

    __slots__ = ("grammar", "_history", "_terminated")

    def __init__(self, grammar: Compiled) -> None:
        self.grammar = grammar
        self._history: list[States] = [grammar.initial]
        self._terminated = False

    @property
    def state(self) -> States:
        return self._history[-1]

    def fill_bitmask(self, bitmask: torch.Tensor, row: int = 0) -> None:
        """Write the allowed next tokens into `bitmask[row]` (only EOS once terminated)."""
        g = self.grammar
        view = g.views.view(bitmask)
        if self._terminated:
            words = g.vocab.eos_words
        else:
            words = g.masks.get(self._history[-1])
            if words is None:
                if view is not None:
                    g.fill(self._history[-1], view, row)
                    return
                words = g.mask(self._history[-1])
        if view is not None:  # a numpy view of the CPU tensor: no tensor round trip
            write_row(words, view, row)
        else:
            bitmask[row].copy_(torch.from_numpy(dense(words)))

    def accept(self, token_id: int) -> bool:
        """Advance by one token; False (state unchanged) when the grammar forbids it."""
        vocab = self.grammar.vocab
        if self._terminated or not 0 <= token_id < vocab.vocab_size:
            return False
        if token_id in vocab.eos_token_ids:
            if not self.grammar.is_complete(self.state):
                return False
            self._history.append(self.state)
            self._terminated = True
            return True
        data = vocab.token_bytes[token_id]
        if not data or self.grammar.token_allowed(self.state, token_id) is False:
            return False
        nxt = self.grammar.advance(self.state, data)
        if not nxt:
            return False
        self._history.append(nxt)
        return True

    def accept_bytes(self, data: bytes) -> bool:
        """Advance by raw bytes (e.g. forced text); False and unchanged when rejected."""
        nxt = self.grammar.advance(self.state, data) if not self._terminated else frozenset()
        if not nxt:
            return False
        self._history.append(nxt)
        return True

    def rollback(self, num_tokens: int) -> None:
        """Undo the last `num_tokens` accepted tokens (including an accepted EOS)."""
        if num_tokens < 0 or num_tokens >= len(self._history):
            raise ValueError(f"cannot roll back {num_tokens} tokens (have {len(self._history) - 1})")
        if num_tokens:
            del self._history[-num_tokens:]
            self._terminated = False

    def is_terminated(self) -> bool:
        """True once EOS has been accepted."""
        return self._terminated

    def is_completed(self) -> bool:
        """True when the output so far is a complete match (EOS would be accepted)."""
        return self._terminated or self.grammar.is_complete(self.state)
