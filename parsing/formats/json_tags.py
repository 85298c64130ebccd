"""Formats whose calls are JSON objects: hermes, qwen3, llama3_json, mistral, mistral_legacy."""
from __future__ import annotations

from parsing.spec import Envelope, Format, Header, Reasoning

THINK = Reasoning("<think>", "</think>")
CHATML_ENDS = ("<|im_end|>", "<|endoftext|>")  # end tokens, in case they are not stripped

HERMES = Format(
    name="hermes",
    reasoning=Reasoning("<scratch_pad>", "</scratch_pad>"),  # Hermes-2-Pro's planning area
    body=Envelope(),
    block_open=("<tool_call>",),
    block_close="</tool_call>",
    drop=CHATML_ENDS,
    syntax=(("args", "json"), ("trigger", "<tool_call>"),
            ("begin", '<tool_call>\n{"name": "{name}", "arguments": '),
            ("end", "}\n</tool_call>"), ("separator", "\n")),
)

QWEN3 = Format(
    name="qwen3",
    reasoning=THINK,
    body=Envelope(),
    block_open=("<tool_call>",),
    block_close="</tool_call>",
    drop=CHATML_ENDS,
    syntax=HERMES.syntax,
)

LLAMA3_JSON = Format(
    name="llama3_json",
    reasoning=None,
    body=Envelope(),
    start_triggers=("<|python_tag|>",),
    keep_triggers=("{",),
    drop=("<|eom_id|>", "<|eot_id|>"),
    syntax=(("args", "json"), ("trigger", "{"), ("begin", '{"name": "{name}", "parameters": '),
            ("end", "}"), ("separator", "; ")),
)

MISTRAL = Format(
    name="mistral",
    reasoning=Reasoning("[THINK]", "[/THINK]"),
    body=Header((r"\s*(?P<name>[^\[\]\s]+)\s*(?:\[CALL_ID\]\s*(?P<id>[A-Za-z0-9]+)\s*)?\[ARGS\]\s*",)),
    block_open=("[TOOL_CALLS]",),
    id_style="mistral",
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

FORMATS = (HERMES, QWEN3, LLAMA3_JSON, MISTRAL, MISTRAL_LEGACY)
