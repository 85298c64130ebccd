"""Proof and substitution of the stand-ins in `hf_layers`: each replaces a module only where shown bit-equal.

A candidate module (children of the expected names and kinds) is replaced only if, on the
inputs a dry forward gave it and on random ones of the same shapes, run against scratch
KV caches in one mixed step (a prefill chunk after cached tokens, and decodes), its
stand-in returns the same output bit for bit and writes the same cache entries. Bottom
up: MLPs, then attentions, then decoder layers (whose check runs the already substituted
children), so each proof rests on the one below.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from engine.models.hf_fusion import run_hooked
from engine.models.hf_layers import GatedMLP, PagedSelfAttention, PreNormDecoderLayer
from compute_kernels.attention import build_attention_metadata

# One mixed step the checks run: a 4-token prefill chunk after 3 cached tokens, three decodes.
CHECK_QUERY_LENS = (4, 1, 1, 1)
CHECK_SEQ_LENS = (7, 3, 9, 2)
_CHECK_BLOCK = 4


def check_step(device: torch.device):
    """(positions, attention metadata, number of cache slots) of the check step."""
    blocks_per_req = -(-max(CHECK_SEQ_LENS) // _CHECK_BLOCK)
    block_tables = torch.arange(len(CHECK_SEQ_LENS) * blocks_per_req, device=device).view(len(CHECK_SEQ_LENS), -1)
    positions = torch.cat([torch.arange(s - q, s, device=device) for q, s in zip(CHECK_QUERY_LENS, CHECK_SEQ_LENS)])
    rows = torch.repeat_interleave(torch.arange(len(CHECK_SEQ_LENS), device=device),
                                   torch.tensor(CHECK_QUERY_LENS, device=device))  # fmt: skip
    slots = block_tables[rows, positions // _CHECK_BLOCK] * _CHECK_BLOCK + positions % _CHECK_BLOCK
    meta = build_attention_metadata(list(CHECK_QUERY_LENS), list(CHECK_SEQ_LENS), block_tables, slots, _CHECK_BLOCK)
    return positions, meta, block_tables.numel() * _CHECK_BLOCK


def scratch_caches(kv_shape: tuple[int, int, int], num_slots: int, dtype: torch.dtype, device: torch.device, seed: int):
    """Random KV caches for every layer, the same for the same seed."""
    num_layers, num_kv_heads, head_dim = kv_shape
    gen = torch.Generator(device=device).manual_seed(seed)
    shape = (num_slots, num_kv_heads, head_dim)
    return [tuple(torch.randn(shape, generator=gen, device=device).to(dtype) for _ in range(2)) for _ in range(num_layers)]


def _first(original_out, substitute_out):
    """The tensors to compare: the first of two tuples of one length, or two tensors; else (None, None)."""
    if isinstance(original_out, tuple) and isinstance(substitute_out, tuple) and len(original_out) == len(substitute_out):
        return original_out[0], substitute_out[0]
    if isinstance(original_out, torch.Tensor) and isinstance(substitute_out, torch.Tensor):
        return original_out, substitute_out
    return None, None


def _identical(want, got) -> bool:
    return (isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor) and want.dtype == got.dtype
            and want.shape == got.shape and torch.equal(want, got))  # fmt: skip


class LayerChecker:
    """Runs a module and its stand-in on the same inputs and fresh copies of the same scratch caches."""

    def __init__(self, context_type: type, kv_shape: tuple[int, int, int], dtype: torch.dtype, device: torch.device):
        self.context_type, self.kv_shape, self.dtype, self.device = context_type, kv_shape, dtype, device
        _, self.meta, self.num_slots = check_step(device)
        self._caches = [scratch_caches(kv_shape, self.num_slots, dtype, device, seed=trial) for trial in range(2)]

    def same(self, original: nn.Module, substitute: nn.Module, args: tuple, kwargs: dict) -> bool:
        """Bit-equal outputs and cache writes, on the dry run's inputs and on random ones of their shape."""
        hidden = kwargs.get("hidden_states", args[0] if args else None)
        if not isinstance(hidden, torch.Tensor) or hidden.shape[:2] != (1, sum(CHECK_QUERY_LENS)):
            return False
        gen = torch.Generator(device=self.device).manual_seed(1)
        for trial, h in enumerate((hidden, torch.randn(hidden.shape, generator=gen, device=self.device).to(hidden.dtype) * 3)):
            runs = []
            for module in (original, substitute):
                caches = [(k.clone(), v.clone()) for k, v in self._caches[trial]]
                call_args, call_kwargs = _with_hidden(args, kwargs, h)
                call_kwargs["engine_context"] = self.context_type(caches, self.meta)
                try:
                    with torch.inference_mode():
                        runs.append((module(*call_args, **call_kwargs), caches))
                except (RuntimeError, TypeError, ValueError, AttributeError, IndexError):
                    return False
            (want_out, want_caches), (got_out, got_caches) = runs
            if not _identical(*_first(want_out, got_out)) or not all(
                torch.equal(a, b) for pair_a, pair_b in zip(want_caches, got_caches) for a, b in zip(pair_a, pair_b)
            ):
                return False
        return True


def _with_hidden(args: tuple, kwargs: dict, hidden: torch.Tensor) -> tuple[tuple, dict]:
    kwargs = dict(kwargs)
    if "hidden_states" in kwargs:
        kwargs["hidden_states"] = hidden
        return args, kwargs
    return (hidden, *args[1:]), kwargs


def mlp_matches(original: nn.Module, substitute: GatedMLP) -> bool:
    """Bit-equal on random inputs of several row counts and magnitudes."""
    weight = substitute.weight
    gen = torch.Generator(device=weight.device).manual_seed(0)
    with torch.inference_mode():
        for rows, scale in ((1, 1.0), (5, 10.0), (64, 0.1)):
            x = (torch.randn(1, rows, weight.shape[1], generator=gen, device=weight.device) * scale).to(weight.dtype)
            try:
                if not _identical(original(x), substitute(x)):
                    return False
            except (RuntimeError, TypeError, ValueError):
                return False
    return True


def _capture_inputs(modules: list[nn.Module], run: Callable[[], object]) -> dict[int, tuple[tuple, dict]]:
    """The (args, kwargs) each module is first called with in the dry forward `run`."""
    seen: dict[int, tuple[tuple, dict]] = {}

    def hook(module, args, kwargs):
        seen.setdefault(id(module), (args, dict(kwargs)))

    run_hooked([m.register_forward_pre_hook(hook, with_kwargs=True) for m in modules], run)
    return seen


def _candidates(model: nn.Module, kind: type) -> list[tuple[nn.Module, str, nn.Module]]:
    return [(parent, name, child) for parent in model.modules() for name, child in parent._modules.items()
            if child is not None and kind.candidate(child)]  # fmt: skip


def substitute_layers(model: nn.Module, run: Callable[[], object], checker: LayerChecker) -> list[tuple[nn.Module, str, nn.Module]]:
    """MLPs, then attentions, then decoder layers, each replaced where proven equal; returns what was replaced.

    `run` is a dry forward of `model`; `restore` undoes the returned replacements.
    """
    replaced = []
    for parent, name, child in _candidates(model, GatedMLP):
        substitute = GatedMLP(child)
        if mlp_matches(child, substitute):
            parent._modules[name] = substitute
            replaced.append((parent, name, child))
    for kind in (PagedSelfAttention, PreNormDecoderLayer):
        found = _candidates(model, kind)
        inputs = _capture_inputs([child for _, _, child in found], run)
        for parent, name, child in found:
            substitute = kind(child, checker.context_type) if kind is PagedSelfAttention else kind(child)
            if id(child) in inputs and checker.same(child, substitute, *inputs[id(child)]):
                parent._modules[name] = substitute
                replaced.append((parent, name, child))
    return replaced


def restore(replaced: list[tuple[nn.Module, str, nn.Module]]) -> None:
    """Puts the original modules back, last replaced first."""
    for parent, name, original in reversed(replaced):
        parent._modules[name] = original
