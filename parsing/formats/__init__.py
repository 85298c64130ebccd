"""The format registry: every supported format's spec, by name (a constant)."""
from __future__ import annotations

from types import MappingProxyType

from parsing.formats import deepseek, gemma, gpt_oss, json_lists, json_tags, kimi, pythonic, step, xml_tags
from parsing.spec import Format

REGISTRY: MappingProxyType[str, Format] = MappingProxyType({
    f.name: f
    for module in (json_tags, json_lists, pythonic, gemma, deepseek, kimi, step, xml_tags, gpt_oss)
    for f in module.FORMATS
})

NAMES = ("hermes", "qwen3", "qwen3_coder", "llama3_json", "mistral", "mistral_legacy",
         "deepseek_r1", "deepseek_v3", "deepseek_v31", "deepseek_v32", "deepseek_v4", "kimi_k2",
         "glm45", "glm47", "minimax_m2", "seed_oss", "gpt_oss",
         # added for vLLM's registries (issue 19)
         "pythonic", "llama4_pythonic", "olmo3", "llama4_json", "granite", "granite_20b_fc", "internlm",
         "jamba", "xlam", "phi4_mini_json", "hunyuan_a13b", "step3", "step3p5", "ernie45", "longcat",
         "qwen3_xml", "gigachat3", "apertus", "minimax_m2_append_think", "lfm2", "cohere_command3",
         "cohere_command4", "mimo", "nemotron_v3", "gemma4", "functiongemma", "granite4")
