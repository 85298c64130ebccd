"""Token-level interleaving (TLI): carries text between a target and a draft of different vocabularies.

The target's known tokens become bytes, the bytes become the draft's context (re-tokenized
by the draft's tokenizer); the draft's proposed tokens become bytes again and are
re-tokenized by the target's tokenizer into the tokens the target verifies. Boundary cases:

- a token that ends inside a UTF-8 character: the draft's context stops before that
  character (the bytes are held); the proposal must begin with the held bytes, and the
  rest of that character is proposed as the target's single-byte tokens;
- one draft token that spans several target tokens, or the reverse: handled by going
  through bytes, never token by token;
- special tokens: mapped by their literal text when both vocabularies have them,
  otherwise left out of the draft's context and ending a proposal;
- the join: the proposal is tokenized together with the target's last few tokens, and
  used only when that re-tokenization keeps those tokens (else it is tokenized alone).
"""

from __future__ import annotations

_WINDOW = 3  # target tokens re-tokenized with a proposal to find how it joins


def utf8_split(data: bytes) -> int:
    """The length of the longest prefix of data that does not end inside a UTF-8 character."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII): is its character complete?
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return n if back >= need else n - back
    return n


def _special_text(tokenizer, token_id: int) -> str | None:
    if token_id >= len(tokenizer):
        return None
    return tokenizer.convert_ids_to_tokens(token_id)


class VocabBridge:
    """Built once by the Speculator from both tokenizers and their token-bytes tables (None = special)."""

    def __init__(self, target_tokenizer, draft_tokenizer, target_bytes: list, draft_bytes: list) -> None:
        self.target_tokenizer, self.draft_tokenizer = target_tokenizer, draft_tokenizer
        self.target_bytes, self.draft_bytes = target_bytes, draft_bytes
        self._target_vocab = target_tokenizer.get_vocab()
        self._draft_vocab = draft_tokenizer.get_vocab()
        self._to_draft: dict[int, int | None] = {}
        self._to_target: dict[int, int | None] = {}
        self.byte_tokens: dict[int, int] = {}  # byte value -> the target's token of exactly that byte
        for token_id, data in enumerate(target_bytes):
            if data is not None and len(data) == 1:
                self.byte_tokens.setdefault(data[0], token_id)

    def _bytes(self, table: list, token_id: int):
        return table[token_id] if token_id < len(table) else None

    def special_to_draft(self, token_id: int) -> int | None:
        if token_id not in self._to_draft:
            text = _special_text(self.target_tokenizer, token_id)
            other = self._draft_vocab.get(text) if text else None
            self._to_draft[token_id] = other if other is not None and self._bytes(self.draft_bytes, other) is None else None
        return self._to_draft[token_id]

    def special_to_target(self, token_id: int) -> int | None:
        if token_id not in self._to_target:
            text = _special_text(self.draft_tokenizer, token_id)
            other = self._target_vocab.get(text) if text else None
            self._to_target[token_id] = other if other is not None and self._bytes(self.target_bytes, other) is None else None
        return self._to_target[token_id]

    def _encode(self, tokenizer, data: bytes) -> list[int]:
        return tokenizer.encode(data.decode("utf-8", errors="replace"), add_special_tokens=False) if data else []

    def to_draft(self, target_ids: list[int]) -> tuple[list[int], bytes]:
        """(the draft's context for the target's known tokens, the bytes held back: an unfinished character)."""
        ids: list[int] = []
        buf = bytearray()
        for token_id in target_ids:
            data = self._bytes(self.target_bytes, token_id)
            if data is not None:
                buf += data
                continue
            special = self.special_to_draft(token_id)
            if special is not None:
                ids += self._encode(self.draft_tokenizer, bytes(buf))
                ids.append(special)
                buf.clear()
        cut = utf8_split(buf)
        return ids + self._encode(self.draft_tokenizer, bytes(buf[:cut])), bytes(buf[cut:])

    def _drafted_bytes(self, draft_ids: list[int]) -> bytes:
        data = bytearray()
        for token_id in draft_ids:
            piece = self._bytes(self.draft_bytes, token_id)
            if piece is None:  # a special token ends the proposal
                break
            data += piece
        return bytes(data)

    def to_target(self, target_ids: list[int], held: bytes, draft_ids: list[int], max_tokens: int) -> list[int]:
        """The target tokens that continue target_ids with the draft's text (at most max_tokens)."""
        data = self._drafted_bytes(draft_ids)
        if not data.startswith(held):
            return []
        data = data[len(held) :]
        lead = 0
        while lead < min(len(data), 3) and data[lead] & 0xC0 == 0x80:  # the rest of a held character
            lead += 1
        lead_ids = [self.byte_tokens.get(b) for b in data[:lead]]
        if None in lead_ids:
            return []
        body = data[lead : lead + utf8_split(data[lead:])]
        ids = lead_ids + self._join(target_ids, body, plain=not held and not lead)
        if body and len(ids) > 1 and body.decode("utf-8", errors="replace")[-1].isalnum():  # the last word may go on
            ids.pop()
        return ids[:max_tokens]

    def _join(self, target_ids: list[int], body: bytes, plain: bool) -> list[int]:
        """body re-tokenized by the target, after its last few tokens when that keeps them."""
        window: list[int] = []
        for token_id in reversed(target_ids[-_WINDOW:] if plain else []):
            if self._bytes(self.target_bytes, token_id) is None:
                break
            window.insert(0, token_id)
        if window:
            prefix = b"".join(self.target_bytes[t] for t in window)
            if utf8_split(prefix) == len(prefix) and prefix[0] & 0xC0 != 0x80:
                joined = self._encode(self.target_tokenizer, prefix + body)
                if joined[: len(window)] == window:
                    return joined[len(window) :]
        return self._encode(self.target_tokenizer, body)
