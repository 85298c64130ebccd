"""Format specs: the data that describes one model family's reasoning and tool-call syntax."""
from __future__ import annotations

from dataclasses import dataclass, field


def _tuple(value: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _normalize(obj: object, *names: str) -> None:
    """Let a frozen spec take one string or several for its marker fields; store tuples."""
    for name in names:
        object.__setattr__(obj, name, _tuple(getattr(obj, name)))


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning tags. `ends` are tool openers that also end reasoning (an implicit close).

    `alt_open` / `alt_close` are other spellings of the tags (Granite's "Here's ...").
    `starts_open`: the family's template always opens reasoning in the prompt, so the output
    starts inside it whatever the request says (Step-3, ERNIE-4.5 thinking). `drop_stray`:
    a close tag met in content is dropped (off for tags that are plain sentences). `label`
    is framing dropped at the start of reasoning.
    """
    open: str
    close: str
    ends: tuple[str, ...] = ()
    alt_open: tuple[str, ...] = ()
    alt_close: tuple[str, ...] = ()
    starts_open: bool = False
    drop_stray: bool = True
    label: str = ""  # a channel label written right after the open tag (Gemma 4's "thought\n")

    @property
    def opens(self) -> tuple[str, ...]:
        return (self.open, *self.alt_open)

    @property
    def closes(self) -> tuple[str, ...]:
        return (self.close, *self.alt_close)


@dataclass(frozen=True, slots=True)
class Envelope:
    """Calls written as JSON objects: {"name": ..., "arguments": {...}}, maybe in a list.

    `keyed`: the object is {NAME: {arguments}} instead (Apertus).
    """
    name_keys: tuple[str, ...] = ("name",)
    args_keys: tuple[str, ...] = ("arguments", "parameters")
    id_keys: tuple[str, ...] = ("id",)
    separators: str = ",;"
    keyed: bool = False


@dataclass(frozen=True, slots=True)
class Header:
    """A name (and maybe an id) written before the call's arguments.

    `patterns` are regexes tried in order on the text between the call opener and the
    arguments' opener; they capture `name` and optionally `id` (a model-written call id).
    A pattern without a `name` group matches an id alone: the name is then guessed from the
    arguments' keys and the request's tools (Kimi's bare counter ids).
    `args` is "json" (a JSON object follows) or the name of a literal dialect
    (`parsing.literals`: "python" keyword arguments in parentheses, "gemma" and
    "function_gemma" objects with bare keys), converted to a JSON object. `head_chars` limits what a name header may
    contain (a regex character class): anything else means the text is not a call.
    A body may hold several calls: `list_open` / `list_close` wrap them and `separators`
    stand between them (pythonic `[f(a=1), g()]`, Olmo's one call per line).
    """
    patterns: tuple[str, ...]
    args: str = "json"
    head_chars: str = ""
    list_open: str = ""
    list_close: str = ""
    separators: str = ""


@dataclass(frozen=True, slots=True)
class Xml:
    """Arguments as XML-like parameters, typed by the tool schema (or a `string` attribute).

    The call header runs from the call opener to one of `name_stop` (consumed when it is
    also in `name_eat`); a parameter header runs from one of `param_open` to `param_stop`;
    the value follows `value_open` when the format has one (the value starts anyway when
    the model leaves it out) and ends at one of `value_close`. `json_body`: a call may hold
    one JSON object instead of parameters (SGLang's DSML variant).
    """
    name_pattern: str
    name_stop: str
    name_eat: str
    param_open: str | tuple[str, ...]
    param_stop: str
    param_pattern: str
    value_close: str | tuple[str, ...]
    strip_newline: bool
    value_open: str = ""  # an optional tag between the parameter header and its value
    json_body: bool = False

    def __post_init__(self) -> None:
        _normalize(self, "param_open", "value_close")


@dataclass(frozen=True, slots=True)
class Format:
    """One format: a reasoning syntax, a tool block syntax and a body reader's data.

    A block (`block_open` .. one of `block_close`) holds calls. When `call_open` is set,
    calls inside the block are framed by `call_open` .. `call_close` and the text between
    them is noise; otherwise the body starts right after the block opener. `bare_calls` lets
    a call opener start a call outside a block. `start_triggers` open a block only as the
    first thing of the answer (the output's start, or right after reasoning ends; `keep`
    ones are part of the body, like llama's `{`; `start_drop` ones are framing that is
    dropped there). `drop_closers` off keeps closers met in content (xLAM's closing code
    fence is a common content string). `content_prefix` is content sent before
    the output (MiniMax's append-think mode sends `<think>`). `token_markers` are markers
    that may reach the stream only as token ids (control tokens under skip_special_tokens)
    besides those the scanner already knows.
    """
    name: str
    reasoning: Reasoning | None
    body: Envelope | Header | Xml | None
    block_open: tuple[str, ...] = ()
    block_close: str | tuple[str, ...] | None = None
    call_open: tuple[str, ...] = ()
    call_close: str | tuple[str, ...] | None = None
    bare_calls: bool = False
    start_triggers: tuple[str, ...] = ()
    keep_triggers: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    id_style: str = "openai"
    harmony: bool = False
    start_drop: tuple[str, ...] = ()  # framing dropped at the answer's start (Hunyuan's "助手：")
    drop_closers: bool = True  # a block or call closer met in content is dropped
    content_prefix: str = ""
    token_markers: tuple[str, ...] = ()
    syntax: tuple[tuple[str, object], ...] = field(default=())

    def __post_init__(self) -> None:
        _normalize(self, "block_close", "call_close")
