"""/v1/embeddings on a tiny random BERT: every input form, float and base64, dimensions, usage, model checks."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from engine.embedding import Embedder


@pytest.fixture
async def emb_client(make_client, tiny_bert_dir):
    return await make_client(embedding_model=tiny_bert_dir)


@pytest.fixture(scope="module")
def reference(tiny_bert_dir):
    return Embedder(tiny_bert_dir)


async def _post(client, status: int = 200, **body):
    resp = await client.post("/v1/embeddings", json=body)
    data = await resp.json()
    assert resp.status == status, data
    return data


async def test_one_string(emb_client, reference, tiny_bert_dir):
    body = await _post(emb_client, input="hello world", model="tiny-bert")
    assert body["object"] == "list" and body["model"] == "tiny-bert"
    (item,) = body["data"]
    assert item["object"] == "embedding" and item["index"] == 0
    np.testing.assert_allclose(item["embedding"], reference.embed(["hello world"])[0], atol=1e-6)
    num_tokens = len(reference.tokenizer("hello world")["input_ids"])
    assert body["usage"] == {"prompt_tokens": num_tokens, "total_tokens": num_tokens}


async def test_list_of_strings_keeps_order(emb_client, reference):
    texts = ["the quick brown fox", "hello", "serving gateway embeddings stream tokens model vector"]
    body = await _post(emb_client, input=texts)
    assert [item["index"] for item in body["data"]] == [0, 1, 2]
    got = np.array([item["embedding"] for item in body["data"]])
    np.testing.assert_allclose(got, reference.embed(texts), atol=1e-6)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


async def test_token_ids_and_lists_of_them(emb_client, reference):
    ids = reference.tokenizer("hello world")["input_ids"]
    one = await _post(emb_client, input=ids)
    many = await _post(emb_client, input=[ids, ids[:2]])
    text = await _post(emb_client, input="hello world")
    assert one["data"][0]["embedding"] == text["data"][0]["embedding"] == many["data"][0]["embedding"]
    assert len(many["data"]) == 2 and many["usage"]["prompt_tokens"] == len(ids) + 2


async def test_base64_is_little_endian_float32(emb_client):
    floats = await _post(emb_client, input=["hello", "world"])
    encoded = await _post(emb_client, input=["hello", "world"], encoding_format="base64")
    for f, b in zip(floats["data"], encoded["data"]):
        decoded = np.frombuffer(base64.b64decode(b["embedding"]), dtype="<f4")
        np.testing.assert_array_equal(decoded, np.array(f["embedding"], dtype=np.float32))


async def test_dimensions(emb_client):
    assert len((await _post(emb_client, input="hello", dimensions=32))["data"][0]["embedding"]) == 32
    error = (await _post(emb_client, 400, input="hello", dimensions=8))["error"]
    assert error["param"] == "dimensions" and "cannot give 8" in error["message"]


async def test_matryoshka_dimensions_truncate_and_renormalise(make_client, tmp_path):
    from tests.helpers.tiny_bert import make_tiny_bert

    folder = make_tiny_bert(tmp_path / "mrl", matryoshka=[8, 16, 32])
    client = await make_client(embedding_model=str(folder))
    full = np.array((await _post(client, input="hello world"))["data"][0]["embedding"])
    cut = np.array((await _post(client, input="hello world", dimensions=8))["data"][0]["embedding"])
    np.testing.assert_allclose(cut, full[:8] / np.linalg.norm(full[:8]), atol=1e-6)
    assert (await _post(client, 400, input="x", dimensions=12))["error"]["param"] == "dimensions"


@pytest.mark.parametrize("bad", [
    [], "", [""], [[]], [1, "a"], [[1], "a"], [True, 2], {"a": 1}, [1.5], [[10**6]], [-1],
])  # fmt: skip
async def test_bad_inputs_are_400(emb_client, bad):
    error = (await _post(emb_client, 400, input=bad))["error"]
    assert error["param"] == "input"


async def test_too_long_input_and_truncation(emb_client, reference):
    long_text = " ".join(["hello"] * 80)  # 82 tokens; the tiny model takes 48
    error = (await _post(emb_client, 400, input=long_text))["error"]
    assert error["param"] == "input" and "at most 48" in error["message"]
    cut = await _post(emb_client, input=long_text, truncate_prompt_tokens=-1)
    assert cut["usage"]["prompt_tokens"] == 48
    np.testing.assert_allclose(cut["data"][0]["embedding"], reference.embed([long_text])[0], atol=1e-6)
    assert (await _post(emb_client, input=long_text, truncate_prompt_tokens=10))["usage"]["prompt_tokens"] == 10
    assert (await _post(emb_client, 400, input="x", truncate_prompt_tokens=49))["error"]["param"] == "truncate_prompt_tokens"


async def test_other_bad_fields(emb_client):
    assert (await _post(emb_client, 400, input="x", encoding_format="int8"))["error"]["param"] == "encoding_format"
    assert (await _post(emb_client, 404, input="x", model="nope"))["error"]["code"] == "model_not_found"
    assert (await _post(emb_client, 400, input="x", model="fake-model"))["error"]["param"] == "model"
    assert (await _post(emb_client, 400, input=["x"] * 2049))["error"]["param"] == "input"
    assert (await _post(emb_client, 400, dimensions=3))["error"]["code"] == "invalid_type"  # no input


async def test_many_concurrent_requests_batch_together(emb_client, reference):
    import asyncio

    texts = [f"hello {w}" for w in ("world", "fox", "dog", "model", "text", "search")] * 4
    bodies = await asyncio.gather(*(_post(emb_client, input=[t]) for t in texts))
    got = np.array([b["data"][0]["embedding"] for b in bodies])
    np.testing.assert_allclose(got, reference.embed(texts), atol=1e-6)


async def test_models_list_both_and_routes_tell_them_apart(emb_client):
    ids = [card["id"] for card in (await (await emb_client.get("/v1/models")).json())["data"]]
    assert ids == ["fake-model", "tiny-bert"]
    card = await (await emb_client.get("/v1/models/tiny-bert")).json()
    assert card["id"] == "tiny-bert" and card["max_model_len"] == 48
    resp = await emb_client.post("/v1/chat/completions", json={"model": "tiny-bert", "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status == 400 and (await resp.json())["error"]["param"] == "model"
    health = await (await emb_client.get("/health")).json()
    assert health["embedding"] == "ok"


async def test_without_an_embedding_model_it_is_404(client):
    error = (await _post(client, 404, input="x"))["error"]
    assert error["code"] == "model_not_found"
    assert [c["id"] for c in (await (await client.get("/v1/models")).json())["data"]] == ["fake-model"]
    assert "embedding" not in await (await client.get("/health")).json()
