"""Compiled formats: each Format's Machine and body plan, and the reader factory per stream."""
from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Callable

from parsing import machine as M
from parsing.formats import REGISTRY
from parsing.harmony import MESSAGE, HarmonyHeaderReader
from parsing.header_calls import HeaderReader
from parsing.json_calls import EnvelopeReader, JsonPlan, json_plan
from parsing.sink import Sink
from parsing.spec import Envelope, Format, Header, Xml
from parsing.xml_calls import XmlCallReader, XmlPlan, xml_plan


@dataclass(frozen=True, slots=True)
class Compiled:
    """A format ready to open streams: its state machine and its call-body plan."""
    machine: M.Machine
    plan: JsonPlan | XmlPlan | None


def compile_one(fmt: Format) -> Compiled:
    body = fmt.body
    if isinstance(body, Xml):
        plan: JsonPlan | XmlPlan | None = xml_plan(body, fmt.call_close, fmt.block_close, fmt.call_open)
    elif isinstance(body, (Envelope, Header)):
        plan = json_plan(body, fmt.call_close, fmt.block_close)
    else:
        plan = None
    return Compiled(M.compile_format(fmt), plan)


def special_markers(c: Compiled) -> tuple[str, ...]:
    """Every marker string the format's scanner and readers look for (and its token markers):
    the strings a tokenizer may turn into single control tokens."""
    found = {m for lex in c.machine.lexicons for m in lex.markers}
    found |= {t for starts in c.machine.starts for t, _ in starts}
    for attr in ("closers", "params", "param_stop", "value"):
        lex = getattr(c.plan, attr, None)
        if lex is not None:
            found |= set(lex.markers)
    if c.machine.fmt.harmony:
        found |= {MESSAGE, "<|constrain|>"}
    found |= set(c.machine.fmt.token_markers)
    return tuple(sorted(found))


def without_calls(fmt: Format) -> Format:
    """The same format with its tool-call syntax removed (for tool_choice "none")."""
    reasoning = fmt.reasoning and replace(fmt.reasoning, ends=())
    return replace(fmt, reasoning=reasoning, body=None, block_open=(), block_close=None, call_open=(),
                   call_close=None, bare_calls=False, start_triggers=(), keep_triggers=())


COMPILED: MappingProxyType[str, Compiled] = MappingProxyType(
    {name: compile_one(fmt) for name, fmt in REGISTRY.items()}
)
COMPILED_NO_CALLS: MappingProxyType[str, Compiled] = MappingProxyType(
    {name: compile_one(without_calls(fmt)) for name, fmt in REGISTRY.items()}
)


def _builtin(obj: object) -> object:
    """Plain data for a tool given as a dict or as a typed struct (msgspec or dataclass)."""
    if isinstance(obj, dict):
        return obj
    try:
        import msgspec
        return msgspec.to_builtins(obj)
    except (ImportError, TypeError):
        return None


def _tool_parameters(tools: list | None) -> dict[str, dict]:
    """Map each tool's name to its `parameters` schema (a dict, maybe empty)."""
    found: dict[str, dict] = {}
    for tool in tools or ():
        tool = _builtin(tool)
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function", tool)
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            found[fn["name"]] = params if isinstance(params, dict) else {}
    return found


def tool_properties(tools: list | None) -> dict[str, dict]:
    """Map each tool's name to its parameters' `properties` schema."""
    props: dict[str, dict] = {}
    for name, params in _tool_parameters(tools).items():
        p = params.get("properties")
        props[name] = p if isinstance(p, dict) else {}
    return props


def tool_keys(tools: list | None) -> dict[str, tuple[frozenset, frozenset]]:
    """Map each tool's name to (its parameter names, its required parameter names)."""
    keys = {}
    for name, params in _tool_parameters(tools).items():
        props, required = params.get("properties"), params.get("required")
        keys[name] = (frozenset(props) if isinstance(props, dict) else frozenset(),
                      frozenset(r for r in required if isinstance(r, str)) if isinstance(required, list)
                      else frozenset())
    return keys


def reader_factory(c: Compiled, tools: list[dict] | None) -> Callable[[Sink, str, str], object]:
    """The function a stream calls to start reading a call body at a marker."""
    fmt, plan = c.machine.fmt, c.plan
    props = tool_properties(tools) if isinstance(plan, XmlPlan) else {}
    keys = tool_keys(tools) if isinstance(plan, JsonPlan) and plan.guess else None

    def new_reader(sink: Sink, action: str, marker: str) -> object:
        if action == M.HEADER:
            return HarmonyHeaderReader(sink, plan, marker)
        if isinstance(plan, XmlPlan):
            return XmlCallReader(sink, plan, props)
        if isinstance(fmt.body, Envelope):
            return EnvelopeReader(sink, plan, array=action == M.BLOCK and marker.endswith("["))
        return HeaderReader(sink, plan, keys=keys)

    return new_reader
