"""Builds tiny random-weight BERT embedding folders (sentence-transformers layout) for tests."""

from __future__ import annotations

import json
from pathlib import Path

WORDS = ("the quick brown fox jumps over lazy dog hello world serving gateway embeddings stream tokens "
         "model vector search text short long cafe ##s ##ing ##ed a b c").split()


def make_tiny_bert(path: Path, *, pooling: str = "mean", normalize: bool = True, sentence_transformers: bool = True,
                   max_seq_length: int = 48, matryoshka: list[int] | None = None, seed: int = 0) -> Path:
    """A BertModel with hidden size 32, 2 layers, 4 heads and a WordPiece vocabulary of ~40 tokens."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt"), do_lower_case=True).save_pretrained(str(path))
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, type_vocab_size=2)  # fmt: skip
    torch.manual_seed(seed)
    model = BertModel(config, add_pooling_layer=False).eval()
    model.save_pretrained(str(path), safe_serialization=True)
    if matryoshka:
        data = json.loads((path / "config.json").read_text())
        (path / "config.json").write_text(json.dumps({**data, "matryoshka_dimensions": matryoshka}))
    if sentence_transformers:
        _sentence_transformers_files(path, pooling, normalize, max_seq_length)
    return path


def _sentence_transformers_files(path: Path, pooling: str, normalize: bool, max_seq_length: int) -> None:
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (path / "modules.json").write_text(json.dumps(modules))
    (path / "1_Pooling").mkdir(exist_ok=True)
    modes = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "lasttoken")
    wanted = {"mean": "mean_tokens", "cls": "cls_token", "max": "max_tokens",
              "mean_sqrt_len": "mean_sqrt_len_tokens", "lasttoken": "lasttoken"}[pooling]  # fmt: skip
    pool_config = {"word_embedding_dimension": 32, **{f"pooling_mode_{m}": m == wanted for m in modes}}
    (path / "1_Pooling" / "config.json").write_text(json.dumps(pool_config))
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}))
