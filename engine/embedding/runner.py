"""The loaded encoder with its pooling: token-id inputs in, one float32 vector per input out."""

from __future__ import annotations

import numpy as np
import torch

from engine.embedding.bert import BertEncoder
from engine.embedding.config import EmbeddingConfig
from engine.embedding.locate import resolve_embedding_model
from engine.embedding.pooling import normalize, pool
from engine.embedding.spec import read_spec
from engine.loader.weights import iter_safetensors
from schemas.embedding import EmbeddingModelInfo

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class EmbeddingRunner:
    """Built once per encoder process (or by the offline `Embedder`); `run` is called once per batch."""

    def __init__(self, config: EmbeddingConfig) -> None:
        config.validate()
        files = resolve_embedding_model(config.model, config.cache_dir)
        spec = read_spec(files.folder)
        self.device = torch.device(config.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = _DTYPES[config.dtype or "float32"]
        if config.num_threads:
            torch.set_num_threads(config.num_threads)
        self.model = BertEncoder.from_weights(spec.config, iter_safetensors(files.folder), self.device, dtype)
        self.pooling, self.normalize = spec.pooling, spec.normalize
        self.max_batch_tokens = config.max_batch_tokens
        dims = list(spec.matryoshka_dimensions) if spec.matryoshka_dimensions else None
        self.info = EmbeddingModelInfo(name=files.name, path=str(files.folder), dimensions=self.model.hidden_size,
                                       max_seq_len=spec.max_seq_len, vocab_size=self.model.vocab_size,
                                       pooling=spec.pooling, normalize=spec.normalize, matryoshka_dimensions=dims)  # fmt: skip

    @torch.inference_mode()
    def run(self, inputs: list[list[int]]) -> np.ndarray:
        """inputs: validated token-id lists; returns [num_inputs, dimensions] float32 (one forward pass)."""
        seq_lens = [len(ids) for ids in inputs]
        input_ids = torch.tensor([t for ids in inputs for t in ids], device=self.device)  # [num_tokens]
        positions = torch.cat([torch.arange(n) for n in seq_lens]).to(self.device)  # [num_tokens]
        states = self.model.forward(input_ids, positions, seq_lens)  # [num_tokens, hidden]
        vectors = pool(states.float(), seq_lens, self.pooling)  # [num_inputs, hidden]
        if self.normalize:
            vectors = normalize(vectors)
        return vectors.cpu().numpy()

    def batches(self, inputs: list[list[int]]) -> list[list[list[int]]]:
        """Splits inputs into runs of at most max_batch_tokens tokens (an input longer than that runs alone)."""
        out: list[list[list[int]]] = []
        budget = 0
        for ids in inputs:
            if not out or budget + len(ids) > self.max_batch_tokens:
                out.append([])
                budget = 0
            out[-1].append(ids)
            budget += len(ids)
        return out
