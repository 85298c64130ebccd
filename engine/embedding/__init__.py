"""Sentence embeddings: a BERT-family encoder with its model's pooling, batched in its own process."""

from engine.embedding.client import AsyncEmbedder, EncoderDeadError
from engine.embedding.config import EmbeddingConfig
from engine.embedding.embedder import Embedder
from engine.embedding.locate import DEFAULT_EMBEDDING_NAME, default_embedding_installed

__all__ = ["AsyncEmbedder", "DEFAULT_EMBEDDING_NAME", "Embedder", "EmbeddingConfig", "EncoderDeadError",
           "default_embedding_installed"]
