"""The format registry: every supported format's spec, by name (a constant)."""
from __future__ import annotations

from types import MappingProxyType

from parsing.formats import deepseek, gpt_oss, json_tags, kimi, xml_tags
from parsing.spec import Format

REGISTRY: MappingProxyType[str, Format] = MappingProxyType({
    f.name: f
    for module in (json_tags, deepseek, kimi, xml_tags, gpt_oss)
    for f in module.FORMATS
})

NAMES = ("hermes", "qwen3", "qwen3_coder", "llama3_json", "mistral", "mistral_legacy",
         "deepseek_r1", "deepseek_v3", "deepseek_v31", "deepseek_v32", "deepseek_v4", "kimi_k2",
         "glm45", "glm47", "minimax_m2", "seed_oss", "gpt_oss")
