"""The one admission rule for embedding inputs: token-id lists the encoder can take."""

from __future__ import annotations

from schemas.embedding import EmbeddingModelInfo

MAX_INPUTS = 2048  # OpenAI's limit on the inputs of one request


def validate_inputs(inputs: list[list[int]], info: EmbeddingModelInfo) -> None:
    """Raises ValueError("input: ...") for no inputs, too many, an empty or over-long one, or an unknown id."""
    if not inputs:
        raise ValueError("input: at least one input is required")
    if len(inputs) > MAX_INPUTS:
        raise ValueError(f"input: at most {MAX_INPUTS} inputs per request, got {len(inputs)}")
    for i, ids in enumerate(inputs):
        if not ids:
            raise ValueError(f"input: input {i} is empty")
        if len(ids) > info.max_seq_len:
            raise ValueError(f"input: input {i} has {len(ids)} tokens; this model takes at most {info.max_seq_len} "
                             "(truncate_prompt_tokens cuts longer inputs)")  # fmt: skip
        if min(ids) < 0 or max(ids) >= info.vocab_size:
            raise ValueError(f"input: input {i} holds a token id outside the vocabulary (0..{info.vocab_size - 1})")
