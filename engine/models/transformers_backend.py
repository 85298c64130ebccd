"""Transformers backend: any Hugging Face causal LM on the engine's flattened batch, attention through our KV cache.

The Hugging Face model runs unmodified as one sequence of batch size 1 holding every
scheduled token (prefill chunks and decodes mixed), with explicit `position_ids` and no
transformers cache. Its attention layers call `paged_attention_forward`, registered under
`ATTN_NAME` in transformers' `AttentionInterface`; the per-step KV caches and metadata
reach it through the `engine_context` keyword argument that transformers forwards from
the model's `forward` down to every attention call.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from engine.models import hf_substitution
from engine.models.hf_fusion import fuse_sibling_linears
from engine.models.hf_norms import substitute_norms
from compute_kernels import AttentionMetadata, paged_attention, write_kv_cache

log = logging.getLogger(__name__)

ATTN_NAME = "engine_paged"
# Attention features transformers may ask for that paged_attention cannot compute.
_UNSUPPORTED_KWARGS = ("softcap", "position_bias", "s_aux", "sinks", "attention_chunk_size")
# Rope variants that transformers recomputes from max(position_ids) of the whole forward.
_BATCH_DEPENDENT_ROPE = ("dynamic", "longrope")


@dataclass(slots=True)
class PagedContext:
    """One forward's KV caches (per layer) and attention metadata, handed to every attention call."""

    kv_caches: list[tuple[torch.Tensor, torch.Tensor]]
    meta: AttentionMetadata


@dataclass(slots=True)
class ProbeContext:
    """A load-time dry run: records (layer_idx, key shape, value shape) of each attention call."""

    calls: list[tuple[int | None, tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)


def _check_supported(module: nn.Module, attention_mask, is_causal: bool | None, kwargs: dict) -> None:
    name = type(module).__name__
    for key in _UNSUPPORTED_KWARGS:
        if kwargs.get(key) is not None:
            raise ValueError(f"model: {name} asks for attention feature {key!r}, which the engine's paged attention lacks")
    if attention_mask is not None:
        raise ValueError(f"model: {name} builds its own attention mask; the engine's paged attention is causal only")
    if not (is_causal if is_causal is not None else getattr(module, "is_causal", True)):
        raise ValueError(f"model: {name} uses bidirectional attention; the engine's paged attention is causal only")


def paged_attention_forward(
    module: nn.Module,
    query: torch.Tensor,  # [1, num_heads, num_tokens, head_dim]
    key: torch.Tensor,  # [1, num_kv_heads, num_tokens, head_dim]
    value: torch.Tensor,  # [1, num_kv_heads, num_tokens, head_dim]
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    sliding_window: int | None = None,
    is_causal: bool | None = None,
    engine_context: PagedContext | ProbeContext | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature; returns ([1, num_tokens, num_heads, head_dim], None)."""
    if engine_context is None:
        raise RuntimeError(f"{ATTN_NAME} attention runs only inside the engine's TransformersModel")
    _check_supported(module, attention_mask, is_causal, kwargs)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    if isinstance(engine_context, ProbeContext):
        engine_context.calls.append((getattr(module, "layer_idx", None), tuple(key.shape), tuple(value.shape)))
        out = F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scale,
                                             enable_gqa=query.shape[1] != key.shape[1])  # fmt: skip
        return out.transpose(1, 2), None
    q = query[0].transpose(0, 1)  # [num_tokens, num_heads, head_dim]
    k_cache, v_cache = engine_context.kv_caches[module.layer_idx]
    write_kv_cache(key[0].transpose(0, 1), value[0].transpose(0, 1), k_cache, v_cache, engine_context.meta.slot_mapping)
    out = paged_attention(q, k_cache, v_cache, engine_context.meta, scale, sliding_window=sliding_window)
    return out.unsqueeze(0), None  # [1, num_tokens, num_heads, head_dim]


class TransformersModel(nn.Module):
    """Wraps a Hugging Face causal LM behind the runner's model interface.

    Same interface as the native models: forward, compute_logits, kv_shape, vocab_size and
    max_position_embeddings. Built by `load_transformers_model`; called by the model runner.
    """

    def __init__(self, hf_model: nn.Module, kv_shape: tuple[int, int, int]) -> None:
        super().__init__()
        self.hf_model = hf_model
        self.decoder = hf_model.base_model  # the model without its LM head
        self.lm_head = hf_model.get_output_embeddings()
        text_config = hf_model.config.get_text_config()
        self.vocab_size: int = text_config.vocab_size
        self.max_position_embeddings: int = getattr(text_config, "max_position_embeddings", 4096)
        self.final_softcap = getattr(text_config, "final_logit_softcapping", None)
        self._kv_shape = kv_shape

    @property
    def kv_shape(self) -> tuple[int, int, int]:
        """(num_layers, num_kv_heads, head_dim), as observed in the load-time dry run."""
        return self._kv_shape

    def forward(self, input_ids, positions, kv_caches, meta: AttentionMetadata) -> torch.Tensor:
        out = self.decoder(
            input_ids=input_ids.unsqueeze(0),  # [1, num_tokens]
            position_ids=positions.unsqueeze(0),  # [1, num_tokens]
            use_cache=False,
            engine_context=PagedContext(kv_caches, meta),
        )
        return out.last_hidden_state[0]  # [num_tokens, hidden]

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        if type(self.lm_head) is nn.Linear and self.lm_head.bias is None:
            # weight @ hidden^T, as the native models do: with few rows and a large vocabulary
            # MKL runs this layout much faster than hidden @ weight^T (F.linear) on CPU.
            logits = torch.mm(self.lm_head.weight, hidden.t()).t().float()  # [num_rows, vocab]
        else:
            logits = self.lm_head(hidden).float()
        if self.final_softcap:
            logits = torch.tanh(logits / self.final_softcap) * self.final_softcap
        return logits


def _model_class(hf_config):
    from transformers import AutoModelForCausalLM

    try:
        cls = AutoModelForCausalLM._model_mapping[type(hf_config)]
    except KeyError:
        raise ValueError(f"model: transformers has no causal LM class for model type {hf_config.model_type!r}") from None
    if not getattr(cls, "_supports_attention_backend", False):
        raise ValueError(f"model: {cls.__name__} does not route attention through transformers' attention interface, "
                         "so it cannot read the engine's KV cache")  # fmt: skip
    _refuse_unhandled_config(cls.__name__, hf_config.get_text_config())
    return cls


def _refuse_unhandled_config(name: str, text_config) -> None:
    """Config features that would silently give wrong output on a flattened batch of requests."""
    for attr in ("logit_scale", "logits_scaling"):
        if getattr(text_config, attr, 1.0) not in (None, 1.0):
            raise ValueError(f"model: {name} scales its logits ({attr}), which the transformers backend does not apply")
    rope = getattr(text_config, "rope_parameters", None) or {}
    for params in [rope, *(v for v in rope.values() if isinstance(v, dict))]:
        if params.get("rope_type") in _BATCH_DEPENDENT_ROPE:
            raise ValueError(f"model: {name} uses {params['rope_type']!r} rope, which rescales by the longest sequence "
                             "in the forward; on the engine's mixed batch one request would change another's output")  # fmt: skip


def probe_kv_shape(hf_model: nn.Module, num_layers: int) -> tuple[int, int, int]:
    """Runs three tokens through the model and checks every layer attended once through our function."""
    probe = ProbeContext()
    device = next(hf_model.parameters()).device
    with torch.inference_mode():
        hf_model.base_model(input_ids=torch.zeros(1, 3, dtype=torch.long, device=device),
                            position_ids=torch.arange(3, device=device).unsqueeze(0),
                            use_cache=False, engine_context=probe)  # fmt: skip
    name = type(hf_model).__name__
    layers = sorted(layer for layer, _, _ in probe.calls if layer is not None)
    if layers != list(range(num_layers)) or len(probe.calls) != num_layers:
        raise ValueError(f"model: {name} has {num_layers} layers but attended through the engine in layers {layers}; "
                         "layers without standard attention (recurrent state, shared KV) are not supported")  # fmt: skip
    shapes = {(k[1], k[3], v[1], v[3]) for _, k, v in probe.calls}
    if len(shapes) != 1:
        raise ValueError(f"model: {name} has layers with different KV head counts or sizes {sorted(shapes)}")
    num_kv_heads, head_dim, v_heads, v_dim = shapes.pop()
    if (v_heads, v_dim) != (num_kv_heads, head_dim):
        raise ValueError(f"model: {name} has value heads of another shape than its key heads")
    return num_layers, num_kv_heads, head_dim


def load_transformers_model(folder: Path, device: torch.device, dtype: torch.dtype, fuse: bool = True) -> TransformersModel:
    """Instantiates the folder's Hugging Face causal LM with our attention; raises ValueError when it cannot run.

    `fuse` applies the load-time speed-ups of `speed_up` (off only to measure or test without them).
    """
    from transformers import AttentionInterface, AutoConfig

    AttentionInterface.register(ATTN_NAME, paged_attention_forward)
    try:
        hf_config = AutoConfig.from_pretrained(str(folder))
    except (ValueError, KeyError, OSError) as exc:
        raise ValueError(f"model: transformers cannot read the config in {folder} ({exc})") from None
    cls = _model_class(hf_config)
    try:
        hf_model, info = cls.from_pretrained(str(folder), config=hf_config, dtype=dtype, attn_implementation=ATTN_NAME,
                                             device_map=str(device), output_loading_info=True)  # fmt: skip
    except (ValueError, OSError, RuntimeError) as exc:
        raise ValueError(f"model: transformers cannot load {folder} ({exc})") from None
    missing = sorted(info.get("missing_keys") or []) + sorted(str(k) for k in info.get("mismatched_keys") or [])
    if missing:  # transformers would run them randomly initialised
        raise ValueError(f"model: checkpoint lacks or misshapes weight {missing[0]} ({len(missing)} in all)")
    hf_model.eval()
    num_layers = hf_config.get_text_config().num_hidden_layers
    kv_shape = probe_kv_shape(hf_model, num_layers)
    if fuse:
        speed_up(hf_model, kv_shape)
    return TransformersModel(hf_model, kv_shape)


def speed_up(hf_model: nn.Module, kv_shape: tuple[int, int, int]) -> tuple[int, int, int]:
    """Fuses projections, substitutes norms, then MLP/attention/decoder-layer modules, each only where proven equal.

    Returns (projection groups fused, norms substituted, modules substituted). The module
    substitutions are also checked together: a mixed paged step through the whole model
    must give the same hidden states and cache writes after them as before, else all are undone.
    """
    base = hf_model.base_model
    device, dtype = next(hf_model.parameters()).device, next(hf_model.parameters()).dtype
    gen = torch.Generator(device=device).manual_seed(0)
    num_tokens = sum(hf_substitution.CHECK_QUERY_LENS)
    input_ids = torch.randint(0, hf_model.config.get_text_config().vocab_size, (1, num_tokens), generator=gen, device=device)

    def dry_run() -> torch.Tensor:
        return base(input_ids=input_ids, position_ids=torch.arange(num_tokens, device=device).unsqueeze(0),
                    use_cache=False, engine_context=ProbeContext()).last_hidden_state  # fmt: skip

    num_groups = fuse_sibling_linears(base, dry_run)
    num_norms = substitute_norms(base)
    checker = hf_substitution.LayerChecker(PagedContext, kv_shape, dtype, device)
    positions, meta, num_slots = hf_substitution.check_step(device)

    def paged_step() -> list[torch.Tensor]:
        caches = hf_substitution.scratch_caches(kv_shape, num_slots, dtype, device, seed=2)
        with torch.inference_mode():
            hidden = base(input_ids=input_ids, position_ids=positions.unsqueeze(0), use_cache=False,
                          engine_context=PagedContext(caches, meta)).last_hidden_state  # fmt: skip
        return [hidden, *(t for pair in caches for t in pair)]

    want = paged_step()
    replaced = hf_substitution.substitute_layers(base, dry_run, checker)
    if replaced and not all(torch.equal(a, b) for a, b in zip(want, paged_step())):
        log.warning("transformers backend: module substitutions changed a whole-model step; undone")
        hf_substitution.restore(replaced)
        replaced = []
    log.info("transformers backend: %d projection groups fused, %d norms and %d modules substituted",
             num_groups, num_norms, len(replaced))  # fmt: skip
    return num_groups, num_norms, len(replaced)
