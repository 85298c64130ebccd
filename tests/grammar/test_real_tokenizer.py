"""The default model's tokenizer (SmolLM2, 49k tokens): real JSONSchemaBench schemas and instances,
and a random "model" sampling only allowed tokens, whose output must always validate."""

from __future__ import annotations

import json
import random

import jsonschema
import numpy as np
import pytest

import grammar

pytestmark = pytest.mark.model
MAX_STEPS = 200


def _compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _walk(m: grammar.Matcher, ids: list[int], eos: int) -> bool:
    """Each token must be in the mask and accepted; then EOS."""
    bitmask = grammar.allocate_bitmask(1, m.grammar.vocab)
    for tid in ids + [eos]:
        m.fill_bitmask(bitmask, 0)
        if not (int(bitmask[0, tid >> 5]) >> (tid & 31)) & 1:
            return False
        assert m.accept(tid)
    return m.is_terminated()


def test_vocabulary_bytes_match_the_tokenizer(smollm2_tokenizer, smollm2_vocab):
    vocab = smollm2_vocab
    assert vocab.vocab_size == 49152 and vocab.eos_token_ids == [smollm2_tokenizer.eos_token_id]
    for text in ['{"a": "héllo\\n"}', "  spaces and 日本語"]:
        ids = smollm2_tokenizer.encode(text, add_special_tokens=False)
        assert b"".join(vocab.token_bytes[i] for i in ids) == text.encode()
    assert vocab.token_bytes[1] is None  # <|im_start|>


def test_valid_instances_accepted_invalid_rejected(smollm2_tokenizer, smollm2_vocab, bench_rows):
    eos = smollm2_vocab.eos_token_ids[0]
    for row in bench_rows:
        g = grammar.compile_json_schema(row["schema"], smollm2_vocab)
        for inst in row["valid"]:
            ids = smollm2_tokenizer.encode(_compact(inst["data"]), add_special_tokens=False)
            assert _walk(g.matcher(), ids, eos), (row["id"], inst["data"])
        for inst in row["invalid"]:
            ids = smollm2_tokenizer.encode(_compact(inst["data"]), add_special_tokens=False)
            m = g.matcher()
            ok = all(m.accept(t) for t in ids) and m.accept(eos)
            assert not ok, (row["id"], inst["data"])


def _sample(allowed_ids: np.ndarray, closers: np.ndarray, eos: int, step: int, rng: random.Random) -> int:
    """A random "model" that drifts towards closing the document as it gets longer."""
    if eos in allowed_ids and (step > 8 or rng.random() < 0.3):
        return eos
    if step > 20 and rng.random() < min(0.9, step / 100):
        near = np.intersect1d(allowed_ids, closers, assume_unique=True)
        if len(near):
            return int(near[rng.randrange(len(near))])
    return int(allowed_ids[rng.randrange(len(allowed_ids))])


def test_random_model_output_always_validates(smollm2_vocab, bench_rows):
    vocab = smollm2_vocab
    eos = vocab.eos_token_ids[0]
    closers = np.array([i for i, b in enumerate(vocab.token_bytes)
                        if b and len(b) <= 2 and all(c in b'"]}0123456789,' for c in b)], dtype=np.int64)
    bitmask = grammar.allocate_bitmask(1, vocab)
    rng = random.Random(1234)
    for row in bench_rows[::2]:
        g = grammar.compile_json_schema(row["schema"], vocab, whitespace=rng.choice(["compact", "flexible"]))
        m = g.matcher()
        out = b""
        for step in range(MAX_STEPS):
            m.fill_bitmask(bitmask, 0)
            allowed_ids = grammar.unpack_bitmask(bitmask, vocab.vocab_size)[0].nonzero().flatten().numpy()
            assert len(allowed_ids), (row["id"], out)
            tid = _sample(allowed_ids, closers, eos, step, rng)
            assert m.accept(tid)
            if tid == eos:
                break
            out += vocab.token_bytes[tid]
        assert m.is_terminated(), (row["id"], out[-200:])
        jsonschema.validate(json.loads(out.decode("utf-8")), row["schema"])
