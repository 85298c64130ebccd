"""Machine: a Format compiled into per-state lexicons and marker actions (built once)."""
from __future__ import annotations

from dataclasses import dataclass

from parsing.lexicon import Lexicon
from parsing.spec import Format

# scanner states
REASONING, CONTENT, SECTION, SKIP, READER = range(5)

# marker actions
TO_REASONING = "to_reasoning"
TO_CONTENT = "to_content"
DROP = "drop"
BLOCK = "block"  # enter a tool block (and its body, when calls are not framed)
BLOCK_AT = "block_at"  # same, but the marker is the body's first text (llama's "{")
CALL = "call"  # start reading one call
BLOCK_CALL = "block_call"  # a block opener immediately followed by a call opener
END_CALL = "end_call"
END_BLOCK = "end_block"
HEADER = "header"  # harmony message header

HARMONY_HEADERS = ("<|start|>", "<|channel|>")
HARMONY_ENDS = ("<|end|>", "<|return|>", "<|call|>")


@dataclass(frozen=True, slots=True)
class Machine:
    """Immutable compiled form of a Format; shared by all streams of that format."""
    fmt: Format
    lexicons: tuple[Lexicon, ...]  # [state] for REASONING, CONTENT, SECTION, SKIP
    actions: tuple[dict[str, str], ...]  # [state] marker -> action
    # first-text triggers: [REASONING], [CONTENT] at the output's start, [2] at the answer's
    # start (right after reasoning ended)
    starts: tuple[tuple[tuple[str, str], ...], ...]


def _reasoning_actions(fmt: Format) -> dict[str, str]:
    acts: dict[str, str] = {}
    if fmt.harmony:
        acts.update({m: HEADER for m in HARMONY_HEADERS})
        acts["<|end|>"] = TO_CONTENT
        return acts
    if fmt.reasoning is None:
        return acts
    for close in fmt.reasoning.closes:
        acts[close] = TO_CONTENT
    for end in fmt.reasoning.ends:
        if end in fmt.block_open:
            acts[end] = BLOCK
        elif end in fmt.call_open:
            acts[end] = CALL
        else:
            acts[end] = BLOCK_CALL
    return acts


def _content_actions(fmt: Format) -> dict[str, str]:
    acts: dict[str, str] = {m: DROP for m in fmt.drop}
    if fmt.harmony:
        acts.update({m: DROP for m in HARMONY_ENDS})
        acts.update({m: HEADER for m in HARMONY_HEADERS})
        return acts
    if fmt.reasoning is not None and fmt.reasoning.drop_stray:
        acts.update({m: DROP for m in fmt.reasoning.closes})
    if fmt.drop_closers:
        acts.update({m: DROP for m in fmt.block_close + fmt.call_close})
    if fmt.bare_calls:
        acts.update({m: CALL for m in fmt.call_open})
    acts.update({m: BLOCK for m in fmt.block_open})
    return acts


def _section_actions(fmt: Format) -> dict[str, str]:
    acts = {m: CALL for m in fmt.call_open}
    acts.update({m: END_BLOCK for m in fmt.block_close})
    return acts


def _skip_actions(fmt: Format) -> dict[str, str]:
    acts = {m: END_CALL for m in fmt.call_close}
    acts.update({m: END_BLOCK for m in fmt.block_close})
    return acts


def compile_format(fmt: Format) -> Machine:
    """Build the Machine for one Format."""
    actions = (_reasoning_actions(fmt), _content_actions(fmt), _section_actions(fmt), _skip_actions(fmt))
    lexicons = tuple(Lexicon(a) for a in actions)
    opens = fmt.reasoning.opens if fmt.reasoning is not None else ()
    triggers = (tuple((t, BLOCK) for t in fmt.start_triggers) + tuple((t, BLOCK_AT) for t in fmt.keep_triggers)
                + tuple((t, DROP) for t in fmt.start_drop))
    r_starts = tuple((t, DROP) for t in opens)
    if fmt.reasoning is not None and fmt.reasoning.label:
        r_starts += ((fmt.reasoning.label, DROP),)
    c_starts = tuple((t, TO_REASONING) for t in opens) + triggers
    return Machine(fmt, lexicons, actions, (r_starts, c_starts, triggers))
