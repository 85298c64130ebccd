"""Resolves the `model` argument (None, a HF folder, a GGUF file) to the files of a HF folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from engine.loader.default_model import DEFAULT_MODEL_NAME, default_model_path
from engine.loader.gguf_convert import convert_gguf


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """A loadable model: its folder, its config, the name it is served under, and its EOS token ids."""

    name: str
    folder: Path
    config: dict
    eos_token_ids: list[int]


def _eos_token_ids(folder: Path, config: dict) -> list[int]:
    """EOS ids from config.json and generation_config.json (either may hold one id or a list)."""
    ids: list[int] = []
    sources = [config]
    gen_path = folder / "generation_config.json"
    if gen_path.is_file():
        try:
            sources.append(json.loads(gen_path.read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"model: unreadable generation_config.json in {folder} ({exc})") from None
    for source in sources:
        value = source.get("eos_token_id")
        for token_id in value if isinstance(value, list) else [value]:
            if isinstance(token_id, int) and token_id not in ids:
                ids.append(token_id)
    return ids


def resolve_model(model: str | None, cache_dir: Path) -> ModelFiles:
    """Raises ValueError naming `model` when the path is missing or not a model."""
    if model is None:
        folder = convert_gguf(default_model_path(), cache_dir)
        name = DEFAULT_MODEL_NAME
    else:
        path = Path(model).expanduser()
        if not path.exists():
            raise ValueError(f"model: no such file or folder {model!r}")
        if path.is_file() and path.suffix == ".gguf":
            folder, name = convert_gguf(path, cache_dir), path.stem
        elif path.is_dir() and (path / "config.json").is_file():
            folder, name = path, path.name
        else:
            raise ValueError(f"model: {model!r} is neither a GGUF file nor a folder with config.json")
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"model: unreadable config.json in {folder} ({exc})") from None
    return ModelFiles(name=name, folder=folder, config=config, eos_token_ids=_eos_token_ids(folder, config))
