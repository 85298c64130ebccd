"""The fused CPU decoder stack (engine/models/llama_fused.py) against the native torch model."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine import LLM, SamplingParams, hardware
from engine.loader.weights import load_native_model
from engine.models.llama_fused import FusedLlama, pack_native
from compute_kernels.attention import build_attention_metadata
from compute_kernels.cpu.ops import load_ops, vnni_available
from compute_kernels.quant import quantize, reconstruct

pytestmark = pytest.mark.skipif(load_ops() is None, reason="no C compiler: the CPU kernels cannot be built here")


def _on_int4_grid(src: str, dst: Path) -> Path:
    """A copy of a model folder whose linear weights lie on a 4-bit grid, as a GGUF's would."""
    dst.mkdir()
    for f in Path(src).iterdir():
        if f.suffix != ".safetensors":
            (dst / f.name).write_bytes(f.read_bytes())
    state = load_file(str(Path(src) / "model.safetensors"))
    for name, w in state.items():
        if w.dim() == 2 and "embed" not in name and "norm" not in name:
            state[name] = reconstruct(*quantize(w, 4)).contiguous()
    save_file(state, str(dst / "model.safetensors"), metadata={"format": "pt"})
    return dst


def _steps(native, fused, block_size: int = 4):
    """Runs the same three steps (prefill of two requests, a mixed step, a decode) through both."""
    rng = random.Random(0)
    num_layers, kv_heads, head_dim = native.kv_shape
    caches = [[(torch.zeros(64 * block_size, kv_heads, head_dim), torch.zeros(64 * block_size, kv_heads, head_dim))
               for _ in range(num_layers)] for _ in range(2)]  # fmt: skip
    table = torch.tensor([[3, 9, 12, 0, 0, 0, 0], [5, 1, 7, 8, 0, 0, 0]])
    for query_lens, seq_lens in (([11, 7], [11, 7]), ([1, 5], [12, 12]), ([1, 1], [13, 13])):
        slots, positions = [], []
        for r, (q, s) in enumerate(zip(query_lens, seq_lens)):
            positions += list(range(s - q, s))
            slots += [int(table[r, p // block_size]) * block_size + p % block_size for p in range(s - q, s)]
        ids = torch.tensor([rng.randrange(200) for _ in positions])
        meta = build_attention_metadata(query_lens, seq_lens, table, torch.tensor(slots), block_size, True)
        with torch.inference_mode():
            a = native(ids, torch.tensor(positions), caches[0], meta)
            b = fused(ids, torch.tensor(positions), caches[1], meta)
            yield a, b, native.compute_logits(a), fused.compute_logits(b)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_fused_float32_matches_native(tiny_model_factory, arch):
    folder = Path(tiny_model_factory(arch))
    config = json.loads((folder / "config.json").read_text())
    native = load_native_model(folder, config, torch.device("cpu"), torch.float32)
    fused = FusedLlama(native.args, *pack_native(native, "auto"))
    assert set(fused.report.kinds) == {"float32"}  # random weights lie on no grid: nothing is rounded
    for a, b, la, lb in _steps(native, fused):
        assert (a - b).abs().max() < 1e-4
        assert torch.equal(la.argmax(-1), lb.argmax(-1))


def test_fused_int4_grid_is_exact(tiny_model_factory, tmp_path):
    folder = _on_int4_grid(tiny_model_factory("llama"), tmp_path / "grid")
    config = json.loads((folder / "config.json").read_text())
    native = load_native_model(folder, config, torch.device("cpu"), torch.float32)
    fused = FusedLlama(native.args, *pack_native(native, "auto"), activations="float32")
    assert fused.report.kinds["int4"] == 4 * config["num_hidden_layers"] and fused.report.lossy == 0
    for a, b, la, lb in _steps(native, fused):
        assert (la - lb).abs().max() < 1e-4 * la.abs().max()


@pytest.mark.skipif(not vnni_available(), reason="the fixed-point linear needs AVX512-VNNI")
@pytest.mark.parametrize("activations, bound", [("fixed24", 1e-4), ("fixed16", 1e-3), ("int8", 5e-2)])
def test_fused_fixed_point_activations_stay_close(tiny_model_factory, tmp_path, activations, bound):
    """The VNNI linear's activations in fixed point: fixed24 (the default on VNNI) as close to the
    float logits as float32 is, fixed16 within 1e-3, both with the same greedy tokens; int8
    (llama.cpp's scheme) looser."""
    folder = _on_int4_grid(tiny_model_factory("llama"), tmp_path / "grid")
    config = json.loads((folder / "config.json").read_text())
    native = load_native_model(folder, config, torch.device("cpu"), torch.float32)
    fused = FusedLlama(native.args, *pack_native(native, "auto"), activations=activations)
    assert fused.activations == activations and fused.weights["layers.0.qkv"].vnni is not None
    for a, b, la, lb in _steps(native, fused):
        assert (la - lb).abs().max() < bound * la.abs().max()
        if activations != "int8":
            assert torch.equal(la.argmax(-1), lb.argmax(-1))


def test_forced_int8_rounds_and_says_so(tiny_model_factory):
    folder = Path(tiny_model_factory("llama"))
    native = load_native_model(folder, json.loads((folder / "config.json").read_text()), torch.device("cpu"), torch.float32)
    fused = FusedLlama(native.args, *pack_native(native, "int8"))
    assert set(fused.report.kinds) == {"int8"} and fused.report.lossy == fused.args.num_layers * 4 + 1
    assert "rounded" in fused.report.summary()


def test_greedy_generation_matches_the_torch_path(tiny_model_factory):
    prompts = [[5, 17, 42, 9, 100, 3], list(range(30, 70)), [7]]
    params = SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True)
    outs = {}
    for kernels_on in (True, False):
        llm = LLM(tiny_model_factory("llama"), max_model_len=256, num_kv_blocks=64, block_size=4, cpu_kernels=kernels_on,
                  dtype="float32", kv_cache_dtype="float32")
        assert ("fused" in llm.info.summary) == kernels_on
        outs[kernels_on] = [o.token_ids for o in llm.generate(prompts, params)]
    assert outs[True] == outs[False]


def test_packed_weights_reload_from_disk(tiny_model_factory, tmp_path):
    from engine.loader import packed_cache
    from engine.loader.weights import load_fused_model

    folder = Path(tiny_model_factory("qwen3"))
    config = json.loads((folder / "config.json").read_text())
    assert not load_fused_model(folder, config, "int4", tmp_path).weights is None
    assert not packed_cache.cache_path(tmp_path, folder, "int4").exists()  # too small to be worth a file
    first = load_fused_model(folder, config, "int4", tmp_path, cache_min_bytes=0)
    saved = packed_cache.cache_path(tmp_path, folder, "int4")
    assert saved.is_file()
    second = load_fused_model(folder, config, "int4", tmp_path, cache_min_bytes=0)  # from the file
    assert second.report.summary() == first.report.summary()
    for name, value in first.weights.items():
        other = second.weights[name]
        pairs = [(getattr(value, f), getattr(other, f)) for f in ("data", "scales", "mins", "bias")] if hasattr(value, "kind") else [(value, other)]
        assert all((a is None and b is None) or torch.equal(a, b) for a, b in pairs), name
    saved.write_bytes(b"not a safetensors file")
    assert packed_cache.load(saved) is None  # a broken file is rebuilt, not fatal
    assert load_fused_model(folder, config, "int4", tmp_path, cache_min_bytes=0).report.summary() == first.report.summary()


def test_kv_cache_dtype_defaults(tiny_model_factory):
    """float16 on the CPU kernels for a float32 model; the torch path keeps the model's dtype; the
    model's dtype itself is bfloat16 on a CPU with BF16 units, else float32 (engine/hardware.py)."""
    model_dtype = torch.bfloat16 if hardware.has_bf16_units() else torch.float32
    auto = LLM(tiny_model_factory("llama"), max_model_len=64, num_kv_blocks=8)
    assert auto.core.runner.kv_caches[0][0].dtype == (torch.float16 if model_dtype == torch.float32 else model_dtype)
    fast = LLM(tiny_model_factory("llama"), max_model_len=64, num_kv_blocks=8, dtype="float32")
    assert fast.core.runner.kv_caches[0][0].dtype == torch.float16 and "(float16)" in fast.info.summary
    torch_path = LLM(tiny_model_factory("llama"), max_model_len=64, num_kv_blocks=8, cpu_kernels=False,
                     kv_cache_dtype="float16")  # fmt: skip
    assert torch_path.core.runner.kv_caches[0][0].dtype == model_dtype
    chosen = LLM(tiny_model_factory("llama"), max_model_len=64, num_kv_blocks=8, kv_cache_dtype="bfloat16")
    assert chosen.core.runner.kv_caches[0][0].dtype == torch.bfloat16
    out = chosen.generate([[5, 6, 7]], SamplingParams(max_tokens=4, temperature=0.0, ignore_eos=True))[0]
    assert len(out.token_ids) == 4
