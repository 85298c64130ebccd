"""Load-time substitution of a Hugging Face model's RMSNorm modules by one fused torch call, proven equal first.

Why: transformers writes RMSNorm as five or six tensor ops (to float32, pow, mean, add,
rsqrt, mul, cast back, mul by the weight), each a separate dispatch; a model has two per
layer. `torch.rms_norm` does the same arithmetic in one call. We do not read the model's
code to decide: any module that looks like a norm (one 1-D `weight`, an epsilon, nothing
else) is tried against each known formula on random inputs, and replaced only by a formula
that reproduces its output bit for bit, else left alone. This covers the `weight * x`
form (Llama, Qwen, Mistral, Phi-3) and the `(1 + weight) * x` form (Gemma).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from compute_kernels import rms_norm

_EPS_NAMES = ("variance_epsilon", "eps", "epsilon")
CHECK_ROWS = (1, 5, 64)


class ScaledRMSNorm(nn.Module):
    """weight * normalize(x): normalised in float32, cast back to x's dtype, then scaled."""

    def __init__(self, weight: nn.Parameter, eps: float) -> None:
        super().__init__()
        self.weight = weight
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


class OffsetRMSNorm(nn.Module):
    """(1 + weight) * normalize(x), all in float32, cast back to x's dtype (Gemma's form)."""

    def __init__(self, weight: nn.Parameter, eps: float) -> None:
        super().__init__()
        self.weight = weight
        self.eps = eps
        self.register_buffer("scale", 1.0 + weight.detach().float(), persistent=False)  # [hidden]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x.float(), self.scale.shape, self.scale, self.eps).to(x.dtype)


FORMULAS = (ScaledRMSNorm, OffsetRMSNorm)


def norm_epsilon(module: nn.Module) -> float | None:
    """The epsilon of a module shaped like an RMSNorm (one 1-D weight, nothing else), or None."""
    params = dict(module.named_parameters(recurse=False))
    if list(params) != ["weight"] or params["weight"].dim() != 1 or list(module.children()):
        return None
    if list(module.buffers(recurse=False)):
        return None
    for name in _EPS_NAMES:
        eps = getattr(module, name, None)
        if isinstance(eps, float):
            return eps
    return None


def equivalent_norm(module: nn.Module) -> nn.Module | None:
    """A fused module that gives `module`'s output bit for bit on random inputs, or None."""
    eps = norm_epsilon(module)
    if eps is None:
        return None
    weight = module.weight
    gen = torch.Generator(device=weight.device).manual_seed(0)
    inputs = []
    for rows in CHECK_ROWS:  # rows of very different magnitudes, so a different epsilon shows
        scale = 10.0 ** torch.empty(1, rows, 1, device=weight.device).uniform_(-3, 1, generator=gen)
        inputs.append((torch.randn(1, rows, weight.shape[0], generator=gen, device=weight.device) * scale).to(weight.dtype))
    with torch.inference_mode():
        for formula in FORMULAS:
            candidate = formula(weight, eps)
            try:
                if all(_identical(module(x), candidate(x)) for x in inputs):
                    return candidate
            except (RuntimeError, TypeError):
                continue
    return None


def _identical(want: torch.Tensor, got: torch.Tensor) -> bool:
    return isinstance(want, torch.Tensor) and want.dtype == got.dtype and torch.equal(want, got)


def substitute_norms(model: nn.Module) -> int:
    """Replaces every norm module that has a proven-equal fused formula; returns how many."""
    replacements: dict[int, nn.Module | None] = {}
    count = 0
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if child is None or isinstance(child, FORMULAS):
                continue
            if id(child) not in replacements:
                replacements[id(child)] = equivalent_norm(child)
            if replacements[id(child)] is not None:
                parent._modules[name] = replacements[id(child)]
                count += 1
    return count
