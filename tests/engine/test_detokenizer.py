"""Incremental detokenization and stop strings: streamed text equals the one-shot decode."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from engine.detokenizer import IncrementalDetokenizer
from engine.stop_strings import StopStringMatcher

TEXTS = ["Le café coûte 3 € à Zürich; naïve façade.", "日本語のテキスト。 Emoji: 🙂🚀 done", "plain ascii words"]


@pytest.fixture(scope="module")
def tokenizer(tiny_llama_dir):
    return AutoTokenizer.from_pretrained(tiny_llama_dir)


@pytest.mark.parametrize("text", TEXTS)
def test_streamed_equals_one_shot_and_never_emits_a_replacement_char(tokenizer, text):
    ids = tokenizer.encode(text, add_special_tokens=False)
    detok = IncrementalDetokenizer(tokenizer, tokenizer.encode("prompt:", add_special_tokens=False))
    deltas = [detok.add(t) for t in ids]
    deltas.append(detok.flush())
    assert all("\ufffd" not in d for d in deltas)
    assert "".join(deltas) == tokenizer.decode(ids)
    assert sum(1 for d in deltas if d) > 3  # it did stream


def test_multibyte_characters_split_across_byte_tokens_wait_for_completion(tokenizer):
    ids = tokenizer.encode("🙂", add_special_tokens=False)
    assert len(ids) > 1  # the tiny tokenizer has no merge for the emoji: several byte tokens
    detok = IncrementalDetokenizer(tokenizer, [])
    deltas = [detok.add(t) for t in ids]
    assert deltas[:-1] == [""] * (len(ids) - 1) and deltas[-1] == "🙂"


def test_special_tokens_are_skipped_or_kept(tokenizer):
    ids = tokenizer.encode("hi<|im_end|>", add_special_tokens=False)
    skip = IncrementalDetokenizer(tokenizer, [], skip_special_tokens=True)
    keep = IncrementalDetokenizer(tokenizer, [], skip_special_tokens=False)
    assert "".join(skip.add(t) for t in ids) == "hi"
    assert "".join(keep.add(t) for t in ids) == "hi<|im_end|>"


@pytest.mark.parametrize("chunks", [["Hello wor", "ld STOP here"], ["Hello world S", "T", "OP here"], list("Hello world STOP")])
def test_stop_string_split_across_deltas_never_leaks(chunks):
    m = StopStringMatcher(["STOP"])
    emitted, hit = "", None
    for chunk in chunks:
        text, hit = m.feed(chunk)
        emitted += text
        if hit:
            break
    assert hit == "STOP" and emitted == "Hello world "


def test_held_back_text_is_released_when_it_cannot_be_a_stop():
    m = StopStringMatcher(["STOP"])
    assert m.feed("abc ST") == ("abc ", None)
    assert m.feed("AR") == ("STAR", None)
    assert m.feed("S") == ("", None)
    assert m.flush() == "S"
