"""Load-time speed-ups of the transformers backend: projections fused, norms, MLPs, attentions and layers substituted.

None changes what a model computes: greedy ids still equal transformers' own `generate`,
a paged step gives bit-equal hidden states and cache writes with and without the module
substitutions, and a group, norm or module whose check fails is left exactly as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from engine import LLM, SamplingParams
from engine.models import hf_fusion, hf_substitution
from engine.models.hf_fusion import FusedLinear, LinearSlice, fuse_sibling_linears
from engine.models.hf_layers import GatedMLP, PagedSelfAttention, PreNormDecoderLayer
from engine.models.hf_norms import OffsetRMSNorm, ScaledRMSNorm, equivalent_norm, substitute_norms
from tests.engine.test_generate import prompts_of_lengths
from tests.engine.test_transformers_backend import hf_generate


def modules_of(llm: LLM, kind: type) -> list[nn.Module]:
    return [m for m in llm.core.runner.model.modules() if isinstance(m, kind)]


# (arch, its norm formula, substituted modules of each kind in the two layers, LinearSlices left)
SPEEDUPS = [
    ("llama", ScaledRMSNorm, {GatedMLP: 2, PagedSelfAttention: 2, PreNormDecoderLayer: 2}, 0),
    ("qwen3", ScaledRMSNorm, {GatedMLP: 2, PagedSelfAttention: 2, PreNormDecoderLayer: 2}, 0),  # with q/k norms
    ("gemma3", OffsetRMSNorm, {GatedMLP: 2, PagedSelfAttention: 0, PreNormDecoderLayer: 0}, 3 * 2),  # sliding window
]


@pytest.mark.parametrize(("arch", "norm", "substituted", "num_slices"), SPEEDUPS)
def test_greedy_ids_equal_transformers_with_the_speedups_on(tiny_model_factory, arch, norm, substituted, num_slices):
    folder = tiny_model_factory(arch)
    llm = LLM(folder, model_impl="transformers", max_model_len=96, num_kv_blocks=32, block_size=8,
              dtype="float32")  # (the reference's dtype, whatever the CPU)
    assert {kind: len(modules_of(llm, kind)) for kind in substituted} == substituted
    slices = modules_of(llm, LinearSlice)
    assert len(slices) == num_slices
    assert modules_of(llm, norm)
    prompts = prompts_of_lengths([20, 23])
    params = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)
    assert [o.token_ids for o in llm.generate(prompts, params)] == hf_generate(folder, prompts, 16)
    assert all(m.fused._product.output is None for m in slices)  # no product outlives its forward


class SharedInput(nn.Module):
    """Two projections of one input; `mutate` changes the input in place between them."""

    def __init__(self, mutate: bool) -> None:
        super().__init__()
        self.a = nn.Linear(16, 8)
        self.b = nn.Linear(16, 4)
        self.mutate = mutate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        if self.mutate:
            x.mul_(2.0)
        return torch.cat([y, self.b(x)], dim=-1)


def dry_run(model: nn.Module):
    return lambda: model(torch.linspace(-1.0, 1.0, 3 * 16).view(1, 3, 16))


def test_siblings_fuse_into_one_weight_and_give_the_same_output():
    torch.manual_seed(0)
    model = SharedInput(mutate=False)
    x = torch.randn(1, 5, 16)
    with torch.inference_mode():
        want = model(x.clone())
    assert fuse_sibling_linears(model, dry_run(model)) == 1
    assert isinstance(model.a, LinearSlice) and isinstance(model.b, LinearSlice)
    assert model.a.fused is model.b.fused and isinstance(model.a.fused, FusedLinear)
    assert model.a.fused.weight.shape == (12, 16)
    with torch.inference_mode():
        torch.testing.assert_close(model(x.clone()), want, rtol=0, atol=1e-6)


def test_a_model_that_changes_the_shared_input_in_place_is_left_unfused():
    torch.manual_seed(0)
    model = SharedInput(mutate=True)
    x = torch.randn(1, 5, 16)
    with torch.inference_mode():
        want = model(x.clone())
    assert fuse_sibling_linears(model, dry_run(model)) == 0  # the shadow run saw b's stale slice
    assert type(model.a) is nn.Linear and type(model.b) is nn.Linear
    with torch.inference_mode():
        assert torch.equal(model(x.clone()), want)


def test_a_group_that_fails_the_random_input_check_is_left_unfused(monkeypatch):
    torch.manual_seed(0)
    model = SharedInput(mutate=False)
    x = torch.randn(1, 5, 16)
    with torch.inference_mode():
        want = model(x.clone())
    monkeypatch.setattr(hf_fusion, "same_up_to_rounding", lambda want, got: False)
    assert fuse_sibling_linears(model, dry_run(model)) == 0
    assert type(model.a) is nn.Linear and type(model.b) is nn.Linear
    with torch.inference_mode():
        assert torch.equal(model(x.clone()), want)


def test_rounding_check_accepts_reduction_order_and_rejects_real_differences():
    want = torch.randn(4, 64)
    assert hf_fusion.same_up_to_rounding(want, want * (1 + 1e-7))
    assert not hf_fusion.same_up_to_rounding(want, want * 1.01)
    assert not hf_fusion.same_up_to_rounding(want, want[:, :32])


class LlamaStyleNorm(nn.Module):
    def __init__(self, size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(x.dtype)


class HiddenEpsNorm(LlamaStyleNorm):
    """Looks like an RMSNorm but adds another epsilon than it declares: must be left alone."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-2)
        return self.weight * h


class CenteredNorm(LlamaStyleNorm):
    """A bias-free LayerNorm: subtracts the mean, so no RMSNorm formula matches."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.layer_norm(x, self.weight.shape, self.weight, None, self.variance_epsilon)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_an_rmsnorm_is_replaced_by_a_bit_equal_fused_call(dtype):
    torch.manual_seed(0)
    norm = LlamaStyleNorm(48).to(dtype)
    fused = equivalent_norm(norm)
    assert isinstance(fused, ScaledRMSNorm) and fused.weight is norm.weight
    x = torch.randn(2, 7, 48).to(dtype)
    with torch.inference_mode():
        assert torch.equal(fused(x), norm(x))


@pytest.mark.parametrize("impostor", [HiddenEpsNorm, CenteredNorm])
def test_a_norm_no_formula_reproduces_is_left_alone(impostor):
    torch.manual_seed(0)
    model = nn.Sequential(impostor(48), nn.Linear(48, 48))
    assert equivalent_norm(model[0]) is None
    assert substitute_norms(model) == 0 and type(model[0]) is impostor


def test_gemma_offset_norm_is_matched_exactly(tiny_model_factory):
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(tiny_model_factory("gemma3"), dtype=torch.float32)
    norm = hf.model.layers[0].input_layernorm
    with torch.no_grad():
        norm.weight.normal_()  # Gemma stores weight - 1; the saved random model has zeros
    fused = equivalent_norm(norm)
    assert isinstance(fused, OffsetRMSNorm)
    x = torch.randn(1, 9, norm.weight.shape[0])
    with torch.inference_mode():
        assert torch.equal(fused(x), norm(x))


def load_tiny(folder: str, monkeypatch=None, substitute: bool = True):
    """The transformers backend's model for `folder`; `substitute=False` keeps fusion and norms but no module swaps."""
    from engine.models.transformers_backend import load_transformers_model

    if not substitute:
        monkeypatch.setattr(hf_substitution, "substitute_layers", lambda *args: [])
    model = load_transformers_model(Path(folder), torch.device("cpu"), torch.float32)
    monkeypatch.undo() if monkeypatch is not None else None
    return model


def mixed_step(model, seed: int = 0):
    """A step unlike the load-time check's: two prefill chunks (one after cached tokens) and two decodes."""
    from compute_kernels.attention import build_attention_metadata

    query_lens, seq_lens, block_size = [9, 1, 6, 1], [9, 17, 11, 4], 4
    block_tables = torch.arange(4 * 5).view(4, 5)
    positions = torch.cat([torch.arange(s - q, s) for q, s in zip(query_lens, seq_lens)])
    rows = torch.repeat_interleave(torch.arange(4), torch.tensor(query_lens))
    slots = block_tables[rows, positions // block_size] * block_size + positions % block_size
    meta = build_attention_metadata(query_lens, seq_lens, block_tables, slots, block_size)
    gen = torch.Generator().manual_seed(seed)
    num_layers, num_kv_heads, head_dim = model.kv_shape
    caches = [(torch.randn(80, num_kv_heads, head_dim, generator=gen), torch.randn(80, num_kv_heads, head_dim, generator=gen))
              for _ in range(num_layers)]  # fmt: skip
    input_ids = torch.randint(0, model.vocab_size, (len(positions),), generator=gen)
    with torch.inference_mode():
        hidden = model(input_ids, positions, caches, meta)
    return hidden, caches


def substitutes(model) -> list[nn.Module]:
    return [m for m in model.modules() if isinstance(m, (GatedMLP, PagedSelfAttention, PreNormDecoderLayer))]


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "mistral"])
def test_module_substitutions_give_bit_equal_hidden_states_and_cache_writes(tiny_model_factory, monkeypatch, arch):
    folder = tiny_model_factory(arch)
    plain = load_tiny(folder, monkeypatch, substitute=False)
    fast = load_tiny(folder)
    assert not substitutes(plain)
    if arch in ("llama", "qwen3"):
        assert len(substitutes(fast)) == 3 * 2
    want, want_caches = mixed_step(plain)
    got, got_caches = mixed_step(fast)
    assert torch.equal(want, got)
    assert all(torch.equal(a, b) for pa, pb in zip(want_caches, got_caches) for a, b in zip(pa, pb))


def test_substituted_modules_hand_other_calls_to_the_originals(tiny_llama_dir):
    from engine.models.transformers_backend import probe_kv_shape

    model = load_tiny(tiny_llama_dir)
    assert substitutes(model)
    # the load-time probe (a ProbeContext, SDPA without a cache) still runs through every layer
    assert probe_kv_shape(model.hf_model, 2) == model.kv_shape


def scaled_forward(module: nn.Module, factor: float):
    """Makes one module instance compute something else than its class (what a lookalike would)."""
    forward = module.forward

    def changed(*args, **kwargs):
        out = forward(*args, **kwargs)
        return (out[0] * factor, *out[1:]) if isinstance(out, tuple) else out * factor

    module.forward = changed


@pytest.mark.parametrize("target", ["mlp", "self_attn", "layer"])
def test_a_lookalike_module_the_checks_reject_is_left_alone(tiny_llama_dir, monkeypatch, target):
    from engine.models import transformers_backend as backend

    load = backend._model_class

    def model_class(config):  # layer 0's `target` computes 1.001 times its class's output
        cls = load(config)

        class Lookalike(cls):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                layer = self.model.layers[0]
                scaled_forward(layer if target == "layer" else getattr(layer, target), 1.001)

        return Lookalike

    monkeypatch.setattr(backend, "_model_class", model_class)
    model = load_tiny(tiny_llama_dir)
    layers = model.decoder.layers
    assert type(layers[1]) is PreNormDecoderLayer  # the other layer is still substituted
    inner = layers[0] if target == "layer" else getattr(layers[0], target)
    assert type(inner) not in (GatedMLP, PagedSelfAttention, PreNormDecoderLayer)
    # a layer stand-in calls its MLP's own forward, so only a rejected attention or layer keeps the layer
    assert (type(layers[0]) is PreNormDecoderLayer) == (target == "mlp")
    want, _ = mixed_step(model)
    monkeypatch.undo()
    assert not torch.equal(want, mixed_step(load_tiny(tiny_llama_dir))[0])  # the lookalike's output did change


def test_a_whole_model_mismatch_undoes_every_substitution(tiny_llama_dir, monkeypatch):
    real = hf_substitution.substitute_layers

    def substitute_then_break(model, run, checker):
        replaced = real(model, run, checker)
        next(m for m in model.modules() if isinstance(m, PagedSelfAttention)).scale *= 1.001  # unseen by the per-module checks
        return replaced

    monkeypatch.setattr(hf_substitution, "substitute_layers", substitute_then_break)
    model = load_tiny(tiny_llama_dir)
    assert not substitutes(model)
    assert len([m for m in model.modules() if isinstance(m, LinearSlice)]) == 5 * 2  # fusion itself stays


def test_a_failed_module_check_leaves_the_module_alone(tiny_llama_dir, monkeypatch):
    monkeypatch.setattr(hf_substitution.LayerChecker, "same", lambda *args: False)
    monkeypatch.setattr(hf_substitution, "mlp_matches", lambda *args: False)
    model = load_tiny(tiny_llama_dir)
    assert not substitutes(model)
