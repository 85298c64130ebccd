"""Model registry: Hugging Face architecture names -> native implementations and their config readers."""

from __future__ import annotations

from engine.models.llama import LlamaArgs, LlamaForCausalLM

NATIVE_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
}


def _rope(config: dict) -> tuple[float, float]:
    """(theta, linear scaling factor) from either the transformers 4 or 5 config layout."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    theta = config.get("rope_theta") or rope.get("rope_theta") or 10000.0
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type in (None, "default"):
        return float(theta), 1.0
    if rope_type == "linear":
        return float(theta), float(rope["factor"])
    raise ValueError(f"model: rope type {rope_type!r} is not supported by the native implementation")


def llama_args(config: dict, family: str) -> LlamaArgs:
    num_heads = config["num_attention_heads"]
    theta, scaling = _rope(config)
    return LlamaArgs(
        vocab_size=config["vocab_size"],
        hidden_size=config["hidden_size"],
        intermediate_size=config["intermediate_size"],
        num_layers=config["num_hidden_layers"],
        num_heads=num_heads,
        num_kv_heads=config.get("num_key_value_heads") or num_heads,
        head_dim=config.get("head_dim") or config["hidden_size"] // num_heads,
        rms_norm_eps=config.get("rms_norm_eps", 1e-6),
        rope_theta=theta,
        rope_scaling=scaling,
        max_position_embeddings=config.get("max_position_embeddings", 4096),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
        qkv_bias=family == "qwen2" or bool(config.get("attention_bias", False)),
        qk_norm=family == "qwen3",
    )


def native_args(config: dict) -> LlamaArgs:
    """The native architecture facts of a HF config; ValueError when we do not implement it."""
    architectures = config.get("architectures") or []
    for arch in architectures:
        if arch in NATIVE_ARCHITECTURES:
            return llama_args(config, NATIVE_ARCHITECTURES[arch])
    raise ValueError(f"model: architecture {architectures} is not supported (supported: {sorted(NATIVE_ARCHITECTURES)})")


def build_model(config: dict) -> LlamaForCausalLM:
    """Instantiates (on the current default device/dtype) the native model for a HF config."""
    return LlamaForCausalLM(native_args(config))
