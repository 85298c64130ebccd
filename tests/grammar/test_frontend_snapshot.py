"""The JSON Schema front end builds the same automata: NFA tables of the bundled schemas against recorded digests.

The digests (data/frontend_nfa.json) were recorded from the front end before its speed work
(issue 17); a change of the front end or of the NFA builder that changes any automaton, or a
refusal's message, fails here. Schemas whose tables depend on the string hash seed (set order
in the presence graph of `dependencies`) are recorded as such and skipped. To record anew after
an intended change (say why in the commit):

    .venv/bin/python tests/grammar/test_frontend_snapshot.py --write
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repository's packages first
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from grammar.automaton.nfa import build_nfa  # noqa: E402
from grammar.errors import GrammarError  # noqa: E402
from grammar.frontends.json_schema import compile_schema_to_grammar  # noqa: E402

DATA = Path(__file__).parent / "data" / "jsonschemabench-subset.jsonl.gz"
DIGESTS = Path(__file__).parent / "data" / "frontend_nfa.json"
MODES = [(ws, strict) for ws in ("compact", "flexible") for strict in (False, True)]
SEEDS = ("0", "1", "2")
# Beside the bundled ones: what the cached fragments meet (escaped and non-ASCII keys, equal
# number nodes side by side, enums, the `@any` rule) and refusals.
EXTRA = [
    {"type": "object", "properties": {"a\"b": {"type": "number"}, "ü/~x": {"type": "integer", "minimum": -0.0, "maximum": 10},
                                      "\n": {"type": "boolean"}, "": {"type": "null"}}, "required": ["a\"b"]},
    {"type": "object", "additionalProperties": {"type": "string"},
     "properties": {"日本": {}, "日本語": {}, "x": {}, "xy": {"type": "null"}, "é": {}, "😀x": {}, "ab": {}, "abc": {}}},
    {"anyOf": [{"type": "number"}, {"type": "number"}, {"type": "integer"}, {"type": "integer"}, {"type": "boolean"}]},
    {"anyOf": [{"type": "number", "minimum": 1.5, "maximum": 7.25}, {"type": "number", "minimum": 1.5, "maximum": 7.25},
               {"type": "number", "minimum": -0.0}, {"type": "number", "maximum": 0.0, "exclusiveMaximum": True},
               {"type": "integer", "minimum": 3.0, "maximum": 3000}, {"type": "integer", "minimum": 3, "maximum": 3000}]},
    {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 5, "maxItems": 40},
    {"type": "array", "items": {"type": "number", "multipleOf": 0.01, "minimum": -5, "exclusiveMaximum": 5}},
    {"enum": ["a", "b", 1, 2.0, None, {"x": [1]}, "a"]},
    {"enum": ["a", "bb", "ccc", 7], "maxLength": 2},
    {"const": {"k": 1}, "type": "object", "properties": {"k": {"type": "integer"}}},
    {"type": "object", "properties": {"a": {}, "b": True, "c": {"type": "array", "items": True}}},
    {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer", "minimum": 0}},
    {"type": "string", "format": "nope"},
    {"if": {"type": "string"}},
    {"type": "integer", "multipleOf": 0.5},
    {"type": "object", "patternProperties": {"(": {}}},
    {"type": "object", "properties": {"a": {"type": "unknown"}}},
    {"$ref": "http://example.com/schema"},
    {"type": "object", "minProperties": 2, "dependencies": {"a": ["b"]}},
    {"type": "object", "properties": {"a": False}, "required": ["a"]},
]


def digest(schema: object, ws: str, strict: bool) -> str:
    """The NFA tables' sha256 (16 hex digits), or the refusal's message."""
    try:
        nfa = build_nfa(compile_schema_to_grammar(schema, ws, strict))
    except GrammarError as exc:
        return f"error: {exc}"
    tables = (nfa.byte_edges, nfa.eps, nfa.calls, nfa.rule_start, nfa.rule_final, nfa.rule_names)
    return hashlib.sha256(repr(tables).encode()).hexdigest()[:16]


def digests() -> dict[str, str]:
    rows = [json.loads(line) for line in gzip.open(DATA, "rt")]
    schemas = [(row["id"], row["schema"]) for row in rows] + [(f"extra{i}", schema) for i, schema in enumerate(EXTRA)]
    return {f"{name} {ws} {'strict' if strict else 'open'}": digest(schema, ws, strict)
            for name, schema in schemas for ws, strict in MODES}


def test_front_end_builds_the_recorded_automata():
    recorded = json.loads(DIGESTS.read_text())
    now = digests()
    assert set(now) == set(recorded["digests"]) | set(recorded["seed_dependent"])
    changed = [key for key, value in recorded["digests"].items() if now[key] != value]
    assert not changed, f"automata or refusals changed for {changed[:10]} ({len(changed)} in all)"


def _write() -> None:
    """Digests under several hash seeds (each in its own process); those that differ are seed-dependent."""
    runs = []
    for seed in SEEDS:
        out = subprocess.run([sys.executable, __file__, "--print"], env={**os.environ, "PYTHONHASHSEED": seed},
                             check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out))
    stable = {k: v for k, v in runs[0].items() if all(run[k] == v for run in runs)}
    record = {"digests": stable, "seed_dependent": sorted(set(runs[0]) - set(stable))}
    DIGESTS.write_text(json.dumps(record, indent=0, sort_keys=True) + "\n")
    print(f"{len(stable)} digests, {len(record['seed_dependent'])} seed-dependent -> {DIGESTS}")


if __name__ == "__main__":
    if "--print" in sys.argv:
        print(json.dumps(digests()))
    elif "--write" in sys.argv:
        _write()
