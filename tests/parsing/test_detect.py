"""Auto-detection: every family's real template text (its relevant parts, shipped as test data
under data/templates) and special tokens pick its format."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import parsing

DATA = Path(__file__).parent / "data" / "templates"
FAMILIES = json.loads((DATA / "special_tokens.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_template_and_tokens_pick_the_format(family: str) -> None:
    template = (DATA / f"{family}.jinja").read_text(encoding="utf-8")
    want = FAMILIES[family]["format"]
    assert want in parsing.formats()
    assert parsing.detect_format(template, FAMILIES[family]["tokens"]) == want


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_template_alone_picks_the_format(family: str) -> None:
    """The template text is enough (a tokenizer may list few special tokens)."""
    template = (DATA / f"{family}.jinja").read_text(encoding="utf-8")
    assert parsing.detect_format(template, []) == FAMILIES[family]["format"]


def test_every_added_family_has_template_data() -> None:
    detected = {entry["format"] for entry in FAMILIES.values()}
    added = {"pythonic", "llama4_pythonic", "olmo3", "llama4_json", "granite", "granite_20b_fc", "internlm",
             "jamba", "xlam", "phi4_mini_json", "hunyuan_a13b", "step3", "ernie45", "longcat", "gigachat3",
             "apertus", "lfm2", "cohere_command3", "cohere_command4", "gemma4", "functiongemma", "granite4"}
    assert added <= detected
    # the rest are modes or aliases of detected families, chosen by name
    aliases = {"qwen3_xml": "qwen3_coder", "mimo": "qwen3_coder", "nemotron_v3": "qwen3_coder",
               "step3p5": "qwen3_coder", "minimax_m2_append_think": "minimax_m2"}
    assert aliases.keys() <= set(parsing.formats())
    for alias, family in aliases.items():
        assert parsing.call_syntax(alias) == parsing.call_syntax(family)


def test_prompt_opens_reasoning() -> None:
    assert parsing.prompt_opens_reasoning("longcat", "[Round 0] USER:hi ASSISTANT:<longcat_think>\n")
    assert not parsing.prompt_opens_reasoning("longcat", "[Round 0] USER:hi ASSISTANT:")
    assert parsing.prompt_opens_reasoning("step3", "<|BOT|>assistant\n")  # its template always opens it
    assert parsing.prompt_opens_reasoning("qwen3", "<|im_start|>assistant\n<think>\n")
    assert not parsing.prompt_opens_reasoning("hermes", "<|im_start|>assistant\n")
    assert not parsing.prompt_opens_reasoning("gpt_oss", "<|start|>assistant")
