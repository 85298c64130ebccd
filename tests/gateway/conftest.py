"""Fixtures for gateway tests: the tiny tokenizer, a fake engine pool, a tiny BERT encoder and an in-process test client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import create_app
from gateway.engine_pool import EnginePool, PoolLimits
from gateway.state import GatewaySettings
from tests.gateway.fake_engine import FakeLLM
from tests.helpers.tiny_bert import make_tiny_bert
from tests.helpers.tiny_model import make_tiny_model


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    path = make_tiny_model(tmp_path_factory.mktemp("tiny-llama"), "llama")
    return AutoTokenizer.from_pretrained(str(path))


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> str:
    return str(make_tiny_bert(tmp_path_factory.mktemp("tiny-bert") / "tiny-bert"))


@pytest.fixture
async def make_client(tokenizer) -> AsyncIterator[Callable]:
    """make_client(settings=..., engines=[...], max_queued=..., embedding_model=folder) -> a started TestClient.

    With `embedding_model`, a real encoder on that folder runs on a thread (engine.embedding)."""
    clients: list[TestClient] = []

    async def make(settings: GatewaySettings | None = None, engines: list | None = None,
                   max_queued: int = 256, restart: bool = True, embedding_model: str | None = None,
                   pool_limits: PoolLimits | None = None, **fake_kwargs) -> TestClient:
        fakes = engines or [FakeLLM(tokenizer, **fake_kwargs)]

        async def factory(index: int) -> FakeLLM:
            fresh = FakeLLM(tokenizer, **fake_kwargs)
            fakes.append(fresh)
            return fresh

        async def start_pool() -> EnginePool:
            return EnginePool(list(fakes), factory if restart else None, max_queued=max_queued, limits=pool_limits)

        start_embedder = None
        if embedding_model is not None:
            from engine.embedding import AsyncEmbedder, EmbeddingConfig

            async def start_embedder():
                return await AsyncEmbedder.start(EmbeddingConfig(model=embedding_model, max_batch_tokens=64),
                                                 in_process=True)  # fmt: skip

        app = create_app(settings or GatewaySettings(), start_pool, start_embedder=start_embedder)
        client = TestClient(TestServer(app))
        await client.start_server()
        client.fakes = fakes  # type: ignore[attr-defined]
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


@pytest.fixture
async def client(make_client) -> TestClient:
    return await make_client()
