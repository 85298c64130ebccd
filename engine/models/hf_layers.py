"""Load-time substitution of a Hugging Face model's MLP, attention and decoder-layer modules by flat equivalents.

Why: after fusion and norm substitution a transformers decoder layer still runs about twice
the Python of a native one: five `LinearSlice` module calls where the native model makes
two matmul calls, an activation module, decorators around every layer and attention
forward, the attention-interface lookup through the config, and transposes to and from
transformers' [batch, heads, tokens, head_dim] layout. On CPU at decode sizes that is
several ms per step. Each class here does one module's arithmetic in the fewest calls,
on the engine's flattened batch, with the very same tensor ops in the same order.

`hf_substitution` decides where they apply: a module whose children have the expected
names and kinds is a candidate; the candidate replaces it only if, on the inputs a dry
forward gave the module and on random ones of the same shapes, run against scratch KV
caches, it returns the same output bit for bit and writes the same cache entries. Any
call the substitute does not expect (another context, an attention mask) is handed to
the original module, kept as `original`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from engine.models.hf_fusion import FusedLinear, LinearSlice
from engine.models.llama import self_attention
from compute_kernels import silu_and_mul


def _fused_of(*slices: nn.Module) -> FusedLinear | None:
    """The FusedLinear that `slices` are, in this order, the whole of; else None."""
    if not all(type(s) is LinearSlice for s in slices):
        return None
    fused = slices[0].fused
    if any(s.fused is not fused for s in slices) or [s.index for s in slices] != list(range(len(fused.sizes))):
        return None
    return fused


def _plain_linear(module: nn.Module) -> bool:
    return type(module) is nn.Linear and not (module._forward_hooks or module._forward_pre_hooks)


def _no_own_state(module: nn.Module) -> bool:
    """No parameters or buffers of its own (a layer scale, attention sinks) that a stand-in would ignore."""
    return not module._parameters and not module._buffers


def _activation(act: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """The activation as a plain function: F.silu for a SiLU module, else the module's own forward."""
    if isinstance(act, nn.SiLU) or type(act).__name__ == "SiLUActivation":
        return F.silu
    return act.forward


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)), gate and up from one fused matmul; stands in for a gate/up/down MLP."""

    def __init__(self, original: nn.Module) -> None:
        super().__init__()
        fused = _fused_of(original.gate_proj, original.up_proj)
        object.__setattr__(self, "original", original)  # unregistered: for calls we do not handle, and to undo
        self.weight, self.bias = fused.weight, fused.bias  # [2 * intermediate, hidden]
        self.intermediate = fused.sizes[0]
        self.down_weight, self.down_bias = original.down_proj.weight, original.down_proj.bias
        self.act = _activation(original.act_fn)

    @staticmethod
    def candidate(module: nn.Module) -> bool:
        names = set(module._modules)
        return (names == {"gate_proj", "up_proj", "down_proj", "act_fn"} and _no_own_state(module)
                and _fused_of(module.gate_proj, module.up_proj) is not None
                and _plain_linear(module.down_proj))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate_up = F.linear(x, self.weight, self.bias)  # [..., 2 * intermediate]
        if self.act is F.silu:  # the native MLP's kernel
            return F.linear(silu_and_mul(gate_up), self.down_weight, self.down_bias)
        gate, up = gate_up.narrow(-1, 0, self.intermediate), gate_up.narrow(-1, self.intermediate, self.intermediate)
        return F.linear(self.act(gate) * up, self.down_weight, self.down_bias)


class PagedSelfAttention(nn.Module):
    """q/k/v from one fused matmul, rotary, our KV cache write and paged attention, o_proj: in [tokens, heads, dim].

    Stands in for a transformers attention module of the Llama shape (q/k/v/o projections,
    rotate-half rotary from the layer's `position_embeddings`, no sliding window), optionally
    with Qwen3's per-head q/k norms before the rotary.
    """

    def __init__(self, original: nn.Module, context_type: type) -> None:
        super().__init__()
        fused = _fused_of(original.q_proj, original.k_proj, original.v_proj)
        object.__setattr__(self, "original", original)
        self.context_type = context_type
        self.weight, self.bias = fused.weight, fused.bias  # [q_size + 2 * kv_size, hidden]
        self.q_size, self.kv_size = fused.sizes[0], fused.sizes[1]
        self.head_dim = original.head_dim
        self.scale = original.scaling
        self.layer_idx = original.layer_idx
        self.o_weight, self.o_bias = original.o_proj.weight, original.o_proj.bias
        self.q_norm = getattr(original, "q_norm", None)
        self.k_norm = getattr(original, "k_norm", None)
        self._q_norm = None if self.q_norm is None else self.q_norm.forward
        self._k_norm = None if self.k_norm is None else self.k_norm.forward

    @staticmethod
    def candidate(module: nn.Module) -> bool:
        config = getattr(module, "config", None)
        names = set(module._modules)
        norms = [module._modules[n] for n in ("q_norm", "k_norm") if n in names]
        return (names - {"q_norm", "k_norm"} == {"q_proj", "k_proj", "v_proj", "o_proj"} and len(norms) in (0, 2)
                and not any(m._forward_hooks or m._forward_pre_hooks for m in norms)
                and _no_own_state(module)
                and _fused_of(module.q_proj, module.k_proj, module.v_proj) is not None
                and _plain_linear(module.o_proj)
                and isinstance(getattr(module, "head_dim", None), int)
                and isinstance(getattr(module, "scaling", None), float)
                and isinstance(getattr(module, "layer_idx", None), int)
                and getattr(module, "sliding_window", None) is None
                and getattr(config, "sliding_window", None) is None)  # fmt: skip

    def forward(self, hidden_states, position_embeddings=None, attention_mask=None, engine_context=None, **kwargs):
        if attention_mask is not None or type(engine_context) is not self.context_type or kwargs.get("cache") is not None:
            return self.original(hidden_states, position_embeddings=position_embeddings, attention_mask=attention_mask,
                                 engine_context=engine_context, **kwargs)  # fmt: skip
        return self.attend(hidden_states, position_embeddings, engine_context), None

    def attend(self, hidden_states: torch.Tensor, position_embeddings, context) -> torch.Tensor:
        """[1, num_tokens, hidden] -> [1, num_tokens, hidden]; writes this layer's KV cache through the
        native model's own attention function (engine.models.llama.self_attention)."""
        qkv = F.linear(hidden_states, self.weight, self.bias)[0]  # [num_tokens, q_size + 2 * kv_size]
        cos, sin = position_embeddings  # [1, num_tokens, head_dim]
        out = self_attention(qkv, self.q_size, self.kv_size, self.head_dim, cos[0], sin[0],
                             context.kv_caches[self.layer_idx], context.meta, self.scale, self._q_norm, self._k_norm)  # fmt: skip
        return F.linear(out.unsqueeze(0), self.o_weight, self.o_bias)


class PreNormDecoderLayer(nn.Module):
    """x + attn(norm(x)), then x + mlp(norm(x)): a pre-norm decoder layer without its wrappers and kwargs."""

    def __init__(self, original: nn.Module) -> None:
        super().__init__()
        object.__setattr__(self, "original", original)
        # the same children under the same names (parameter names unchanged), called below without nn.Module.__call__
        self.input_layernorm, self.self_attn = original.input_layernorm, original.self_attn
        self.post_attention_layernorm, self.mlp = original.post_attention_layernorm, original.mlp
        self.context_type = original.self_attn.context_type
        self._attend, self._mlp = original.self_attn.attend, original.mlp.forward
        self._input_norm, self._post_attention_norm = original.input_layernorm.forward, original.post_attention_layernorm.forward

    @staticmethod
    def candidate(module: nn.Module) -> bool:
        return (set(module._modules) == {"input_layernorm", "self_attn", "post_attention_layernorm", "mlp"}
                and _no_own_state(module)
                and type(module.self_attn) is PagedSelfAttention
                and not any(m._forward_hooks or m._forward_pre_hooks for m in module.children()))  # fmt: skip

    def forward(self, hidden_states, attention_mask=None, position_embeddings=None, engine_context=None, **kwargs):
        if attention_mask is not None or type(engine_context) is not self.context_type or kwargs.get("cache") is not None:
            return self.original(hidden_states, attention_mask=attention_mask, position_embeddings=position_embeddings,
                                 engine_context=engine_context, **kwargs)  # fmt: skip
        hidden_states = hidden_states + self._attend(self._input_norm(hidden_states), position_embeddings, engine_context)
        return hidden_states + self._mlp(self._post_attention_norm(hidden_states))
