"""JSON Schema -> grammar: keyword dispatch, $ref resolution, combinators and scalar types."""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from grammar.errors import GrammarError
from grammar.ir import NOTHING, Bytes, Grammar, Node, Ref, Repeat, alt, is_nothing, lit, literals, opt, seq, size_exceeds
from grammar.frontends.json_merge import (ANNOTATIONS, FORBID, ONE_OF_REQUIRED, as_standard, check_keywords, merge_all, one_of_disjoint,
                                 required_only, resolve_pointer)
from grammar.frontends.json_closed import closed_copy
from grammar.frontends.json_conditions import hoist_condition, if_then_else, negate
from grammar.frontends.json_drafts import as_validated
from grammar.frontends.json_likely import likely_texts
from grammar.frontends.json_numbers import integer_node, number_node
from grammar.frontends.json_one_of import narrow_one_of
from grammar.frontends.json_order import CopyBudget, check_property_order
from grammar.frontends.json_objects import array_node, object_node
from grammar.frontends.json_text import (ANY_VALUE, add_any_value, any_json_char, json_literal, literal_texts, quoted,
                                         string_body, string_format, whitespace)
from grammar.time_limit import check_time_limit

LOG = logging.getLogger("grammar")
SHARE_MIN_SIZE = 32  # a node used in several places becomes a rule of its own above this size (SchemaCompiler.shared)
TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")
TYPE_KEYWORDS = {
    "string": ("minLength", "maxLength", "pattern", "format"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "object": ("properties", "required", "additionalProperties", "patternProperties", "dependencies",
               "dependentRequired", "dependentSchemas", "propertyNames"),
    "array": ("items", "prefixItems", "minItems", "maxItems", "additionalItems"),
}


class SchemaCompiler:
    """Compiles one JSON Schema document; rules are created per `$ref` target (recursion-safe).
    `strict` closes objects and tuples that do not say they are open (grammar/frontends/json_closed.py);
    `property_order` is "declared" or "any" (grammar/frontends/json_order.py)."""

    def __init__(self, root: Any, whitespace_mode: str, strict: bool = False, property_order: str = "declared") -> None:
        self.root = as_validated(root)  # draft 3-7: `$ref` hides its siblings (json_drafts.py)
        self.strict = strict
        self.property_order = check_property_order(property_order)
        self.grammar = Grammar()
        self.whitespace_mode = whitespace_mode
        self.ws = whitespace(whitespace_mode)
        self.copy_budget = CopyBudget(self.ws)  # what objects may copy of their members (json_order.py)
        self.char = any_json_char()
        self.ref_rules: dict[str, str] = {}
        self.languages: dict[str, Any] = {}  # regular languages made once per compile (json_text.string_body)
        self.pending: list[tuple[str, Any, str]] = []
        self.noted_formats: set[str] = set()  # pointers of unknown formats logged
        self.num_shared = 0  # rules made by `shared`
        self.top = {""}  # pointers of the document's top-level value: the root, the $ref targets it is

    def compile(self) -> Grammar:
        grammar = self.finish(self.node(self.root, ""))
        if is_nothing(grammar.rules["start"]):
            raise GrammarError("schema accepts no value")
        return grammar

    def finish(self, start: Node) -> Grammar:
        """The grammar with `start` as its start rule and every `$ref` target it reached."""
        self.grammar.rules["start"] = start
        while self.pending:
            name, schema, where = self.pending.pop()
            self.grammar.rules[name] = self.node(schema, where)
        return self.grammar

    def ref(self, target: str, where: str) -> Node:
        name = self.ref_rules.get(target)
        if name is None:
            name = f"ref:{target}"
            self.ref_rules[target] = name
            self.pending.append((name, resolve_pointer(self.root, target, where), target))
        return Ref(name)

    def shared(self, node: Node) -> Node:
        """`node` as a rule of its own (a reference to it), when it is used in several places: the
        NFA builder then inlines it while it is small and calls it when it is large, instead of a
        copy at each use."""
        if isinstance(node, (Ref, Bytes)) or not size_exceeds(node, SHARE_MIN_SIZE):
            return node
        name = f"shared:{self.num_shared}"
        self.num_shared += 1
        self.grammar.rules[name] = node
        return Ref(name)

    def any_value(self) -> Node:
        add_any_value(self.grammar, self.whitespace_mode)
        return Ref(ANY_VALUE)

    def node(self, schema: Any, where: str) -> Node:
        check_time_limit()
        if schema is True:
            return self.any_value()
        if schema is False:
            return NOTHING
        if not isinstance(schema, dict):
            raise GrammarError(f"{where or '/'}: a schema must be an object or a boolean")
        if "if" in schema or "then" in schema or "else" in schema:
            return self.node(if_then_else(schema, where), where)
        if "unevaluatedProperties" in schema:
            return self.node(unevaluated_as_additional(self.root, schema, where), where)
        check_keywords(schema, where)
        if "$ref" in schema:
            rest = {k: v for k, v in schema.items() if k not in ANNOTATIONS and k != "$ref"}
            if not rest:
                target = _ref_target(schema["$ref"], where)
                if where in self.top:
                    self.top.add(target)
                return self.ref(target, where)
        if "$ref" in schema or "allOf" in schema:
            hoisted = hoist_condition(schema, where)
            if hoisted is not None:
                return self.node(hoisted, where)
            return self.node(merge_all(self.root, schema, where), where)
        split = split_dependency(schema, where)
        if split is not None:
            return self.node(split, where)
        if "anyOf" in schema or "oneOf" in schema:
            return self.combinator(schema, where)
        if "enum" in schema or "const" in schema:
            return self.enum(schema, where)  # jsonschema checks each value, `not` included
        if "not" in schema:
            return self.node(self.without_not(schema, where), where)
        types = self.types(schema, where)
        if not types:
            return NOTHING
        if set(types) >= {"null", "boolean", "object", "array", "number", "string"} and len(schema.keys() - ANNOTATIONS) <= 1:
            return self.any_value()
        return alt(*[self.typed(t, schema, where) for t in types])

    def types(self, schema: dict[str, Any], where: str) -> list[str]:
        declared = schema.get("type")
        if declared is None:
            present = [t for t, kws in TYPE_KEYWORDS.items() if any(k in schema for k in kws)]
            types = present or ["null", "boolean", "object", "array", "number", "string"]
        else:
            types = [declared] if isinstance(declared, str) else list(declared)
        for t in types:
            if t not in TYPES:
                raise GrammarError(f"{where}/type: unknown type {t!r}")
        if "number" in types and "integer" in types:
            types.remove("integer")
        if schema.get("nullable") is True and "null" not in types:
            types.append("null")
        return types

    def without_not(self, schema: dict[str, Any], where: str) -> Any:
        """`schema` with its `not` folded in, for the negations we can state exactly: nothing,
        everything, a double negation, or a set of types."""
        rest = {k: v for k, v in schema.items() if k != "not"}
        negated = schema["not"]
        if isinstance(negated, dict):
            negated = {k: v for k, v in negated.items() if k not in ANNOTATIONS}
        if negated is True or negated == {}:
            return False
        if negated is False:
            return rest
        if not isinstance(negated, dict):
            raise GrammarError(f"{where}/not: a schema must be an object or a boolean")
        if negated.keys() == {"not"}:
            return {"allOf": [rest, negated["not"]]}
        excluded = self.type_set(negated, f"{where}/not")
        if excluded is not None:
            bare = {k: v for k, v in rest.items() if k != "nullable"}
            allowed = self.types(bare, where) if "type" in bare else [t for t in TYPES if t != "integer"]
            if "integer" in excluded and "number" in allowed:
                raise GrammarError(f"{where}/not: excluding integers from numbers is not supported")
            kept = [t for t in allowed if t not in excluded and not (t == "integer" and "number" in excluded)]
            if rest.get("nullable") is True and "null" not in excluded:
                kept.append("null")
            if not kept:
                return False
            return {**{k: v for k, v in rest.items() if k != "nullable"}, "type": kept}
        # Anything else whose negation json_conditions states exactly (string patterns and lengths,
        # const/enum values, object properties with such values or types, required names, a bound)
        negations = negate(negated, f"{where}/not")
        if len(negations) == 1:
            return {"allOf": [rest, negations[0]]}
        return {"anyOf": [{"allOf": [rest, n]} for n in negations]} if negations else False

    def type_set(self, schema: Any, where: str) -> set[str] | None:
        """The types a schema accepts when it is nothing but a type (or an anyOf of such)."""
        if isinstance(schema, dict):
            schema = {k: v for k, v in schema.items() if k not in ANNOTATIONS}
        if not isinstance(schema, dict) or not schema:
            return None
        if schema.keys() == {"type"}:
            return set(self.types(schema, where))
        if schema.keys() == {"anyOf"} and isinstance(schema["anyOf"], list) and schema["anyOf"]:
            parts = [self.type_set(s, f"{where}/anyOf/{i}") for i, s in enumerate(schema["anyOf"])]
            return None if any(p is None for p in parts) else set().union(*parts)
        return None

    def combinator(self, schema: dict[str, Any], where: str) -> Node:
        key = "anyOf" if "anyOf" in schema else "oneOf"
        if "anyOf" in schema and "oneOf" in schema:  # any of A, with exactly one of O: each a with the oneOf
            branches = schema["anyOf"]
            if not isinstance(branches, list) or not branches:
                raise GrammarError(f"{where}/anyOf: must be a non-empty array")
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            nodes = []
            for i, branch in enumerate(branches):
                merged = merge_all(self.root, {"allOf": [rest, branch]}, f"{where}/anyOf/{i}")
                if isinstance(merged, dict) and "anyOf" in merged:  # one level only: no product of products
                    raise GrammarError(f"{where}/oneOf: not supported together with an anyOf whose branches hold "
                                       f"another anyOf")  # fmt: skip
                nodes.append(self.node(merged, f"{where}/anyOf/{i}"))
            return alt(*nodes)
        branches = schema[key]
        if not isinstance(branches, list) or not branches:
            raise GrammarError(f"{where}/{key}: must be a non-empty array")
        rest = {k: v for k, v in schema.items() if k != key}
        # Properties are emitted in document order: the branch's first when the combinator
        # comes before the sibling properties (also after an allOf merge, which keeps part order).
        keys = list(schema)
        branch_first = "properties" in schema and keys.index(key) < keys.index("properties")
        if key == "oneOf" and not one_of_disjoint(self.root, branches, rest, f"{where}/oneOf", self.strict):
            required = required_only(self.root, branches)
            if required is not None:
                return self.node(self.one_of_required(rest, required, where), where)
            narrowed = narrow_one_of(self, rest, branches, f"{where}/oneOf", branch_first)
            if not narrowed:
                raise GrammarError(f"{where}/oneOf: branches overlap, and none could be narrowed to instances the "
                                   f"others reject")  # fmt: skip
            return alt(*[self.node(b, f"{where}/oneOf") for b in narrowed])
        nodes = []
        for i, branch in enumerate(branches):
            sub = f"{where}/{key}/{i}"
            if len(rest.keys() - ANNOTATIONS) == 0:
                nodes.append(self.node(branch, sub))
            else:
                nodes.append(self.node({"allOf": [branch, rest] if branch_first else [rest, branch]}, sub))
        return alt(*nodes)

    def one_of_required(self, rest: dict[str, Any], required: list[list[str]], where: str) -> Any:
        """`rest` as an object whose present properties satisfy exactly one required list. A
        non-object satisfies every branch, so with two or more branches it satisfies none."""
        if "$ref" in rest or "allOf" in rest:
            rest = merge_all(self.root, rest, where)
            if rest is False:
                return False
        kinds = self.types(rest, where) if "type" in rest else ["object"]
        if "object" not in kinds:
            return False
        rest = {k: v for k, v in rest.items() if k != "nullable"}
        return {**rest, "type": "object", ONE_OF_REQUIRED: [required]}

    def unknown_format(self, where: str, fmt: Any) -> None:
        """One log line per schema location for a format we do not know: an annotation, left out."""
        if where not in self.noted_formats:
            self.noted_formats.add(where)
            LOG.warning("%s/format: unknown format %r, compiled as its base type (an annotation)", where or "", fmt)

    def enum(self, schema: dict[str, Any], where: str) -> Node:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if not isinstance(values, list):
            raise GrammarError(f"{where}/enum: must be an array")
        rest = {k: v for k, v in schema.items() if k not in ("enum", "const")}
        checker = self.value_checker(rest) if rest.keys() - ANNOTATIONS else None  # None: nothing to check
        options = []
        for i, v in enumerate(values):
            if i & 1023 == 1023:
                check_time_limit()
            try:
                ok = checker is None or checker.is_valid(v)
            except Exception:
                ok = True
            if ok:
                options.extend(literal_texts(v))
        return literals(options) if options else NOTHING

    def value_checker(self, rest: dict[str, Any]) -> Any:
        """A JSON Schema validator of `rest` (with the document's definitions) for enum values."""
        import jsonschema

        validator = jsonschema.validators.validator_for(self.root if isinstance(self.root, dict) else {})
        defs = {k: self.root.get(k, {}) for k in ("$defs", "definitions")} if isinstance(self.root, dict) else {}
        body = closed_copy({**rest, **defs}) if self.strict else {**rest, **defs}
        # closed first: the standard spelling adds schemas not to close; the definitions hold none of ours
        return validator({**body, **as_standard({k: v for k, v in body.items() if k not in defs})})

    def typed(self, t: str, schema: dict[str, Any], where: str) -> Node:
        if t == "null":
            return lit("null")
        if t == "boolean":
            return alt(lit("true"), lit("false"))
        if t == "string":
            if "format" in schema and string_format(schema, where) is None:
                self.unknown_format(where, schema["format"])
            return quoted(string_body(schema, where, self.char, self.languages))
        if t == "integer":
            return self.integer(schema, where)
        if t == "number":
            return self.number(schema, where)
        if t == "object":
            return object_node(self, schema, where)
        return array_node(self, schema, where)

    def bounds(self, schema: dict[str, Any], where: str) -> tuple[float | None, float | None, bool, bool]:
        lo, hi = schema.get("minimum"), schema.get("maximum")
        xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        lo_ex = hi_ex = False
        if isinstance(xlo, bool):
            lo_ex = xlo
        elif xlo is not None:
            lo, lo_ex = (xlo, True) if lo is None or xlo >= lo else (lo, False)
        if isinstance(xhi, bool):
            hi_ex = xhi
        elif xhi is not None:
            hi, hi_ex = (xhi, True) if hi is None or xhi <= hi else (hi, False)
        for name, v in (("minimum", lo), ("maximum", hi)):
            if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)):
                raise GrammarError(f"{where}/{name}: must be a finite number")
        return lo, hi, lo_ex, hi_ex

    def integer(self, schema: dict[str, Any], where: str) -> Node:
        lo, hi, lo_ex, hi_ex = self.bounds(schema, where)
        ilo = None if lo is None else (math.floor(lo) + 1 if lo_ex else math.ceil(lo))
        ihi = None if hi is None else (math.ceil(hi) - 1 if hi_ex else math.floor(hi))
        fmt = _numeric_format(schema, where)
        if fmt is None and "format" in schema:
            self.unknown_format(where, schema["format"])
        if fmt in INTEGER_FORMATS:
            flo, fhi = INTEGER_FORMATS[fmt]
            ilo, ihi = max(flo, ilo) if ilo is not None else flo, min(fhi, ihi) if ihi is not None else fhi
        mult = schema.get("multipleOf")
        if mult is not None:
            if isinstance(mult, float) and mult.is_integer():
                mult = int(mult)
            if not isinstance(mult, int) or isinstance(mult, bool) or mult <= 0:
                raise GrammarError(f"{where}/multipleOf: only positive integers are supported for integers")
        if ilo is not None and ihi is not None and ilo > ihi:
            return NOTHING
        return integer_node(ilo, ihi, mult, where)

    def number(self, schema: dict[str, Any], where: str) -> Node:
        fmt = _numeric_format(schema, where)
        if fmt is None and "format" in schema:
            self.unknown_format(where, schema["format"])
            schema = {k: v for k, v in schema.items() if k != "format"}
        if fmt in INTEGER_FORMATS:  # an int32 number is an integer in that range
            return self.integer(schema, where)
        mult = schema.get("multipleOf")
        decimals = None
        if mult is not None:
            if isinstance(mult, (int, float)) and not isinstance(mult, bool) and float(mult).is_integer() and mult > 0:
                # an integral multiple, written as an integer or with a zero fraction (`6000.0`, as
                # Python's json writes a float): both parse to the same multiple
                whole = self.integer(schema, where)
                return NOTHING if is_nothing(whole) else seq(whole, opt(seq(lit("."), Repeat(lit("0"), 1, None))))
            exp = -math.log10(mult) if isinstance(mult, float) and mult > 0 else 0.5
            if not float(exp).is_integer() or abs(10 ** -round(exp) - mult) > 1e-12:
                raise GrammarError(f"{where}/multipleOf: only integers and powers of ten are supported")
            decimals = int(round(exp))
        lo, hi, lo_ex, hi_ex = self.bounds(schema, where)
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_ex or hi_ex))):
            return NOTHING
        return number_node(lo, hi, decimals, lo_ex, hi_ex)


# Formats on numbers (OpenAPI, draft 3): the integer ones are ranges; float, double, utc-millisec
# and timestamp are any number (float's 3.4e38 range is not enforced); any other is an annotation
# (JSON Schema's meaning of a format it does not define): the number compiles without it, logged.
INTEGER_FORMATS = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
                   "int64": (-(2**63), 2**63 - 1), "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1),
                   "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1)}  # fmt: skip
NUMBER_FORMATS = frozenset({"float", "double", "utc-millisec", "timestamp"})


def split_dependency(schema: dict[str, Any], where: str) -> dict[str, Any] | None:
    """A schema dependency that is more than a list of required names (`dependencies: {"a": {...}}`,
    `dependentSchemas`), as an anyOf: the object without the trigger, or with it and the dependent
    schema too (a non-object meets the first); None when there is none. Required-only ones stay for
    json_presence's graph."""
    for key in ("dependencies", "dependentSchemas"):
        table = schema.get(key)
        if not isinstance(table, dict):
            continue
        for trigger, need in table.items():
            if not isinstance(need, dict) or not set(need) - ANNOTATIONS - {"required"}:
                continue
            rest = dict(schema)
            others = {t: n for t, n in table.items() if t != trigger}
            if others:
                rest[key] = others
            else:
                del rest[key]
            absent = {**rest, FORBID: [*rest.get(FORBID, []), trigger]}
            present = {**rest, "required": [*rest.get("required", []), trigger]}
            return {"anyOf": [absent, {"allOf": [present, need]}]}
    return None


# What an object's in-place parts may hold for unevaluatedProperties to be additionalProperties:
# no applicator that evaluates properties only where it validates (anyOf, oneOf, if, dependentSchemas)
# and no negation.
_CONDITIONAL_EVALUATION = frozenset({"anyOf", "oneOf", "not", "if", "then", "else", "dependencies", "dependentSchemas",
                                     "unevaluatedItems", ONE_OF_REQUIRED})  # fmt: skip


def unevaluated_as_additional(root: Any, schema: dict[str, Any], where: str) -> Any:
    """`unevaluatedProperties` where it says what `additionalProperties` would: the schema and its
    `allOf`/`$ref` parts merged (each part must validate, so each evaluates its properties and
    pattern members) hold no applicator that evaluates only where it validates; then the names left
    unevaluated are those no part declares or matches by a pattern, and none when a part has
    `additionalProperties` (it evaluates every name). GrammarError otherwise."""
    rest = {k: v for k, v in schema.items() if k != "unevaluatedProperties"}
    merged = merge_all(root, rest, where)
    if merged is False:
        return False
    if set(merged) & _CONDITIONAL_EVALUATION:
        raise GrammarError(f"{where}/unevaluatedProperties: keyword 'unevaluatedProperties' is not supported beside "
                           f"anyOf, oneOf, not, if or dependencies")  # fmt: skip
    if "additionalProperties" not in merged:
        merged["additionalProperties"] = schema["unevaluatedProperties"]
    return merged


def _numeric_format(schema: dict[str, Any], where: str) -> str | None:
    fmt = schema.get("format")
    if fmt is not None and not isinstance(fmt, str):
        raise GrammarError(f"{where}/format: must be a string")
    return fmt if fmt in INTEGER_FORMATS or fmt in NUMBER_FORMATS else None


def _ref_target(ref: Any, where: str) -> str:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise GrammarError(f"{where}/$ref: only local references ('#...') are supported, got {ref!r}")
    return ref[1:]


def compile_schema_to_grammar(schema: dict[str, Any] | str | bool, whitespace_mode: str = "compact",
                              strict: bool = False, property_order: str = "declared") -> Grammar:
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise GrammarError(f"schema is not valid JSON: {exc}") from None
    grammar = SchemaCompiler(schema, whitespace_mode, strict, property_order).compile()
    grammar.likely = likely_texts(schema, whitespace_mode)
    return grammar
