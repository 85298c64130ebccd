"""Packed weights kept on disk, so a restart loads the kernels' form in a second instead of
rebuilding the float model and packing it again (finding exact grids reads every weight).

One safetensors file per (model files, quantization mode, packing format); PackedLinear
fields are stored as `<name>.data`, `.scales`, `.mins`, `.bias`, their kinds and shapes in
the file's metadata. A file that cannot be read is ignored and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections import Counter
from pathlib import Path

import torch

from engine.loader.quantization import PackingReport
from compute_kernels.quant import GROUP, PANEL, PackedLinear

log = logging.getLogger(__name__)
FORMAT = 1  # bump when the packed layout changes


def cache_path(cache_dir: Path, folder: Path, quantization: str) -> Path:
    """Where the packed weights of the model in `folder` live (keyed by its weight files)."""
    h = hashlib.sha256(f"{FORMAT}|{PANEL}|{GROUP}|{quantization}|{Path(folder).resolve()}".encode())
    for f in sorted(Path(folder).glob("*.safetensors")):
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return Path(cache_dir) / "packed" / f"{Path(folder).name}-{quantization}-{h.hexdigest()[:16]}.safetensors"


def save(path: Path, weights: dict, report: PackingReport) -> None:
    from safetensors.torch import save_file

    tensors, linears = {}, {}
    for name, value in weights.items():
        if isinstance(value, PackedLinear):
            linears[name] = {"kind": value.kind, "n": value.n, "k": value.k}
            for field in ("data", "scales", "mins", "bias"):
                if getattr(value, field) is not None:
                    tensors[f"{name}.{field}"] = getattr(value, field)
        else:
            tensors[name] = value
    meta = {"linears": linears, "report": {"kinds": dict(report.kinds), "nbytes": report.nbytes,
                                           "float_nbytes": report.float_nbytes, "lossy": report.lossy}}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata={"packed": json.dumps(meta)})
        os.replace(tmp, path)
    except OSError as exc:  # a full or read-only disk costs the next start its time, nothing else
        log.warning("could not save packed weights to %s: %s", path, exc)
        Path(tmp).unlink(missing_ok=True)


def load(path: Path) -> tuple[dict, PackingReport] | None:
    """The weights and report saved at `path`, or None when there is no usable file."""
    if not path.is_file():
        return None
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            meta = json.loads(f.metadata()["packed"])
            tensors = {name: f.get_tensor(name) for name in f.keys()}
    except Exception as exc:  # a truncated or foreign file: rebuild it
        log.warning("ignoring unreadable packed weights %s: %s", path, exc)
        return None
    weights: dict = {}
    for name, spec in meta["linears"].items():
        parts = {field: tensors.pop(f"{name}.{field}", None) for field in ("data", "scales", "mins", "bias")}
        weights[name] = PackedLinear(spec["kind"], spec["n"], spec["k"], **parts)
    weights.update(tensors)
    r = meta["report"]
    report = PackingReport(kinds=Counter(r["kinds"]), nbytes=r["nbytes"],
                           float_nbytes=r["float_nbytes"], lossy=r["lossy"])  # fmt: skip
    return weights, report
