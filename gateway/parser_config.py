"""The server's parser formats, chosen once at startup: --tool-parser / --reasoning-parser resolved
against the model's chat template, and the control-token ids of each format's markers."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import parsing

log = logging.getLogger("gateway")


@dataclass(frozen=True, slots=True)
class ParserConfig:
    """Which output format to parse; from the CLI's --tool-parser / --reasoning-parser: a format
    name of parsing/, "auto" (detected from the chat template at startup, the default) or
    "none" / None (off). `marker_ids` (filled at startup) maps each format to its markers'
    control-token ids."""

    tool_parser: str | None = "auto"
    reasoning_parser: str | None = "auto"
    marker_ids: Mapping[str, Mapping[int, str]] = field(default_factory=lambda: MappingProxyType({}))


def resolve_parsers(config: ParserConfig, tokenizer: Any) -> ParserConfig:
    """Replaces "auto" by the detected format, or by None (logged) when the template shows none;
    "none" becomes None; raises ValueError for an unknown format name."""
    wanted = [None if name in (None, "none") else name for name in (config.tool_parser, config.reasoning_parser)]
    if not any(wanted):
        return ParserConfig(None, None)
    detected = None
    if "auto" in wanted:
        template = getattr(tokenizer, "chat_template", None) or ""
        detected = parsing.detect_format(template, list(getattr(tokenizer, "all_special_tokens", [])))
        if detected is None:
            log.warning("No tool-call or reasoning format detected in this model's chat template: requests with "
                        "tools get them in the prompt and plain content back (name one with --tool-parser / "
                        "--reasoning-parser)")  # fmt: skip
    names = []
    for name in wanted:
        name = detected if name == "auto" else name
        if name is not None and name not in parsing.formats():
            raise ValueError(f"unknown parser format {name!r}; known: {', '.join(parsing.formats())}, auto, none")
        names.append(name)
    ids = MappingProxyType({n: marker_token_ids(tokenizer, parsing.marker_tokens(n)) for n in set(names) if n})
    return ParserConfig(tool_parser=names[0], reasoning_parser=names[1], marker_ids=ids)


def marker_token_ids(tokenizer: Any, markers: Sequence[str]) -> Mapping[int, str]:
    """The markers that are single tokens which skip_special_tokens drops, by token id."""
    found: dict[int, str] = {}
    convert = getattr(tokenizer, "convert_tokens_to_ids", None)
    if convert is None:
        return MappingProxyType(found)
    for marker in markers:
        try:
            token_id = convert(marker)
            if not isinstance(token_id, int) or token_id == getattr(tokenizer, "unk_token_id", None):
                continue
            if (tokenizer.decode([token_id], skip_special_tokens=False) == marker
                    and tokenizer.decode([token_id], skip_special_tokens=True) == ""):
                found[token_id] = marker
        except (TypeError, ValueError, KeyError, IndexError, OverflowError):  # the marker stays text-only
            continue
    return MappingProxyType(found)
