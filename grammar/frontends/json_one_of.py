"""A `oneOf` whose branches may overlap, as an `anyOf` of branches narrowed until no instance they allow is valid under another.

An instance is valid under `oneOf` when exactly one branch validates it. Each branch i is
compiled with what it allows of each JSON type narrowed so that none of it is valid under any
other branch j (the validity of j is judged as a validator does: a branch without `type` accepts
every type its keywords do not constrain): enum values valid under another branch are dropped;
an object is made to hold a discriminating property whose values j rejects (or whose values
under j are a finite set ours rejects), to hold a property a closed j never allows (declared or
matched by its patterns), to lack a property j requires, is a closed non-empty object whose names
a closed j never holds, or has a property j gives a schema (declared or by a pattern) narrowed
the same way one level down (MAX_NESTED_NARROWING); a non-empty array is kept when its items cannot be j's; a string is
kept outside j's regular language (grammar/frontends/regular.py); numbers by their bounds. A
type of branch i for which no such narrowing is found is left out of branch i: the grammar then
allows fewer instances than `oneOf`, never an invalid one.
"""

from __future__ import annotations

import re
from typing import Any

from grammar.errors import GrammarError
from grammar.frontends.json_closed import closed_copy, closes_object
from grammar.frontends.json_merge import ANNOTATIONS, EXCLUDE_STRINGS, FORBID, merge_all, one_of_disjoint
from grammar.frontends.json_patterns import names_apart

ALL_TYPES = frozenset({"null", "boolean", "object", "array", "string", "num"})
_STRING_KEYS = {"pattern", "minLength", "maxLength", "enum", "const"}
MAX_NESTED_NARROWING = 2  # levels of properties inside properties a branch is narrowed at


def _kind(t: str) -> str:
    return "num" if t in ("number", "integer") else t


def _value_kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "num"
    return {str: "string", list: "array", dict: "object"}.get(type(v), "?")


def _values(schema: dict[str, Any]) -> list[Any] | None:
    return [schema["const"]] if "const" in schema else schema.get("enum") if isinstance(schema.get("enum"), list) else None


def valid_kinds(schema: Any) -> frozenset[str]:
    """The JSON types for which some instance may be valid under `schema` (merged)."""
    if schema is True or not isinstance(schema, dict):
        return ALL_TYPES if schema is not False else frozenset()
    values = _values(schema)
    if values is not None:
        return frozenset(_value_kind(v) for v in values)
    declared = schema.get("type")
    if declared is None:
        return ALL_TYPES
    kinds = {_kind(t) for t in ([declared] if isinstance(declared, str) else declared)}
    if schema.get("nullable") is True:
        kinds.add("null")
    return frozenset(kinds)


class OneOf:
    """Narrows the branches of one `oneOf` (already merged with their siblings); `sc` is the
    schema compiler (grammar/frontends/json_schema.py), `where` the oneOf's pointer."""

    def __init__(self, sc: Any, branches: list[Any], where: str) -> None:
        self.sc = sc
        self.where = where
        self.branches = branches
        self.alts = [self._alternatives(b, f"{where}/{i}") for i, b in enumerate(branches)]  # as validators read them
        self.own = [self._alternatives(b, f"{where}/{i}", own=True) for i, b in enumerate(branches)]  # to compile
        self._checkers: dict[int, Any] = {}
        self.depth = 0  # properties narrowed inside properties (_narrow_member)

    def narrowed(self) -> list[Any]:
        """The branches to compile as an anyOf (an anyOf inside a branch: each of its alternatives)."""
        out = []
        for i, branch in enumerate(self.branches):
            if branch is True:
                raise GrammarError(f"{self.where}/{i}: a branch that accepts everything may overlap")
            others = [j for j in range(len(self.branches)) if j != i]
            for alt in self.own[i]:
                if isinstance(alt, dict) and "oneOf" in alt:
                    raise GrammarError(f"{self.where}/{i}/oneOf: a oneOf inside an overlapping oneOf is not supported")
                narrowed = self._branch(i, alt, others) if isinstance(alt, dict) else None
                if narrowed is not None:
                    out.append(narrowed)
        return out

    def _alternatives(self, branch: Any, where: str, depth: int = 0, own: bool = False) -> list[Any]:
        """The branch as the alternatives of an anyOf or oneOf inside it (each merged with the rest
        of it), or itself. A oneOf inside reads as the anyOf of its branches, a superset of its
        instances, where another branch's instances are judged; where the branch is compiled
        (`own`), an overlapping one is narrowed first (a subset: narrow_one_of)."""
        if not isinstance(branch, dict) or depth > 2:
            return [branch]
        key = "anyOf" if "anyOf" in branch else "oneOf" if "oneOf" in branch else None
        if key is None or not isinstance(branch.get(key), list) or not branch[key]:
            return [branch]
        rest = {k: v for k, v in branch.items() if k != key}
        inner = branch[key]
        if own and key == "oneOf" and not one_of_disjoint(self.sc.root, inner, rest, f"{where}/oneOf", self.sc.strict):
            inner, rest = narrow_one_of(self.sc, rest, inner, f"{where}/oneOf", False), {}
        out: list[Any] = []
        for k, alt in enumerate(inner):
            merged = merge_all(self.sc.root, {"allOf": [rest, alt]}, f"{where}/{key}/{k}") if isinstance(alt, dict) else alt
            out += self._alternatives(merged, where, depth + 1, own)
        return out

    def _branch(self, i: int, branch: dict[str, Any], others: list[int]) -> dict[str, Any] | None:
        values = _values(branch)
        if values is not None:  # exactly the values no other branch accepts
            kept = [v for v in values if not any(self._valid(j, v) for j in others)]
            return {**{k: v for k, v in branch.items() if k != "const"}, "enum": kept} if kept else None
        branch = dict(branch)
        kinds = [_kind(t) for t in self.sc.types(branch, f"{self.where}/{i}")]
        kept: list[str] = []
        for kind in dict.fromkeys(kinds):
            if all(self._narrow(branch, kind, j) for j in others):
                kept.append(kind)
        types = [t for t in self.sc.types(branch, f"{self.where}/{i}") if _kind(t) in kept]
        if not types:
            return None
        branch["type"] = types
        branch.pop("nullable", None)
        return branch

    def _narrow(self, branch: dict[str, Any], kind: str, j: int) -> bool:
        """Narrow `branch` in place so that none of its `kind` instances is valid under branch j
        (under each of its alternatives); False when no narrowing is found."""
        if self._valid_kind(branch, kind, j):
            return True
        return all(self._narrow_alt(branch, kind, other, j) for other in self.alts[j])

    def _valid_kind(self, branch: dict[str, Any], kind: str, j: int) -> bool:
        """True when branch j (as a validator reads it) rejects every `kind` instance."""
        return kind not in valid_kinds(self.branches[j]) and all(kind not in valid_kinds(a) for a in self.alts[j])

    def _narrow_alt(self, branch: dict[str, Any], kind: str, other: Any, j: int) -> bool:
        if not isinstance(other, dict):
            return other is False
        if "oneOf" in other:  # a oneOf inside the other branch: judged by its type only
            return kind not in valid_kinds(other)
        if kind not in valid_kinds(other):
            return True
        values = _values(other) if isinstance(other, dict) else None
        if values is not None and not any(self._fits(branch, v) for v in values if _value_kind(v) == kind):
            return True
        if kind == "object":
            return self._narrow_object(branch, other, j)
        if kind == "array":
            return self._narrow_array(branch, other)
        if kind == "string":
            return self._narrow_string(branch, other)
        if kind == "num":
            return _bounds_apart(branch, other)
        return False

    def _narrow_object(self, branch: dict[str, Any], other: dict[str, Any], j: int) -> bool:
        props, other_props = branch.get("properties", {}), other.get("properties", {})
        required, other_required = set(branch.get("required", [])), set(other.get("required", []))
        strict = self.sc.strict
        closed = other.get("additionalProperties") is False or closes_object(other, strict)
        patterns = other.get("patternProperties")
        if closed and (patterns is None or (other.get("additionalProperties") is False and isinstance(patterns, dict))):
            allowed = set(other_props) | (other_required if other.get("additionalProperties") is not False else set())
            if patterns:  # a name its patterns match (as validators search them) is allowed too
                allowed |= {name for name in [*required, *props] if _matched(patterns, name)}
            if required - allowed:
                return True  # holds a property the other branch never allows
            never = [name for name in props if name not in allowed]
            if never:  # made to hold one (the first declared): a subset of its objects, none of them the other's
                branch["required"] = [*branch.get("required", []), never[0]]
                return True
        if closed and other.get("additionalProperties") is False and self._names_apart(branch, other):
            return True  # a non-empty object whose names the other never allows
        for name, sub in props.items():  # a discriminator: values the other branch rejects
            sub = self._merged(sub)
            values = _values(sub) if isinstance(sub, dict) else None
            if values and name in other_props and not any(self._valid_sub(j, other_props[name], v) for v in values):
                if name not in required:
                    branch["required"] = [*branch.get("required", []), name]
                return True
        for name, sub in other_props.items():  # the other way round: the other's finite values, none of them ours
            sub = self._merged(sub)
            values = _values(sub) if isinstance(sub, dict) else None
            if values and name in props and not any(self._valid_sub(j, props[name], v) for v in values):
                if name not in required and name not in other_required:
                    branch["required"] = [*branch.get("required", []), name]
                return True
        missing = sorted(other_required - required)
        if missing:  # lacking a property the other branch requires
            branch[FORBID] = [*branch.get(FORBID, []), missing[0]]
            return True
        return self._narrow_member(branch, other, j)

    def _names_apart(self, branch: dict[str, Any], other: dict[str, Any]) -> bool:
        """True when `branch` is a closed, non-empty object whose names (declared or by its patterns)
        `other` (closed too) neither declares nor matches by a pattern."""
        patterns, other_patterns = branch.get("patternProperties", {}), other.get("patternProperties", {})
        if branch.get("additionalProperties") is not False or not isinstance(patterns, dict) \
                or not isinstance(other_patterns, dict):  # fmt: skip
            return False
        minimum = branch.get("minProperties", 0)
        if not branch.get("required") and not (isinstance(minimum, int) and minimum >= 1):
            return False
        return names_apart(list(branch.get("properties", {})), patterns, list(other.get("properties", {})),
                           other_patterns, self.where)

    def _narrow_member(self, branch: dict[str, Any], other: dict[str, Any], j: int) -> bool:
        """A property of ours that the other also gives a schema (declared, or by a pattern that
        matches its name), narrowed as a branch is, one level down (MAX_NESTED_NARROWING levels at
        most), so that none of its values is valid under that schema (an anyOf or oneOf there read
        as the anyOf of its alternatives: a superset); it is then required where the other does not
        require it (an object without it would be valid there)."""
        if self.depth >= MAX_NESTED_NARROWING:
            return False
        props, other_props = branch.get("properties", {}), other.get("properties", {})
        patterns = other.get("patternProperties") if isinstance(other.get("patternProperties"), dict) else {}
        for name in props:
            theirs = other_props.get(name)
            if theirs is None:
                theirs = next((sub for p, sub in patterns.items() if isinstance(name, str) and _searches(p, name)), None)
            mine = self._merged(props[name])
            if theirs is None or not isinstance(mine, dict) or _values(mine) is not None:
                continue
            if any(k in mine for k in ("anyOf", "oneOf", "not")):
                continue
            theirs = self._merged(theirs)
            alternatives = self._alternatives(theirs, self.where) if isinstance(theirs, dict) else [theirs]
            if any(not isinstance(a, dict) and a is not False for a in alternatives):
                continue
            narrowed = dict(mine)
            self.depth += 1
            try:
                kinds = list(dict.fromkeys(_kind(t) for t in self.sc.types(narrowed, self.where)))
                kept = [k for k in kinds if all(self._narrow_alt(narrowed, k, a, j) for a in alternatives)]
            finally:
                self.depth -= 1
            if not kept:
                continue
            narrowed["type"] = [t for t in self.sc.types(mine, self.where) if _kind(t) in kept]
            narrowed.pop("nullable", None)
            branch["properties"] = {**props, name: narrowed}
            if name not in other.get("required", []) and name not in branch.get("required", []):
                branch["required"] = [*branch.get("required", []), name]
            return True
        return False

    def _narrow_array(self, branch: dict[str, Any], other: dict[str, Any]) -> bool:
        lo, hi = branch.get("minItems", 0), branch.get("maxItems")
        other_lo, other_hi = other.get("minItems", 0), other.get("maxItems")
        if (hi is not None and other_lo > hi) or (other_hi is not None and lo > other_hi):
            return True
        items, other_items = self._merged(branch.get("items", True)), self._merged(other.get("items", True))
        if isinstance(items, dict) and isinstance(other_items, dict) and "prefixItems" not in branch:
            mine = valid_kinds(items) if _values(items) is not None else {_kind(t) for t in self.sc.types(items, self.where)}
            if not mine & valid_kinds(other_items):
                branch["minItems"] = max(lo, 1)  # an item of it is never valid there
                return True
        return False

    def _narrow_string(self, branch: dict[str, Any], other: dict[str, Any]) -> bool:
        constraint = {k: other[k] for k in _STRING_KEYS if k in other}
        if "pattern" not in constraint and "minLength" not in constraint and "maxLength" not in constraint:
            if _values(other) is None:
                return False  # any string may be valid there
        branch[EXCLUDE_STRINGS] = [*branch.get(EXCLUDE_STRINGS, []), constraint]
        return True

    # ---- validity under another branch, as a validator judges it ----

    def _merged(self, schema: Any) -> Any:
        try:
            return merge_all(self.sc.root, schema, self.where) if isinstance(schema, dict) else schema
        except GrammarError:
            return True

    def _valid(self, j: int, value: Any) -> bool:
        checker = self._checkers.get(j)
        if checker is None:
            checker = self._checkers[j] = self._checker(self.branches[j])
        return _is_valid(checker, value)

    def _valid_sub(self, j: int, schema: Any, value: Any) -> bool:
        return _is_valid(self._checker(schema), value)

    def _fits(self, branch: dict[str, Any], value: Any) -> bool:
        return _is_valid(self._checker(branch), value)

    def _checker(self, schema: Any) -> Any:
        import jsonschema

        root = self.sc.root
        base = {k: v for k, v in schema.items() if not k.startswith("@")} if isinstance(schema, dict) else schema
        defs = {k: root.get(k, {}) for k in ("$defs", "definitions")} if isinstance(root, dict) else {}
        body = {**base, **defs} if isinstance(base, dict) else base
        validator = jsonschema.validators.validator_for(root if isinstance(root, dict) else {})
        return validator(closed_copy(body) if self.sc.strict else body)


def _searches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False


def _matched(patterns: dict[str, Any], name: Any) -> bool:
    """Whether a patternProperties pattern matches `name` (re.search, as validators do); a pattern
    Python cannot read matches, so that the name is never taken for one the branch refuses."""
    if not isinstance(name, str):
        return True
    for pattern in patterns:
        try:
            if re.search(pattern, name):
                return True
        except re.error:
            return True
    return False


def _is_valid(checker: Any, value: Any) -> bool:
    try:
        return bool(checker.is_valid(value))
    except Exception:  # a schema the validator cannot read: it may be valid
        return True


def _bounds_apart(branch: dict[str, Any], other: dict[str, Any]) -> bool:
    """True when the numbers of `branch` and `other` lie in disjoint closed ranges."""
    def span(s: dict[str, Any]) -> tuple[float, float]:
        lo = max([v for v in (s.get("minimum"), s.get("exclusiveMinimum")) if isinstance(v, (int, float))
                  and not isinstance(v, bool)] or [float("-inf")])  # fmt: skip
        hi = min([v for v in (s.get("maximum"), s.get("exclusiveMaximum")) if isinstance(v, (int, float))
                  and not isinstance(v, bool)] or [float("inf")])  # fmt: skip
        return lo, hi

    (a_lo, a_hi), (b_lo, b_hi) = span(branch), span(other)
    return a_hi < b_lo or b_hi < a_lo


def narrow_one_of(sc: Any, rest: dict[str, Any], branches: list[Any], where: str, branch_first: bool) -> list[Any]:
    """The branches of a possibly overlapping `oneOf` (with its sibling keywords `rest`; the
    branch's properties first with `branch_first`) narrowed to an `anyOf` whose instances are all
    valid under the `oneOf`."""
    merged = []
    for i, branch in enumerate(branches):
        parts = [branch, rest] if branch_first else [rest, branch]
        m = merge_all(sc.root, {"allOf": parts} if rest.keys() - ANNOTATIONS else branch, f"{where}/{i}") \
            if isinstance(branch, dict) else branch  # fmt: skip
        merged.append(m)
    return OneOf(sc, merged, where).narrowed()
