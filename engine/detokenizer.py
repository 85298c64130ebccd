"""Incremental detokenization: token ids in, text deltas out, never a partial UTF-8 character.

Each new token decodes a short window (the last emitted tokens plus the new ones) and
emits only the text past what that window already produced, so the cost per token is
flat. Text that ends in U+FFFD is an unfinished multi-byte character (byte-fallback or
byte-level pieces) and waits for the next token; `flush` gives it up at the end.
"""

from __future__ import annotations

_PROMPT_CONTEXT = 6  # prompt tokens decoded with the first outputs, for leading-space rules


class IncrementalDetokenizer:
    """Per-request; called by the output processor for every new token id."""

    __slots__ = ("_tokenizer", "_ids", "_prefix_offset", "_read_offset", "_skip_special", "_vocab_len")

    def __init__(self, tokenizer, prompt_token_ids: list[int], skip_special_tokens: bool = True) -> None:
        self._tokenizer = tokenizer
        self._vocab_len = len(tokenizer)
        self._ids = [t for t in prompt_token_ids[-_PROMPT_CONTEXT:] if t < self._vocab_len]
        self._prefix_offset = 0
        self._read_offset = len(self._ids)
        self._skip_special = skip_special_tokens

    def _decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids, skip_special_tokens=self._skip_special)

    def add(self, token_id: int) -> str:
        """Appends one token; returns the text it completes (possibly empty)."""
        if token_id >= self._vocab_len:  # padded logits: an id the tokenizer does not know
            return ""
        self._ids.append(token_id)
        prefix_text = self._decode(self._ids[self._prefix_offset : self._read_offset])
        new_text = self._decode(self._ids[self._prefix_offset :])
        if len(new_text) <= len(prefix_text) or new_text.endswith("\ufffd"):
            return ""
        self._prefix_offset = self._read_offset
        self._read_offset = len(self._ids)
        return new_text[len(prefix_text) :]

    def flush(self) -> str:
        """The text still held back (an incomplete character at the very end)."""
        if self._read_offset == len(self._ids):
            return ""
        prefix_text = self._decode(self._ids[self._prefix_offset : self._read_offset])
        new_text = self._decode(self._ids[self._prefix_offset :])
        self._prefix_offset = self._read_offset = len(self._ids)
        return new_text[len(prefix_text) :]
