"""Masks at the key states of open objects (declared properties, other keys allowed) on the real
vocabulary: the C walk against the reference walk. These are the first walks that set the mask
p99 (issue 17: inside a key nearly every string token stays allowed and no slice applies), so a
faster path for them must keep them bit-identical."""

from __future__ import annotations

import json

import numpy as np
import pytest

import grammar
from grammar.frontends.json_schema import compile_schema_to_grammar
from grammar.masks import walk_ref
from grammar.masks.index import TokenIndex, c_walk
from grammar.masks.state_masks import compute_mask
from grammar.masks.words import dense

MAX_TOKENS = 80  # of each valid instance
SCHEMAS = 4  # open-object schemas of the test subset checked


def _open_object(schema: object) -> bool:
    """An object schema naming properties that leaves other keys open (at the top level)."""
    return (isinstance(schema, dict) and isinstance(schema.get("properties"), dict) and bool(schema["properties"])
            and schema.get("additionalProperties", True) is not False)


def _bits(words: np.ndarray, vocab: grammar.Vocabulary) -> set[int]:
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")[: vocab.vocab_size]
    return set(np.nonzero(bits)[0].tolist())


@pytest.mark.model
@pytest.mark.skipif(c_walk is None, reason="C extension grammar.masks._walk not built")
def test_key_state_masks_match_the_reference_walk(smollm2_tokenizer, smollm2_vocab, bench_rows):
    ref = smollm2_vocab.derived("reference index", lambda: TokenIndex(smollm2_vocab, walk_ref))
    rows = [r for r in bench_rows if _open_object(r["schema"]) and r["valid"]][:SCHEMAS]
    assert len(rows) == SCHEMAS
    checked = 0
    for row in rows:
        g = grammar.compiler_for(smollm2_vocab).compile(compile_schema_to_grammar(row["schema"], "compact"))
        text = json.dumps(row["valid"][0]["data"], ensure_ascii=False, separators=(",", ":")).encode()
        m, done, key_steps = g.matcher(), b"", 0
        for tid in smollm2_tokenizer.encode(text.decode(), add_special_tokens=False)[:MAX_TOKENS]:
            key_steps = 2 if done.endswith((b'{"', b',"')) else key_steps - 1  # a key's start and next step
            if key_steps > 0:
                want = _bits(dense(compute_mask(g.dfa, ref, m.state, {})), smollm2_vocab)
                assert _bits(g.mask(m.state), smollm2_vocab) == want, (row["id"], done[-40:])
                checked += 1
            assert m.accept(tid), row["id"]
            done += smollm2_vocab.token_bytes[tid]
    assert checked >= 2 * SCHEMAS
