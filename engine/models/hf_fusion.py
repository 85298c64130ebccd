"""Load-time fusion of sibling nn.Linear layers (q/k/v, gate/up) of a Hugging Face model into one matmul each.

Why: transformers models project one hidden state through separate nn.Linear layers
(q_proj, k_proj, v_proj; gate_proj, up_proj). Every matmul call has a fixed dispatch cost
that, at decode sizes (a few rows), is a visible share of a step on CPU; the native models
fuse them. This does the same to a model we do not modify: a dry run records which Linear
layers receive the very same input tensor; each such group gets one concatenated weight,
and every sibling becomes a `LinearSlice` that returns its columns of the group's product,
computed once per input. A group is kept only if, on random inputs of several row counts,
every slice equals its original layer bit for bit; `fuse_sibling_linears` also takes a
whole-model check and undoes everything when that fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

# Row counts the load-time check multiplies at: a decode, a small batch, a prefill chunk.
CHECK_ROWS = (1, 3, 16, 64)


class _Product:
    """The last product of a group and which siblings took their slice of it (a bit each)."""

    __slots__ = ("weight", "bias", "input", "output", "taken")

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        self.weight, self.bias = weight, bias
        self.input: torch.Tensor | None = None
        self.output: torch.Tensor | None = None
        self.taken = 0


class FusedLinear(nn.Module):
    """The concatenated weight of a sibling group; called only through its `LinearSlice`s.

    The product for one input is kept until every sibling has taken its slice, then dropped,
    so a forward holds at most one product per group. Per-call state lives in a plain
    slotted object: nn.Module attribute writes are slow enough to show in a decode step.
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, sizes: list[int]) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)  # [sum(sizes), in_features]
        self.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)
        self.sizes = sizes
        self.offsets = [sum(sizes[:i]) for i in range(len(sizes))]
        self._product = _Product(self.weight, self.bias)
        self._all_taken = (1 << len(sizes)) - 1

    def slice_for(self, index: int, x: torch.Tensor) -> torch.Tensor:
        product, bit = self._product, 1 << index
        if x is not product.input or product.taken & bit:
            product.input, product.output, product.taken = x, F.linear(x, product.weight, product.bias), 0
        out = product.output.narrow(-1, self.offsets[index], self.sizes[index])
        product.taken |= bit
        if product.taken == self._all_taken:
            product.input = product.output = None
        return out


class LinearSlice(nn.Module):
    """Stands in for one sibling nn.Linear: its columns of the group's product.

    `weight` and `bias` stay readable (views into the fused weight, not registered again)
    for model code that inspects them, e.g. for their dtype.
    """

    def __init__(self, fused: FusedLinear, index: int, original: nn.Linear) -> None:
        super().__init__()
        self.fused = fused
        self.index = index
        self.in_features, self.out_features = original.in_features, original.out_features
        start, size = fused.offsets[index], fused.sizes[index]
        self.weight = fused.weight.detach().narrow(0, start, size)  # a plain tensor: not a second parameter
        self.bias = None if fused.bias is None else fused.bias.detach().narrow(0, start, size)
        self._slice_for = fused.slice_for  # a plain attribute: found without nn.Module.__getattr__

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._slice_for(self.index, x)


@dataclass(slots=True)
class Sibling:
    """One Linear of a group and where it hangs in the model."""

    parent: nn.Module
    name: str
    linear: nn.Linear


def find_sibling_groups(model: nn.Module, run: Callable[[], object]) -> list[list[Sibling]]:
    """Plain nn.Linear layers that `run` (a dry forward) calls once each on one shared input tensor."""
    calls: dict[int, list[tuple[str, torch.Tensor]]] = {}
    counts: dict[str, int] = {}
    linears = {name: m for name, m in model.named_modules() if type(m) is nn.Linear and not _has_hooks(m)}

    def recorder(name: str):
        def hook(module, args):
            counts[name] = counts.get(name, 0) + 1
            if args and isinstance(args[0], torch.Tensor):
                calls.setdefault(id(args[0]), []).append((name, args[0]))  # holding x keeps its id unique

        return hook

    run_hooked([m.register_forward_pre_hook(recorder(name)) for name, m in linears.items()], run)
    shared = _shared_parameter_names(model)
    groups = []
    for members in calls.values():
        names = [name for name, _ in members if counts[name] == 1 and name not in shared]
        if len(names) > 1 and _compatible([linears[n] for n in names]):
            groups.append([Sibling(model.get_submodule(n.rpartition(".")[0]), n.rpartition(".")[2], linears[n]) for n in names])
    return groups


def _has_hooks(module: nn.Module) -> bool:
    return bool(module._forward_hooks or module._forward_pre_hooks)


def _shared_parameter_names(model: nn.Module) -> set[str]:
    """Module names whose parameters are also reachable elsewhere (tied weights): left alone."""
    owners: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        owners.setdefault(id(param), []).append(name.rpartition(".")[0])
    return {owner for names in owners.values() if len(names) > 1 for owner in names}


def _compatible(linears: list[nn.Linear]) -> bool:
    first = linears[0]
    return all(
        m.in_features == first.in_features
        and m.weight.dtype == first.weight.dtype
        and m.weight.device == first.weight.device
        and (m.bias is None) == (first.bias is None)
        for m in linears
    )


def fuse_group(group: list[Sibling]) -> FusedLinear | None:
    """Swaps the siblings for slices of one fused weight if they reproduce the originals exactly, else None."""
    linears = [s.linear for s in group]
    with torch.no_grad():
        weight = torch.cat([m.weight.detach() for m in linears])
        bias = None if linears[0].bias is None else torch.cat([m.bias.detach() for m in linears])
    fused = FusedLinear(weight, bias, [m.out_features for m in linears])
    slices = [LinearSlice(fused, i, m) for i, m in enumerate(linears)]
    if not _slices_match(linears, slices):
        return None
    for sibling, linear_slice in zip(group, slices):
        sibling.parent._modules[sibling.name] = linear_slice
        # the original keeps working (for `unfuse`) on views of the fused weight, so no copy stays alive
        sibling.linear.weight = nn.Parameter(linear_slice.weight, requires_grad=False)
        if linear_slice.bias is not None:
            sibling.linear.bias = nn.Parameter(linear_slice.bias, requires_grad=False)
    return fused


def _slices_match(linears: list[nn.Linear], slices: list[LinearSlice]) -> bool:
    first = linears[0].weight
    gen = torch.Generator(device=first.device).manual_seed(0)
    with torch.inference_mode():
        for rows in CHECK_ROWS:
            x = torch.randn(1, rows, first.shape[1], generator=gen, device=first.device).to(first.dtype)
            if not all(same_up_to_rounding(m(x), s(x)) for m, s in zip(linears, slices)):
                return False
    return True


def same_up_to_rounding(want: torch.Tensor, got: torch.Tensor) -> bool:
    """Equal but for the order of a matmul's reduction: two units in the last place of the largest value.

    Bit-for-bit equality is too strict: MKL reduces a one-row product in another order
    when the weight has more rows (a few float32 ulps apart); any real mistake (a wrong
    slice, a stale product) is off by the size of the values themselves.
    """
    if want.shape != got.shape or want.dtype != got.dtype:
        return False
    scale = want.abs().max().float().item() if want.numel() else 0.0
    tol = scale * (2 * torch.finfo(want.dtype).eps + 1e-5)
    return bool(((want.float() - got.float()).abs() <= tol).all())


def unfuse(groups: list[list[Sibling]]) -> None:
    """Puts the original Linear layers back."""
    for group in groups:
        for sibling in group:
            sibling.parent._modules[sibling.name] = sibling.linear


def fuse_sibling_linears(model: nn.Module, run: Callable[[], object]) -> int:
    """Fuses every sibling group a dry forward `run` reveals; returns how many groups stay fused.

    A second dry run then shadows each slice with its original layer on the very input the
    model gives it: a group whose slice differs there (say the model changed the input in
    place between two sibling calls) is unfused again.
    """
    fused = [group for group in find_sibling_groups(model, run) if fuse_group(group) is not None]
    mismatched: list[list[Sibling]] = []

    def shadow(group: list[Sibling], linear: nn.Linear):
        def hook(module, args, output):
            if not same_up_to_rounding(linear(args[0]), output) and group not in mismatched:
                mismatched.append(group)

        return hook

    run_hooked([s.parent._modules[s.name].register_forward_hook(shadow(group, s.linear)) for group in fused for s in group],
                run)
    unfuse(mismatched)
    return len(fused) - len(mismatched)


def run_hooked(handles: list, run) -> None:
    """One dry forward (`run`) with the given hooks installed, removed afterwards whatever happens."""
    try:
        with torch.inference_mode():
            run()
    finally:
        for handle in handles:
            handle.remove()
