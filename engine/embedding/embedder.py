"""The offline embedding API: texts or token ids in, vectors out, in this process (like sentence-transformers' encode)."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.embedding.config import EmbeddingConfig
from engine.embedding.inputs import validate_inputs
from engine.embedding.runner import EmbeddingRunner
from engine.tokenizer import load_tokenizer


class Embedder:
    """Loads the encoder once; `embed` runs inputs in batches of at most max_batch_tokens tokens.

    `Embedder()` serves the packaged all-MiniLM-L6-v2; keyword options are EmbeddingConfig's.
    """

    def __init__(self, model: str | None = None, **options: Any) -> None:
        self.runner = EmbeddingRunner(EmbeddingConfig(model=model, **options))
        self.info = self.runner.info
        self.tokenizer = load_tokenizer(self.info.path)

    def embed(self, inputs: list[str] | list[list[int]]) -> np.ndarray:
        """[num_inputs, dimensions] float32. Texts longer than the model's max_seq_len are cut
        (as sentence-transformers does); token-id inputs must fit."""
        if inputs and isinstance(inputs[0], str):
            inputs = self.tokenizer(list(inputs), truncation=True, max_length=self.info.max_seq_len,
                                    return_attention_mask=False, return_token_type_ids=False)["input_ids"]  # fmt: skip
        validate_inputs(inputs, self.info)
        order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))  # similar lengths share a batch
        vectors = np.empty((len(inputs), self.info.dimensions), dtype=np.float32)
        done = 0
        for batch in self.runner.batches([inputs[i] for i in order]):
            vectors[order[done:done + len(batch)]] = self.runner.run(batch)
            done += len(batch)
        return vectors
