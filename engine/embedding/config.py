"""Embedding configuration: one frozen dataclass, built once by the caller (CLI, offline API or a test)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.config import default_cache_dir


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    """What the encoder process needs: the model, where it runs, how large one batch may be.

    `model` is a sentence-transformers or Hugging Face BERT folder, or None for the packaged
    all-MiniLM-L6-v2. A step runs at most `max_batch_tokens` tokens (whole inputs: one longer
    input runs alone).
    """

    model: str | None = None
    device: str | None = None  # None: cuda when torch sees a GPU, else cpu
    dtype: str | None = None  # None: float32 (embeddings are compared to 1e-5)
    num_threads: int | None = None  # torch intra-op threads in the encoder process
    max_batch_tokens: int = 4096
    cache_dir: Path = field(default_factory=default_cache_dir)

    def validate(self) -> None:
        """Raises ValueError naming the first field out of range."""
        if self.max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be >= 1, got {self.max_batch_tokens}")
        if self.dtype not in (None, "float32", "bfloat16", "float16"):
            raise ValueError(f"dtype must be float32, bfloat16 or float16, got {self.dtype!r}")
        if self.num_threads is not None and self.num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {self.num_threads}")
