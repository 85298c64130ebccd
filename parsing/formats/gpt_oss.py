"""gpt-oss (harmony): channels carry reasoning, content and calls; headers decide which."""
from __future__ import annotations

from parsing.spec import Envelope, Format

GPT_OSS = Format(
    name="gpt_oss",
    reasoning=None,
    body=Envelope(),  # unused: harmony headers start a header reader with the name known
    call_close="<|call|>",
    harmony=True,
    syntax=(("args", "json"), ("trigger", "<|channel|>commentary to=functions."),
            ("begin", "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"),
            ("end", "<|call|>"), ("separator", "")),
)

FORMATS = (GPT_OSS,)
