"""Pushdown configurations over the lazy DFA: expanding calls/returns and stepping bytes."""

from __future__ import annotations

from collections.abc import Callable

from grammar.automaton.constants import MAX_CONFIGS, MAX_STACK
from grammar.automaton.dfa import LazyDfa

Config = tuple[tuple[int, ...], int]   # (stack of return dstates, current dstate)
States = frozenset[Config]


def expand(dfa: LazyDfa, configs: States) -> set[Config]:
    """All configurations reachable without consuming a byte (returns from final states, calls)."""
    seen = set(configs)
    todo = list(configs)
    is_final, has_calls = dfa.is_final, dfa.has_calls
    while todo:
        stack, d = todo.pop()
        if stack and is_final[d]:
            c = (stack[:-1], stack[-1])
            if c not in seen:
                seen.add(c)
                todo.append(c)
        if has_calls[d] and len(stack) < MAX_STACK:
            for rule, ret in dfa.calls(d):
                c = (stack + (ret,), dfa.rule_start[rule])
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        if len(seen) > MAX_CONFIGS:
            break
    return seen


def is_complete(dfa: LazyDfa, configs: States) -> bool:
    """True when the whole grammar may end here (EOS allowed)."""
    return any(not stack and dfa.is_final[d] for stack, d in expand(dfa, configs))


def advance(dfa: LazyDfa, configs: States, data: bytes) -> States:
    """Configurations after consuming `data`; empty when it is rejected."""
    cur = configs
    for b in data:
        nxt: set[Config] = set()
        if len(cur) == 1:
            (stack, d), = cur
            t = dfa.step(d, b)
            if t >= 0 and not dfa.has_calls[d] and not (stack and dfa.is_final[d]):
                cur = frozenset(((stack, t),))
                continue
        for stack, d in expand(dfa, cur):
            t = dfa.step(d, b)
            if t >= 0:
                nxt.add((stack, t))
        if not nxt:
            return frozenset()
        cur = frozenset(nxt)
    return cur


def advance_by(dfa: LazyDfa, configs: States, data: bytes, run: Callable[..., tuple[int, int]]) -> States:
    """`advance`, with one configuration's bytes run by the walk's `run` (C) up to a call or a
    return, the pushdown step only after it (a compiled grammar's advance; the likely path's)."""
    if len(configs) == 1:
        ((stack, d),) = configs
        s, pos = run(dfa, d, data, 0, bool(stack))
        if s < 0:
            return frozenset()
        configs = frozenset(((stack, s),))
        if pos == len(data):
            return configs
        data = data[pos:]  # stopped before a call or a return: the pushdown step below
    return advance(dfa, configs, data)
