"""Builds the model on the target device: native from safetensors read by name, or through transformers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.runner.greedy_head import GreedyHead
from engine.models import NATIVE_ARCHITECTURES, build_model, native_args
from compute_kernels import cpu_kernels_available


def iter_safetensors(folder: Path) -> Iterator[tuple[str, torch.Tensor]]:
    from safetensors import SafetensorError, safe_open

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ValueError(f"model: no .safetensors files in {folder}")
    for file in files:
        try:
            with safe_open(str(file), framework="pt") as f:
                for name in f.keys():
                    yield name, f.get_tensor(name)
        except (SafetensorError, OSError) as exc:
            raise ValueError(f"model: corrupt weights file {file.name} ({exc})") from None


def load_native_model(folder: Path, config: dict, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    """Builds the model for `config` and fills it from the folder's safetensors."""
    with torch.device("meta"):
        build_model(config)  # fail fast on an unsupported architecture, before allocating
    with torch.device(device):
        model = build_model(config)
    model.load_weights(iter_safetensors(folder))
    return model.to(dtype=dtype).eval()


def choose_impl(config: dict, model_impl: str) -> str:
    """"native" or "transformers" for `model_impl` "auto": native where we implement the architecture.

    A sliding window shorter than the context (Mistral v0.1, Qwen2 with use_sliding_window)
    goes to the transformers backend: the native models attend over the whole context.
    """
    if model_impl != "auto":
        return model_impl
    native = any(arch in NATIVE_ARCHITECTURES for arch in config.get("architectures") or [])
    window = config.get("sliding_window") if config.get("use_sliding_window", True) else None
    if window and window < config.get("max_position_embeddings", 4096):
        return "transformers"
    return "native" if native else "transformers"


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """The model the runner calls, and what was chosen to build it (for the startup line)."""

    model: object
    impl: str  # "native (fused CPU kernels)", "native", "transformers"
    use_cpu_kernels: bool  # the step's attention runs the CPU kernels
    note: str = ""


def load_fused_model(folder: Path, config: dict, quantization: str, cache_dir: Path | None,
                     cache_min_bytes: int = 64 << 20, activations: str = "auto"):  # fmt: skip
    """The native model as one fused CPU stack; its packed weights come from the disk cache
    when a previous start left them there (no float model built then). Models whose weight
    files are under `cache_min_bytes` pack in well under a second and are not cached."""
    from engine.loader import packed_cache
    from engine.models.llama_fused import FusedLlama, pack_native

    args = native_args(config)
    size = sum(f.stat().st_size for f in Path(folder).glob("*.safetensors"))
    use_cache = cache_dir is not None and size >= cache_min_bytes
    path = packed_cache.cache_path(cache_dir, folder, quantization) if use_cache else None
    loaded = packed_cache.load(path) if path is not None else None
    if loaded is None:
        native = load_native_model(folder, config, torch.device("cpu"), torch.float32)
        loaded = pack_native(native, quantization)
        del native
        if path is not None:
            packed_cache.save(path, *loaded)
    return FusedLlama(args, *loaded, activations=activations)


def load_model(folder: Path, config: dict, device: torch.device, dtype: torch.dtype, model_impl: str = "auto",
               quantization: str = "auto", cpu_kernels: bool = True, cache_dir: Path | None = None,
               activations: str = "auto") -> LoadedModel:  # fmt: skip
    """The model for the runner, built by the implementation `model_impl` selects.

    On a CPU with the C kernels, a native model runs as one fused decoder stack with its
    linears packed per `quantization` (their activations as `activations` says: float32, or
    fixed point for the VNNI kernel; `dtype` is the KV cache's), and any model's attention
    reads the cache through the C kernel.
    """
    cpu_fast = cpu_kernels and device.type == "cpu" and cpu_kernels_available()
    if choose_impl(config, model_impl) == "native":
        if cpu_fast:
            fused = load_fused_model(folder, config, quantization, cache_dir, activations=activations)
            note = f"weights: {fused.report.summary()}; activations: {fused.activations_summary}"
            if GreedyHead.supports(fused.lm_head):
                note += "; greedy tokens: 8-bit lm_head, exact candidates"
            return LoadedModel(fused, "native, fused CPU kernels", True, note)
        return LoadedModel(load_native_model(folder, config, device, dtype), "native", False)
    from engine.models.transformers_backend import load_transformers_model

    return LoadedModel(load_transformers_model(folder, device, dtype), "transformers", cpu_fast)
