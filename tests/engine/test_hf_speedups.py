"""Load-time speed-ups of the transformers backend: sibling projections fused, RMSNorms substituted.

Both change nothing a model computes: greedy ids still equal transformers' own `generate`,
and a group or norm whose check fails is left exactly as it was.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from engine import LLM, SamplingParams
from engine.models import hf_fusion
from engine.models.hf_fusion import FusedLinear, LinearSlice, fuse_sibling_linears
from engine.models.hf_norms import OffsetRMSNorm, ScaledRMSNorm, equivalent_norm, substitute_norms
from tests.engine.test_generate import prompts_of_lengths
from tests.engine.test_transformers_backend import hf_generate


def modules_of(llm: LLM, kind: type) -> list[nn.Module]:
    return [m for m in llm.core.runner.model.modules() if isinstance(m, kind)]


@pytest.mark.parametrize(("arch", "norm"), [("llama", ScaledRMSNorm), ("qwen3", ScaledRMSNorm), ("gemma3", OffsetRMSNorm)])
def test_greedy_ids_equal_transformers_with_the_speedups_on(tiny_model_factory, arch, norm):
    folder = tiny_model_factory(arch)
    llm = LLM(folder, model_impl="transformers", max_model_len=96, num_kv_blocks=32, block_size=8)
    slices = modules_of(llm, LinearSlice)
    assert len(slices) == 5 * 2  # q, k, v, gate, up in each of the two layers
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
