"""Format specs: the data that describes one model family's reasoning and tool-call syntax."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning tags. `ends` are tool openers that also end reasoning (an implicit close)."""
    open: str
    close: str
    ends: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Envelope:
    """Calls written as JSON objects: {"name": ..., "arguments": {...}}, maybe in a list."""
    name_keys: tuple[str, ...] = ("name",)
    args_keys: tuple[str, ...] = ("arguments", "parameters")
    id_keys: tuple[str, ...] = ("id",)
    separators: str = ",;"


@dataclass(frozen=True, slots=True)
class Header:
    """A name (and maybe an id) written before a JSON arguments object.

    `patterns` are regexes tried in order on the text between the call opener and the
    arguments' `{`; they capture `name` and optionally `id` (a model-written call id).
    """
    patterns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Xml:
    """Arguments as XML-like parameters, typed by the tool schema (or a `string` attribute).

    The call header runs from the call opener to one of `name_stop` (consumed when it is
    also in `name_eat`); a parameter header runs from `param_open` to `param_stop`; the
    value follows `value_open` when the format has one (the value starts anyway when the
    model leaves it out).
    """
    name_pattern: str
    name_stop: str
    name_eat: str
    param_open: str
    param_stop: str
    param_pattern: str
    value_close: str
    strip_newline: bool
    value_open: str = ""  # an optional tag between the parameter header and its value


@dataclass(frozen=True, slots=True)
class Format:
    """One format: a reasoning syntax, a tool block syntax and a body reader's data.

    A block (`block_open` .. `block_close`) holds calls. When `call_open` is set, calls
    inside the block are framed by `call_open` .. `call_close` and the text between them
    is noise; otherwise the body starts right after the block opener. `bare_calls` lets a
    call opener start a call outside a block. `start_triggers` open a block only as the
    first thing in the output (`keep` ones are part of the body, like llama's `{`).
    """
    name: str
    reasoning: Reasoning | None
    body: Envelope | Header | Xml | None
    block_open: tuple[str, ...] = ()
    block_close: str | None = None
    call_open: tuple[str, ...] = ()
    call_close: str | None = None
    bare_calls: bool = False
    start_triggers: tuple[str, ...] = ()
    keep_triggers: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    id_style: str = "openai"
    harmony: bool = False
    syntax: tuple[tuple[str, object], ...] = field(default=())
