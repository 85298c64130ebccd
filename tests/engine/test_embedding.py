"""engine.embedding on tiny random BERTs: our encoder and pooling vs sentence-transformers, the folder's
config read right, batching over a token budget, and the encoder process's client."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from engine.embedding import AsyncEmbedder, Embedder, EmbeddingConfig, EncoderDeadError
from engine.embedding.inputs import validate_inputs
from engine.embedding.spec import read_spec
from tests.helpers.tiny_bert import make_tiny_bert

TEXTS = ["hello world", "the quick brown fox jumps over the lazy dog", "cafes", "a b c " * 12,
         "serving gateway embeddings stream tokens model vector search text"]  # fmt: skip


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> str:
    return str(make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny-bert"))


def _sentence_transformers(folder: str, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(folder, device="cpu").encode(texts, convert_to_numpy=True)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "mean_sqrt_len", "lasttoken"])
@pytest.mark.parametrize("normalize", [True, False])
def test_matches_sentence_transformers(tmp_path, pooling, normalize):
    folder = str(make_tiny_bert(tmp_path / "m", pooling=pooling, normalize=normalize))
    ours = Embedder(folder).embed(TEXTS)  # inputs of different lengths share one batch (padded attention)
    np.testing.assert_allclose(ours, _sentence_transformers(folder, TEXTS), atol=1e-5, rtol=0)


def test_one_input_per_batch_and_one_batch_agree(bert_dir):
    many = Embedder(bert_dir, max_batch_tokens=1).embed(TEXTS)  # every input alone: no padding at all
    one = Embedder(bert_dir).embed(TEXTS)
    np.testing.assert_allclose(many, one, atol=1e-6)


def test_long_texts_are_cut_like_sentence_transformers(bert_dir):
    texts = ["hello " * 100]
    np.testing.assert_allclose(Embedder(bert_dir).embed(texts), _sentence_transformers(bert_dir, texts), atol=1e-5)


def test_batches_respect_the_token_budget(bert_dir):
    runner = Embedder(bert_dir, max_batch_tokens=10).runner
    assert runner.batches([[1] * 4, [1] * 4, [1] * 4, [1] * 30, [1] * 2]) == [
        [[1] * 4, [1] * 4], [[1] * 4], [[1] * 30], [[1] * 2]]  # fmt: skip


def test_spec_of_a_plain_bert_folder_and_of_unsupported_ones(tmp_path):
    plain = make_tiny_bert(tmp_path / "plain", sentence_transformers=False)
    spec = read_spec(plain)
    assert (spec.pooling, spec.normalize, spec.max_seq_len) == ("cls", True, 64)
    two_modes = make_tiny_bert(tmp_path / "two")
    config = json.loads((two_modes / "1_Pooling" / "config.json").read_text())
    (two_modes / "1_Pooling" / "config.json").write_text(json.dumps({**config, "pooling_mode_cls_token": True}))
    with pytest.raises(ValueError, match="pooling"):
        read_spec(two_modes)
    dense = make_tiny_bert(tmp_path / "dense")
    modules = json.loads((dense / "modules.json").read_text()) + [{"path": "2_Dense", "type": "sentence_transformers.models.Dense"}]
    (dense / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ValueError, match="Dense is not supported"):
        read_spec(dense)
    (plain / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ValueError, match="bert only"):
        read_spec(plain)


def test_missing_folder_names_the_flag(tmp_path):
    with pytest.raises(ValueError, match="embedding_model"):
        Embedder(str(tmp_path / "nothing"))


def test_validate_inputs(bert_dir):
    info = Embedder(bert_dir).info
    validate_inputs([[1, 2, 3]], info)
    for bad, what in (([], "at least one"), ([[]], "empty"), ([[1] * 49], "at most 48"), ([[info.vocab_size]], "vocabulary"),
                      ([[1]] * 2049, "at most 2048")):  # fmt: skip
        with pytest.raises(ValueError, match=what):
            validate_inputs(bad, info)


async def test_async_embedder_in_a_process_batches_concurrent_requests(bert_dir):
    reference = Embedder(bert_dir)
    embedder = await AsyncEmbedder.start(EmbeddingConfig(model=bert_dir, max_batch_tokens=32, num_threads=1))
    try:
        assert embedder.info == reference.info and embedder.is_alive
        inputs = [embedder.tokenize([t])[0] for t in TEXTS]
        results = await asyncio.gather(*(embedder.embed(f"r{i}", [ids] * (i + 1)) for i, ids in enumerate(inputs)))
        for i, vectors in enumerate(results):
            assert vectors.shape == (i + 1, embedder.info.dimensions)
            np.testing.assert_allclose(vectors, reference.embed([TEXTS[i]] * (i + 1)), atol=1e-6)
    finally:
        await embedder.shutdown()
    assert not embedder.is_alive
    with pytest.raises(EncoderDeadError):
        await embedder.embed("late", [[2, 3]])


async def test_cancelled_request_is_aborted_and_others_finish(bert_dir):
    embedder = await AsyncEmbedder.start(EmbeddingConfig(model=bert_dir, max_batch_tokens=8), in_process=True)
    try:
        ids = embedder.tokenize(["hello world"])[0]
        slow = asyncio.ensure_future(embedder.embed("big", [ids] * 2000))
        await asyncio.sleep(0)
        slow.cancel()
        vectors = await embedder.embed("small", [ids])
        assert vectors.shape == (1, 32)
        with pytest.raises(asyncio.CancelledError):
            await slow
    finally:
        await embedder.shutdown()


async def test_a_folder_that_cannot_load_is_a_value_error(tmp_path):
    folder = make_tiny_bert(tmp_path / "broken")
    (folder / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(ValueError, match="corrupt weights"):
        await AsyncEmbedder.start(EmbeddingConfig(model=str(folder)), in_process=True)


def test_batches_take_inputs_round_robin_across_requests():
    from collections import deque

    from engine.embedding.process import _Job, _next_batch

    big, small = _Job("big", [[1] * 3] * 10), _Job("small", [[2] * 2, [2] * 2])
    jobs = deque([big, small])
    batch = _next_batch(jobs, max_tokens=10)
    assert [job.request_id for job, _ in batch] == ["big", "small", "big", "small"]
    assert _next_batch(deque([big]), max_tokens=1) == [(big, [1] * 3)]  # one input even over the budget


async def test_a_small_request_does_not_wait_for_a_big_one(bert_dir):
    embedder = await AsyncEmbedder.start(EmbeddingConfig(model=bert_dir, max_batch_tokens=16), in_process=True)
    try:
        ids = embedder.tokenize(["hello world"])[0]
        big = asyncio.ensure_future(embedder.embed("big", [ids] * 400))
        await asyncio.sleep(0)
        small = await embedder.embed("small", [ids])
        assert small.shape == (1, 32) and not big.done()
        assert (await big).shape == (400, 32)
    finally:
        await embedder.shutdown()
