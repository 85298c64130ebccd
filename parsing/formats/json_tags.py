"""Formats whose calls are JSON objects in or after tags: hermes, qwen3, ernie45, granite4, ..."""
from __future__ import annotations

from parsing.spec import Envelope, Format, Header, Reasoning

THINK = Reasoning("<think>", "</think>")
CHATML_ENDS = ("<|im_end|>", "<|endoftext|>")  # end tokens, in case they are not stripped


def _tagged(name: str, reasoning: Reasoning | None, open_: str, close: str, drop: tuple[str, ...],
            **kw) -> Format:
    """A hermes-like format: one {"name", "arguments"} object per `open_` .. `close` block."""
    return Format(
        name=name,
        reasoning=reasoning,
        body=Envelope(),
        block_open=(open_,),
        block_close=close,
        drop=drop,
        syntax=(("args", "json"), ("trigger", open_), ("begin", open_ + '\n{"name": "{name}", "arguments": '),
                ("end", "}\n" + close), ("separator", "\n")),
        **kw,
    )


# Hermes-2-Pro's planning area <scratch_pad> is its reasoning
HERMES = _tagged("hermes", Reasoning("<scratch_pad>", "</scratch_pad>"), "<tool_call>", "</tool_call>",
                 CHATML_ENDS)
QWEN3 = _tagged("qwen3", THINK, "<tool_call>", "</tool_call>", CHATML_ENDS)
# ERNIE-4.5 thinking: the prompt opens reasoning (the output has only </think>), the answer
# may sit in <response> .. </response>
ERNIE45 = _tagged("ernie45", Reasoning("<think>", "</think>", ("<tool_call>",), starts_open=True), "<tool_call>",
                  "</tool_call>",
                  ("<response>", "</response>", "</s>"))
# IBM Granite 4: hermes-like <tool_call>{...}</tool_call> (Granite 3 wrote a list after <|tool_call|>)
GRANITE4 = _tagged("granite4", None, "<tool_call>", "</tool_call>", ("<|end_of_text|>",))
LONGCAT = _tagged("longcat", Reasoning("<longcat_think>", "</longcat_think>"), "<longcat_tool_call>",
                  "</longcat_tool_call>", ("</longcat_s>", "<|im_end|>"))
# InternLM2 / 2.5: <|action_start|><|plugin|>{"name", "parameters"}<|action_end|>
INTERNLM = _tagged("internlm", None, "<|action_start|><|plugin|>", "<|action_end|>", ("<|im_end|>",),
                   token_markers=("<|action_start|>", "<|plugin|>"))
# GigaChat 3: content, then "function call<|role_sep|>" and one JSON object; GigaChat 3.1 also
# writes the call after its own <|function_call|> token (both are taken, as vLLM's parser does)
GIGACHAT3 = Format(
    name="gigachat3",
    reasoning=None,
    body=Envelope(),
    block_open=("function call<|role_sep|>", "<|function_call|>"),
    drop=("<|message_sep|>", "</s>"),
    token_markers=("<|role_sep|>", "<|function_call|>"),
    syntax=(("args", "json"), ("trigger", "function call<|role_sep|>"),
            ("begin", 'function call<|role_sep|>\n{"name": "{name}", "arguments": '), ("end", "}"),
            ("separator", "")),
)

MISTRAL = Format(
    name="mistral",
    reasoning=Reasoning("[THINK]", "[/THINK]"),
    body=Header((r"\s*(?P<name>[^\[\]\s]+)\s*(?:\[CALL_ID\]\s*(?P<id>[A-Za-z0-9]+)\s*)?\[ARGS\]\s*",)),
    block_open=("[TOOL_CALLS]",),
    id_style="mistral",
    token_markers=("[ARGS]", "[CALL_ID]"),
    syntax=(("args", "json"), ("trigger", "[TOOL_CALLS]"), ("begin", "[TOOL_CALLS]{name}[ARGS]"),
            ("end", ""), ("separator", "")),
)

MISTRAL_LEGACY = Format(
    name="mistral_legacy",
    reasoning=None,
    body=Envelope(separators=","),
    block_open=("[TOOL_CALLS]",),
    id_style="mistral",
    syntax=(("args", "json"), ("trigger", "[TOOL_CALLS]"), ("block_begin", "[TOOL_CALLS]["),
            ("begin", '{"name": "{name}", "arguments": '), ("end", "}"), ("separator", ", "),
            ("block_end", "]")),
)

FORMATS = (HERMES, QWEN3, ERNIE45, GRANITE4, LONGCAT, INTERNLM, GIGACHAT3, MISTRAL, MISTRAL_LEGACY)
