"""OpenAI wire types of /v1/embeddings: the request, the vectors (floats or base64) and usage."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

_IDS = {"type": "array", "items": {"type": "integer"}}
# What the gateway accepts (it checks the list's items itself: msgspec decodes one list type per union)
_INPUT_LIST = msgspec.Meta(extra_json_schema={"anyOf": [{"items": {"type": "string"}}, {"items": {"type": "integer"}},
                                                         {"items": _IDS}]})  # fmt: skip


class EmbeddingRequest(msgspec.Struct, kw_only=True):
    """`input`: a string, a list of strings, a list of token ids, or a list of such lists.

    `truncate_prompt_tokens` (vLLM): cut each input to that many tokens (-1: the model's
    limit) instead of refusing longer ones. Unknown fields are ignored."""

    input: str | Annotated[list[Any], _INPUT_LIST]
    model: str | None = None
    encoding_format: str | None = None  # "float" (default) or "base64": little-endian float32 bytes
    dimensions: int | None = None
    user: str | None = None
    truncate_prompt_tokens: int | None = None


class EmbeddingData(msgspec.Struct, kw_only=True):
    index: int
    embedding: list[float] | str
    object: Literal["embedding"] = "embedding"


class EmbeddingUsage(msgspec.Struct, kw_only=True):
    prompt_tokens: int
    total_tokens: int


class EmbeddingResponse(msgspec.Struct, kw_only=True):
    id: str
    created: int
    model: str
    data: list[EmbeddingData]
    usage: EmbeddingUsage
    object: Literal["list"] = "list"
