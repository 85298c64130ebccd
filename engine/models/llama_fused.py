"""The Llama family on the CPU kernels: every decoder layer of a step in one C call.

Holds the weights in the kernels' form: linears packed as the quantization mode says
(engine/loader/quantization.py), norms and the embedding as float32, all under flat names
(`layers.3.qkv`, `embed`, ...) so that engine/loader/packed_cache.py can save and reload
them without building the float model. The whole stack is described once to `compute_kernels/cpu`
by int64 records of pointers. The runner calls it through the native model's interface; the
native `LlamaForCausalLM` is the torch reference it is tested against.
"""

from __future__ import annotations

import torch

from engine.loader.quantization import PackingReport, pack_linear
from engine.models.llama import LlamaArgs, LlamaForCausalLM
from compute_kernels import AttentionMetadata, rotary_cos_sin
from compute_kernels.cpu.ops import KV_KINDS, linear, linear_args, load_ops, meta_args, ptr, vnni_available, with_vnni
from compute_kernels.quant import PackedLinear

LINEARS = ("qkv", "o", "gate_up", "down")
NORMS = ("input_norm", "post_norm", "q_norm", "k_norm")
DIGITS = {"float32": 0, "fixed24": 3, "fixed16": 2, "int8": 1}  # 8-bit digits per activation in the VNNI linear


def resolve_activations(requested: str) -> str:
    """What the int linears multiply with: `auto` is fixed24 where the kernels have AVX512-VNNI
    (24-bit fixed point per group of 32: integer dot products, each input off by at most 2^-24
    of its group's largest, float32's own rounding; the default model's top-1 agreement with
    float32 stays 100 %) and float32 elsewhere. fixed16 (99.8 %) and int8 (96.4 %) are faster
    and lossy, opt-in; any of the three on a CPU without VNNI is an error."""
    if requested == "auto":
        return "fixed24" if vnni_available() else "float32"
    if requested not in DIGITS:
        raise ValueError(f"linear activations must be auto, float32, fixed24, fixed16 or int8, got {requested!r}")
    if DIGITS[requested] and not vnni_available():
        raise ValueError(f"linear activations {requested!r} need a CPU with AVX512-VNNI (and AVX512BW)")
    return requested


def pack_native(model: LlamaForCausalLM, quantization: str) -> tuple[dict, PackingReport]:
    """The flat weights of a loaded native model, linears packed per `quantization`."""
    report = PackingReport()
    head = model.embed_tokens.weight if model.lm_head is None else model.lm_head.weight
    weights: dict = {"embed": model.embed_tokens.weight, "lm_head": pack_linear(head, None, quantization, report),
                     "final_norm": model.norm.weight}  # fmt: skip
    for i, layer in enumerate(model.layers):
        attn, mlp = layer.self_attn, layer.mlp
        weights[f"layers.{i}.input_norm"] = layer.input_layernorm.weight
        weights[f"layers.{i}.post_norm"] = layer.post_attention_layernorm.weight
        if attn.q_norm is not None:
            weights[f"layers.{i}.q_norm"], weights[f"layers.{i}.k_norm"] = attn.q_norm.weight, attn.k_norm.weight
        weights[f"layers.{i}.qkv"] = pack_linear(attn.qkv_proj.weight, attn.qkv_proj.bias, quantization, report)
        weights[f"layers.{i}.o"] = pack_linear(attn.o_proj.weight, None, quantization, report)
        weights[f"layers.{i}.gate_up"] = pack_linear(mlp.gate_up_proj.weight, None, quantization, report)
        weights[f"layers.{i}.down"] = pack_linear(mlp.down_proj.weight, None, quantization, report)
    return {k: v if isinstance(v, PackedLinear) else v.detach().float().contiguous() for k, v in weights.items()}, report


class FusedLlama:
    """Owns the packed weights and the C records; forward / compute_logits like LlamaForCausalLM."""

    def __init__(self, args: LlamaArgs, weights: dict, report: PackingReport, activations: str = "auto") -> None:
        self.ops = load_ops()
        if self.ops is None:
            raise RuntimeError("the CPU kernels are not available")
        self.activations = resolve_activations(activations)
        digits = DIGITS[self.activations]
        if digits:  # the int linears also in the VNNI layout (float32 ones stay as they are)
            weights = {k: with_vnni(v, digits) if isinstance(v, PackedLinear) else v for k, v in weights.items()}
        self.args, self.weights, self.report = args, weights, report
        self.embed = weights["embed"]  # [vocab, hidden] float32
        self.lm_head: PackedLinear = weights["lm_head"]
        cos, sin = rotary_cos_sin(args.head_dim, args.max_position_embeddings, args.rope_theta, args.rope_scaling)
        self.rope_cos, self.rope_sin = cos.contiguous(), sin.contiguous()  # [max_positions, head_dim]
        self.layer_records = torch.zeros(args.num_layers, self.ops.LAYER_RECORD, dtype=torch.long)
        self.model_record = self._model_record(kv_kind=0)
        self._caches_seen: tuple[int, ...] = ()
        self._work = torch.empty(0)
        self.scale = args.head_dim**-0.5

    def _model_record(self, kv_kind: int) -> torch.Tensor:
        a = self.args
        values = {"num_layers": a.num_layers, "hidden": a.hidden_size, "num_heads": a.num_heads,
                  "num_kv_heads": a.num_kv_heads, "head_dim": a.head_dim, "intermediate": a.intermediate_size,
                  "kv_kind": kv_kind, "rope_cos": ptr(self.rope_cos), "rope_sin": ptr(self.rope_sin),
                  "final_norm": ptr(self.weights["final_norm"])}  # fmt: skip
        return torch.tensor([values[name] for name in self.ops.MODEL_FIELDS.split()], dtype=torch.long)

    def _bind_caches(self, kv_caches: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Writes the layer records (weights and this cache's pointers) when the caches change."""
        seen = tuple(ptr(t) for pair in kv_caches for t in pair)
        if seen == self._caches_seen:
            return
        k0 = kv_caches[0][0]
        if k0.dtype not in KV_KINDS or any(not t.is_contiguous() for pair in kv_caches for t in pair):
            raise ValueError(f"the CPU kernels need contiguous float32/bfloat16/float16 caches, got {k0.dtype}")
        self.model_record = self._model_record(KV_KINDS[k0.dtype])
        names = self.ops.LAYER_FIELDS.split()
        for i, (k_cache, v_cache) in enumerate(kv_caches):
            values = {name: ptr(self.weights.get(f"layers.{i}.{name}")) for name in NORMS}
            values.update(k_cache=ptr(k_cache), v_cache=ptr(v_cache))
            row = [values[name] for name in names]
            for name in LINEARS:
                row += linear_args(self.weights[f"layers.{i}.{name}"])
            self.layer_records[i] = torch.tensor(row, dtype=torch.long)
        self._caches_seen = seen

    @property
    def activations_summary(self) -> str:
        return {"float32": "float32", "fixed24": "24-bit fixed point, AVX512-VNNI integer dot products",
                "fixed16": "16-bit fixed point (lossy), AVX512-VNNI",
                "int8": "int8 (lossy), AVX512-VNNI"}[self.activations]  # fmt: skip

    @property
    def kv_shape(self) -> tuple[int, int, int]:
        return self.args.num_layers, self.args.num_kv_heads, self.args.head_dim

    @property
    def vocab_size(self) -> int:
        return self.args.vocab_size

    @property
    def max_position_embeddings(self) -> int:
        return self.args.max_position_embeddings

    def _workspace(self, num_tokens: int) -> torch.Tensor:
        need = self.ops.stack_workspace(ptr(self.model_record), num_tokens)
        if self._work.numel() < need:  # grown, never shrunk: no page faults on every long step
            self._work = torch.empty(need)
        return self._work

    def __call__(self, input_ids, positions, kv_caches, meta: AttentionMetadata) -> torch.Tensor:
        return self.forward(input_ids, positions, kv_caches, meta)

    def forward(self, input_ids, positions, kv_caches, meta: AttentionMetadata) -> torch.Tensor:
        """input_ids, positions [num_tokens] -> final hidden states [num_tokens, hidden]."""
        self._bind_caches(kv_caches)
        num_tokens = input_ids.shape[0]
        x = self.embed.index_select(0, input_ids)  # [num_tokens, hidden], the residual stream
        out = torch.empty_like(x)
        positions = positions.long().contiguous()
        work = self._workspace(num_tokens)
        self.ops.stack_forward(ptr(self.model_record), ptr(self.layer_records), ptr(x), ptr(out), num_tokens,
                               ptr(positions), ptr(work), self.args.rms_norm_eps, self.scale, *meta_args(meta))  # fmt: skip
        return out

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return linear(hidden, self.lm_head)  # [num_rows, vocab] float32

    def eval(self):
        return self
