"""Engine configuration: one frozen dataclass, built once by the caller (CLI or offline API)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

LINEAR_ACTIVATIONS = ("auto", "float32", "fixed24", "fixed16", "int8")


def default_cache_dir() -> Path:
    """Where converted GGUF models are kept between starts."""
    return Path.home() / ".cache" / "agent-gateway" / "models"


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Everything the engine core needs to load a model and schedule requests.

    `model` is a Hugging Face folder, a GGUF file, or None for the embedded default model.
    `max_model_len` None means the model's own context length. `num_kv_blocks` None sizes
    the pool from `kv_cache_gib` on CPU, and on CUDA from `gpu_memory_utilization` after a
    profiling forward pass.
    """

    model: str | None = None
    max_model_len: int | None = None
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 2048
    # prompt tokens a step may take while any request decodes (None: auto, 128 on CPU, no cap on
    # CUDA; 0: no cap): a large prefill chunk would hold every decoding stream for its whole step
    max_prefill_tokens_while_decoding: int | None = None
    # pace those prompt tokens by time instead (engine/prefill_pacing.py): they may cost at most this
    # many times the step's decode rows (None: auto, 2.5 on CPU unless a cap is given, off on CUDA; 0: off;
    # the cap stays the budget until the step costs are learned)
    prefill_stall_ratio: float | None = None
    block_size: int = 16
    num_kv_blocks: int | None = None
    kv_cache_gib: float = 1.0
    enable_prefix_caching: bool = True
    device: str | None = None  # None: cuda when torch sees a GPU, else cpu
    dtype: str | None = None  # None (auto): bfloat16 on cuda and on CPUs with BF16 units, else float32
    num_threads: int | None = None  # torch intra-op threads in the core process (None: all usable cores)
    kv_cache_dtype: str | None = None  # None (auto): float16 on the CPU kernels for a float32 model, else the model's dtype
    quantization: str = "auto"  # linear weights: auto (exact int4/int8 grids), none, int8, int4 (lossy)
    # what the CPU kernels multiply int weights with: auto (fixed24 where the CPU has AVX512-VNNI, else
    # float32), float32, fixed24 (24-bit fixed point per group of 32, integer dot products), and the
    # faster lossy fixed16 and int8
    linear_activations: str = "auto"
    cpu_kernels: bool = True  # the C kernels on CPU (fused decoder stack, paged attention); False: torch only
    cache_dir: Path = field(default_factory=default_cache_dir)
    seed: int = 0
    grammar_compile_timeout: float = 30.0  # seconds before a structured-output request fails
    structured_outputs_open_objects: bool = False  # JSON Schema's open objects instead of strict mode (engine/structured.py)
    structured_outputs_property_order: str = "declared"  # or "any": JSON schemas' object properties (grammar/README.md)
    # a JSON schema without an exact grammar compiles wider and its finished document is checked (engine/structured.py)
    structured_outputs_lenient: bool = False
    model_impl: str = "auto"  # "native", "transformers", or "auto": native where we implement the architecture
    enforce_eager: bool = False  # CUDA: no graph capture, every step eager
    gpu_memory_utilization: float = 0.9  # CUDA: share of the GPU's memory for weights, activations and KV cache
    speculative: str | None = None  # None (off), "ngram", "draft" (same vocabulary) or "tli" (any vocabulary)
    draft_model: str | None = None  # the draft of "draft" / "tli": HF folder or GGUF; None: the embedded default model
    num_speculative_tokens: int | None = None  # drafts per request per step; None: auto (dynamic, 0 to 8)

    def validate(self) -> None:
        """Raises ValueError naming the first field out of range."""
        for name in ("max_num_seqs", "max_num_batched_tokens", "block_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.prefill_stall_ratio is not None and self.prefill_stall_ratio < 0:
            raise ValueError(f"prefill_stall_ratio must be >= 0, got {self.prefill_stall_ratio}")
        if self.max_prefill_tokens_while_decoding is not None and self.max_prefill_tokens_while_decoding < 0:
            raise ValueError(f"max_prefill_tokens_while_decoding must be >= 0, got {self.max_prefill_tokens_while_decoding}")
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError(f"max_model_len must be >= 1, got {self.max_model_len}")
        if self.num_kv_blocks is not None and self.num_kv_blocks < 1:
            raise ValueError(f"num_kv_blocks must be >= 1, got {self.num_kv_blocks}")
        if self.dtype not in (None, "float32", "bfloat16", "float16"):
            raise ValueError(f"dtype must be float32, bfloat16 or float16, got {self.dtype!r}")
        if not self.grammar_compile_timeout > 0:
            raise ValueError(f"grammar_compile_timeout must be > 0, got {self.grammar_compile_timeout}")
        if self.kv_cache_dtype not in (None, "float32", "bfloat16", "float16"):
            raise ValueError(f"kv_cache_dtype must be float32, bfloat16 or float16, got {self.kv_cache_dtype!r}")
        if self.quantization not in ("auto", "none", "int8", "int4"):
            raise ValueError(f"quantization must be auto, none, int8 or int4, got {self.quantization!r}")
        if self.linear_activations not in LINEAR_ACTIVATIONS:
            raise ValueError(f"linear_activations must be one of {', '.join(LINEAR_ACTIVATIONS)}, got {self.linear_activations!r}")
        if self.num_threads is not None and self.num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {self.num_threads}")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.model_impl not in ("auto", "native", "transformers"):
            raise ValueError(f"model_impl must be auto, native or transformers, got {self.model_impl!r}")
        if self.speculative not in (None, "ngram", "draft", "tli"):
            raise ValueError(f"speculative must be ngram, draft or tli, got {self.speculative!r}")
        if self.num_speculative_tokens is not None and not 1 <= self.num_speculative_tokens <= 64:
            raise ValueError(f"num_speculative_tokens must be in [1, 64] (or None: auto), got {self.num_speculative_tokens}")
        if self.draft_model is not None and self.speculative not in ("draft", "tli"):
            raise ValueError("draft_model needs speculative 'draft' or 'tli'")
