"""Shared test data: the Case type and the tool definitions the corpus uses."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    """One realistic output and what parsing it must give (arguments compared as JSON)."""
    fmt: str
    name: str
    text: str
    reasoning: str | None = None
    content: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    ids: tuple[str, ...] | None = None  # model-written ids to check, when the format has them
    starts_in_reasoning: bool = False
    tools: list[dict] | None = field(default=None)

    @property
    def id(self) -> str:
        return f"{self.fmt}-{self.name}"


def _tool(name: str, props: dict[str, Any]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": name,
        "parameters": {"type": "object", "properties": props}}}


TOOLS = [
    _tool("get_weather", {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "zip": {"type": "string"},
    }),
    _tool("run_code", {
        "code": {"type": "string"},
        "timeout": {"type": "number"},
        "verbose": {"type": "boolean"},
        "env": {"type": "object"},
        "args": {"type": "array", "items": {"type": "string"}},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "mode": {"type": ["boolean", "string"]},
    }),
    _tool("get_time", {}),
]
