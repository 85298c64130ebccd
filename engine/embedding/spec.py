"""What a model folder says about its embeddings: pooling, normalisation, length and Matryoshka sizes.

Sentence-transformers folders say it in modules.json, the pooling module's config.json and
sentence_bert_config.json; a plain Hugging Face BERT folder gets CLS pooling and
normalisation (vLLM's default for BERT embedding models).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len", "lasttoken")
_ST = "sentence_transformers.models."
_KNOWN_MODULES = {_ST + "Transformer", _ST + "Pooling", _ST + "Normalize"}


@dataclass(frozen=True, slots=True)
class EncoderSpec:
    """The encoder's config.json plus how its token states become one vector."""

    config: dict[str, Any]
    pooling: str
    normalize: bool
    max_seq_len: int
    matryoshka_dimensions: tuple[int, ...] | None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"embedding_model: unreadable {path.name} in {path.parent} ({exc})") from None


def _pooling_mode(config: dict[str, Any]) -> str:
    """The one pooling mode a sentence-transformers Pooling config turns on."""
    if isinstance(config.get("pooling_mode"), str):  # newer sentence-transformers spell it out
        modes = [config["pooling_mode"].replace("_tokens", "").replace("_token", "")]
    else:
        modes = [key[len("pooling_mode_"):].removesuffix("_tokens").removesuffix("_token")
                 for key, on in config.items() if key.startswith("pooling_mode_") and on is True]  # fmt: skip
    if len(modes) != 1 or modes[0] not in POOLING_MODES:
        raise ValueError(f"embedding_model: pooling {modes} is not supported (exactly one of {', '.join(POOLING_MODES)})")
    return modes[0]


def _sentence_transformers(folder: Path) -> tuple[str, bool, int | None]:
    modules = _read_json(folder / "modules.json")
    pooling, normalize = None, False
    for module in modules:
        kind = module.get("type", "")
        if kind not in _KNOWN_MODULES:
            raise ValueError(f"embedding_model: the sentence-transformers module {kind} is not supported")
        if kind.endswith("Pooling"):
            pooling = _pooling_mode(_read_json(folder / module.get("path", "") / "config.json"))
        normalize |= kind.endswith("Normalize")
    if pooling is None:
        raise ValueError(f"embedding_model: {folder} has no Pooling module")
    bert_config = folder / "sentence_bert_config.json"
    max_len = _read_json(bert_config).get("max_seq_length") if bert_config.is_file() else None
    return pooling, normalize, max_len


def read_spec(folder: Path) -> EncoderSpec:
    """Raises ValueError naming `embedding_model` for an unreadable or unsupported folder."""
    config = _read_json(folder / "config.json")
    if config.get("model_type") != "bert":
        raise ValueError(f"embedding_model: model_type {config.get('model_type')!r} is not supported (bert only)")
    if (folder / "modules.json").is_file():
        pooling, normalize, max_len = _sentence_transformers(folder)
    else:
        pooling, normalize, max_len = "cls", True, None
    positions = int(config.get("max_position_embeddings", 512))
    dims = config.get("matryoshka_dimensions")
    if config.get("is_matryoshka") and not dims:
        dims = list(range(1, int(config["hidden_size"]) + 1))
    return EncoderSpec(config=config, pooling=pooling, normalize=normalize,
                       max_seq_len=min(int(max_len or positions), positions),
                       matryoshka_dimensions=tuple(int(d) for d in dims) if dims else None)
