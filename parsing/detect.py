"""detect_format: pick a parser format from a chat template and the tokenizer's special tokens."""
from __future__ import annotations

# (format, strings that must all appear) in priority order: the first full match wins. A family
# whose template also holds another family's markers comes before that family (Granite and
# InternLM write ChatML-like tags, xLAM wraps Llama 3, Llama 3.2's pythonic template keeps
# Llama 3's python tag, Hunyuan's and ERNIE's templates mention <think>).
_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("gpt_oss", ("<|channel|>",)),
    ("deepseek_v4", ("｜DSML｜", "tool_calls")),
    ("deepseek_v32", ("｜DSML｜",)),
    ("deepseek_v3", ("<｜tool▁calls▁begin｜>", "```json")),
    ("deepseek_v31", ("<｜tool▁calls▁begin｜>",)),
    ("functiongemma", ("<start_function_call>",)),
    ("gemma4", ("<|tool_call>",)),
    ("gemma4", ("<|channel>",)),
    ("step3", ("<｜tool_calls_begin｜>",)),
    ("step3", ("<steptml:invoke",)),
    ("kimi_k2", ("<|tool_calls_section_begin|>",)),
    ("kimi_k2", ("<|tool_call_section_begin|>",)),
    ("minimax_m2", ("<minimax:tool_call>",)),
    ("minimax_m2", ("]~b]",)),
    ("seed_oss", ("<seed:tool_call>",)),
    ("seed_oss", ("<seed:think>",)),
    ("cohere_command4", ("<|START_ACTION|>", "<|START_TEXT|>")),
    ("cohere_command3", ("<|START_ACTION|>",)),
    ("cohere_command3", ("<|START_THINKING|>",)),
    ("lfm2", ("<|tool_call_start|>",)),
    ("lfm2", ("<|tool_list_start|>",)),
    ("apertus", ("<|tools_prefix|>",)),
    ("apertus", ("<|inner_prefix|>",)),
    ("gigachat3", ("<|role_sep|>",)),
    ("hunyuan_a13b", ("<tool_calls>", "<|extra_0|>")),
    ("jamba", ("<|bom|>",)),
    ("internlm", ("<|action_start|>",)),
    ("granite_20b_fc", ("<function_call>",)),
    ("granite_20b_fc", ("<|function_call_library|>",)),
    ("granite", ("<|start_of_role|>", "<|tool_call|>")),
    ("granite4", ("<|start_of_role|>", "<tool_call>")),
    ("granite", ("<|start_of_role|>",)),
    ("phi4_mini_json", ("functools",)),
    ("longcat", ("<longcat_tool_call>",)),
    ("longcat", ("<longcat_think>",)),
    ("ernie45", ("<|begin_of_sentence|>", "<think>")),
    ("ernie45", ("<|begin_of_sentence|>", "<tool_call>")),
    ("xlam", ("xLAM",)),
    ("llama4_pythonic", ("<|header_start|>", "func_name1(")),
    ("llama4_json", ("<|header_start|>",)),
    ("pythonic", ("func_name1(",)),
    ("olmo3", ("<function_calls>", "<|im_start|>")),
    ("glm45", ("<arg_key>", "</arg_value>\\n")),
    ("glm45", ("<arg_key>", "</arg_value>\n")),
    ("glm47", ("<arg_key>",)),
    ("qwen3_coder", ("<function=", "<parameter=")),
    ("mistral", ("[TOOL_CALLS]", "[ARGS]")),
    ("mistral_legacy", ("[TOOL_CALLS]",)),
    ("llama3_json", ("<|python_tag|>",)),
    ("llama3_json", ("<|start_header_id|>", "parameters")),
    ("qwen3", ("<tool_call>", "<think>")),
    ("hermes", ("<tool_call>",)),
    ("deepseek_r1", ("<｜Assistant｜>", "<think>")),
    ("qwen3", ("<think>",)),
    ("hermes", ("<|im_start|>",)),  # ChatML models (SmolLM2, Qwen2.5, Hermes) call tools this way
)


def detect_format(chat_template: str, special_tokens: list[str]) -> str | None:
    """The format whose markers the template or the special tokens mention, or None."""
    haystack = (chat_template or "") + "\x00" + "\x00".join(special_tokens or ())
    for name, needles in _RULES:
        if all(n in haystack for n in needles):
            return name
    return None
