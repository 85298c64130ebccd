"""TLI's vocabulary bridge on two vocabularies typed into the test: a token cut mid-UTF-8 character,
one draft token spanning several target tokens and the reverse, special tokens known to one side
only, and the join of a proposal with the target's last tokens."""

from __future__ import annotations

import pytest

from engine.spec.bridge import VocabBridge, utf8_split


class ToyTokenizer:
    """Greedy longest match over byte tokens; specials (str) are matched by their literal text."""

    def __init__(self, tokens: list[bytes | str]) -> None:
        self.tokens = tokens
        self.names = [t if isinstance(t, str) else t.decode("latin-1") for t in tokens]

    def __len__(self) -> int:
        return len(self.tokens)

    def get_vocab(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    def convert_ids_to_tokens(self, token_id: int) -> str:
        return self.names[token_id]

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        data, ids, i = text.encode(), [], 0
        pieces = [(t, i) for i, t in enumerate(self.tokens) if isinstance(t, bytes)]
        while i < len(data):
            token, token_id = max(((t, j) for t, j in pieces if data.startswith(t, i)), key=lambda p: len(p[0]))
            ids.append(token_id)
            i += len(token)
        return ids

    def table(self) -> list[bytes | None]:
        return [t if isinstance(t, bytes) else None for t in self.tokens]


SINGLE = [bytes([b]) for b in b" !abcdefhilnorstwx"] + [b"\xc3", b"\xa9"]
TARGET = ToyTokenizer(SINGLE + [b"he", b"llo", b"hello", b"caf\xc3", b" wor", "<|im_end|>", "<tool>"])
DRAFT = ToyTokenizer(SINGLE + [b"hello w", b"caf", b"\xc3\xa9!", b"ld", "<|im_end|>", "<|draft_only|>"])


@pytest.fixture()
def bridge() -> VocabBridge:
    return VocabBridge(TARGET, DRAFT, TARGET.table(), DRAFT.table())


def t(*pieces) -> list[int]:
    return [TARGET.tokens.index(p) for p in pieces]


def d(*pieces) -> list[int]:
    return [DRAFT.tokens.index(p) for p in pieces]


@pytest.mark.parametrize("data, cut", [(b"abc", 3), (b"ab\xc3", 2), (b"ab\xc3\xa9", 4), (b"\xe2\x82", 0),
                                       (b"\xe2\x82\xac", 3), (b"x\xf0\x9f\x98", 1), (b"", 0)])  # fmt: skip
def test_utf8_split(data, cut):
    assert utf8_split(data) == cut


def test_a_target_token_cut_mid_character_is_held_back(bridge):
    context, held = bridge.to_draft(t(b"caf\xc3"))
    assert (context, held) == (d(b"caf"), b"\xc3")


def test_a_proposal_completes_the_held_character_with_byte_tokens(bridge):
    target_ids = t(b"caf\xc3")
    assert bridge.to_target(target_ids, b"\xc3", d(b"\xc3\xa9!"), 8) == t(b"\xa9", b"!")
    assert bridge.to_target(target_ids, b"\xc3", d(b"a"), 8) == []  # does not continue the held bytes


def test_one_draft_token_becomes_several_target_tokens_and_the_reverse(bridge):
    assert bridge.to_target(t(b"x"), b"", d(b"hello w", b"o", b"r", b"ld", b"!"), 8) == t(b"hello", b" wor", b"l", b"d", b"!")
    many = d(b"h", b"e", b"l", b"l", b"o", b" ")
    assert bridge.to_target(t(b"x"), b"", many, 8) == t(b"hello", b" ")  # five draft tokens, one target token
    assert bridge.to_target(t(b"x"), b"", many, 1) == t(b"hello")  # at most max_tokens


def test_a_word_the_draft_may_not_have_finished_is_left_out(bridge):
    assert bridge.to_target(t(b"x"), b"", d(b" ", b"h", b"e"), 8) == t(b" ")  # "he" may become "hello"


def test_specials_map_by_text_or_are_left_out(bridge):
    context, held = bridge.to_draft(t(b"h", "<|im_end|>", b"i", "<tool>", b"!"))
    assert (context, held) == (d(b"h", "<|im_end|>", b"i", b"!"), b"")  # <tool> is the target's only
    assert bridge.special_to_target(DRAFT.tokens.index("<|im_end|>")) == TARGET.tokens.index("<|im_end|>")
    assert bridge.special_to_target(DRAFT.tokens.index("<|draft_only|>")) is None
    assert bridge.to_target(t(b"x"), b"", d(b"!", "<|draft_only|>", b"a"), 8) == t(b"!")  # a special ends the text


def test_the_join_keeps_the_target_tokens_before_it(bridge):
    # "he" + "llo!" re-tokenized together would be "hello" "!": the target's "he" is already
    # there, so the proposal is tokenized alone.
    assert bridge.to_target(t(b"he"), b"", d(b"l", b"l", b"o", b"!"), 8) == t(b"llo", b"!")
    assert bridge.to_target(t(b" "), b"", d(b"w", b"o", b"r", b"ld", b"!"), 8) == t(b"w", b"o", b"r", b"l", b"d", b"!")
    # where the target's last tokens survive the joint re-tokenization, the join is used
    assert bridge.to_target(t(b"a", b"!"), b"", d(b"h", b"e", b"l", b"l", b"o", b"!"), 8) == t(b"hello", b"!")
