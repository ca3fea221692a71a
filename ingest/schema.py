"""The bundle schema, compiled once into checks that report every problem of a line.

The schema file (`schema/bundle.schema.json`, a copy of the spec's) is the
single source of truth; it is compiled into small closures that report every
problem of a line with its JSON pointer, in words a person can act on (the
spec's `oneOf` is dispatched on `kind`). The checker implements only the
keywords the schema uses, as JSON Schema 2020-12 defines them; any other
keyword makes compiling fail (`SchemaError`) instead of being skipped. Tests
hold it to `jsonschema` on generated lines; why we keep it rather than use
that library or `fastjsonschema` is in docs/decisions.md ("Schema validation").
"""

from __future__ import annotations

import calendar
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from typing import Any

from ingest.bundle import LINE_KINDS, SCHEMA_PATH, Problem, _escape, _type_name

Check = Callable[[Any, str, list[tuple[str, str]]], None]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


class SchemaError(Exception):
    """The schema asks for something this checker does not implement: refused, never skipped."""


# The keywords the checker implements, each as JSON Schema 2020-12 defines it. Any other
# (`maximum`, `anyOf`, `uniqueItems`, a misspelt `maxlength`) is a SchemaError when
# compiling: a keyword skipped in silence would let through lines the spec refuses.
_KEYWORDS = frozenset(
    {
        "$ref",
        "type",
        "const",
        "enum",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "minItems",
        "maxItems",
        "prefixItems",
        "items",
        "required",
        "properties",
        "additionalProperties",
    }
)
# Keywords that only annotate: they change nothing about which lines are valid.
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "$comment",
        "examples",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_ROOT_KEYWORDS = frozenset({"$schema", "$id", "$defs", "oneOf"}) | _ANNOTATIONS

_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    # JSON Schema counts 1.0 as an integer; callers convert with int() before use.
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_TYPE_WORDS = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}

# RFC 3339 `date-time` (section 5.6) as the reference validator (jsonschema with
# rfc3339-validator) reads it: `T` or `t` between date and time, never a space (the RFC
# lets applications print one "for readability"; its grammar has none); `Z`, `z` or an
# offset, required; seconds up to 59 (a datetime cannot hold a leap second). Matched
# whole: a `$` would let a final newline through.
_RFC3339 = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>0[1-9]|1[0-2])-(?P<day>[0-9]{2})"
    r"[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)


def is_rfc3339(value: str) -> bool:
    """Whether `value` is an RFC 3339 date-time, with a day that exists in its month."""
    match = _RFC3339.fullmatch(value)
    if match is None:
        return False
    year, month, day = int(match["year"]), int(match["month"]), int(match["day"])
    return year > 0 and 1 <= day <= calendar.monthrange(year, month)[1]


def parse_rfc3339(value: str) -> datetime:
    """An aware datetime from a value `is_rfc3339` accepts."""
    return datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))


def storable_time_problem(value: str) -> str | None:
    """A valid date-time whose UTC equivalent falls outside years 1–9999 cannot be stored
    (`0001-01-01T00:00:00+23:59` is the year 0 in UTC): say so instead of failing later."""
    try:
        parse_rfc3339(value).astimezone(UTC)
    except OverflowError:
        return f"{json.dumps(value[:60])} is outside the years 1–9999 once converted to UTC"
    return None


def _date_time_problem(value: str) -> str:
    shown = json.dumps(value[:60])
    if " " in value and is_rfc3339(value.replace(" ", "T", 1)):
        return f'{shown} is not an RFC 3339 date-time: put "T" between date and time, not a space'
    if is_rfc3339(value + "Z"):
        return f"{shown} is not an RFC 3339 date-time: it needs Z (UTC) or an offset like +02:00"
    return f"{shown} is not an RFC 3339 date-time"


# format name → (test, message for a value that fails it)
_FORMATS: dict[str, tuple[Callable[[str], bool], Callable[[str], str]]] = {
    "date-time": (is_rfc3339, _date_time_problem),
}


class _Compiler:
    """Turns schema nodes into checks; refuses (SchemaError) any keyword it does not implement.

    `where` is the node's place in the schema (`#/$defs/run/properties/created_at`), for
    the message of a SchemaError.
    """

    def __init__(self, defs: dict):
        self.defs = defs
        self.compiled: dict[str, Check] = {}
        self.compiling: set[str] = set()

    def ref(self, pointer: Any, where: str) -> Check:
        name = pointer.removeprefix("#/$defs/") if isinstance(pointer, str) else ""
        if not str(pointer).startswith("#/$defs/") or name not in self.defs:
            raise SchemaError(f"{where}: $ref {pointer!r} does not name an entry of $defs")
        if name in self.compiled:
            return self.compiled[name]
        if name in self.compiling:  # a recursive definition: look it up when it runs
            compiled = self.compiled
            return lambda v, p, out: compiled[name](v, p, out)
        self.compiling.add(name)
        check = self.compile(self.defs[name], f"#/$defs/{name}")
        self.compiling.remove(name)
        self.compiled[name] = check
        return check

    def compile(self, node: Any, where: str) -> Check:
        if node is True:
            return _accept
        if node is False:
            return _refuse
        if not isinstance(node, dict):
            raise SchemaError(f"{where}: a schema must be an object or a boolean")
        unknown = sorted(set(node) - _KEYWORDS - _ANNOTATIONS)
        if unknown:
            raise SchemaError(
                f"{where}: the bundle checker does not implement {', '.join(unknown)}; "
                "teach it in ingest/schema.py (and test it against jsonschema) first"
            )
        _check_keyword_values(node, where)
        if "$ref" in node:
            siblings = sorted((set(node) & _KEYWORDS) - {"$ref"})
            if siblings:
                raise SchemaError(f"{where}: $ref beside {', '.join(siblings)} is not supported")
            return self.ref(node["$ref"], where)
        types = node.get("type")
        checks: list[Check] = []
        if types is not None:
            checks.append(_type_check(types))
        if "const" in node:
            checks.append(_const_check(node["const"]))
        if "enum" in node:
            checks.append(_enum_check(node["enum"]))
        checks += _guarded(_string_checks(node), "string", types)
        checks += _guarded(_number_checks(node), "number", types)
        checks += _guarded(self._array_checks(node, where), "array", types)
        checks += _guarded(self._object_checks(node, where), "object", types)
        if not checks:
            return _accept

        # Always wrapped: a failed type check stops its own node, never its parent's.
        def check_all(v, p, out, checks=tuple(checks)):
            try:
                for check in checks:
                    check(v, p, out)
            except _Stop:
                pass

        return check_all

    def _array_checks(self, node: dict, where: str) -> list[Check]:
        checks: list[Check] = []
        if "minItems" in node or "maxItems" in node:
            lo, hi = node.get("minItems", 0), node.get("maxItems", math.inf)
            if lo == hi:
                size = f"exactly {lo}"
            elif "maxItems" not in node:
                size = f"at least {lo}"
            else:
                size = f"{lo} to {hi}" if lo else f"at most {hi}"

            def check_count(v, p, out, lo=lo, hi=hi, size=size):
                if not lo <= len(v) <= hi:
                    out.append((p, f"must have {size} items, not {len(v)}"))
                    raise _Stop

            checks.append(check_count)
        prefix = tuple(
            self.compile(item, f"{where}/prefixItems/{i}")
            for i, item in enumerate(node.get("prefixItems", ()))
        )
        rest = self.compile(node["items"], f"{where}/items") if "items" in node else None
        if prefix:
            start = len(prefix)

            def check_prefix(v, p, out, prefix=prefix, rest=rest, start=start):
                for i, (item, check) in enumerate(zip(v, prefix, strict=False)):
                    check(item, f"{p}/{i}", out)
                if rest is not None:
                    for i in range(start, len(v)):
                        rest(v[i], f"{p}/{i}", out)

            checks.append(check_prefix)
        elif rest is not None:

            def check_items(v, p, out, rest=rest):
                for i, item in enumerate(v):
                    rest(item, f"{p}/{i}", out)

            checks.append(check_items)
        return checks

    def _object_checks(self, node: dict, where: str) -> list[Check]:
        checks: list[Check] = []
        required = tuple((key, "/" + _escape(key)) for key in node.get("required", ()))
        if required:

            def check_required(v, p, out, required=required):
                for key, step in required:
                    if key not in v:
                        out.append((p + step, "is required"))

            checks.append(check_required)
        properties = {
            key: (self.compile(sub, f"{where}/properties/{_escape(key)}"), "/" + _escape(key))
            for key, sub in node.get("properties", {}).items()
        }
        extra = node.get("additionalProperties", True)
        extra_check = (
            None
            if isinstance(extra, bool)
            else self.compile(extra, f"{where}/additionalProperties")
        )
        if properties or extra is not True:

            def check_properties(v, p, out, properties=properties, extra=extra):
                for key, item in v.items():
                    known = properties.get(key)
                    if known is not None:
                        known[0](item, p + known[1], out)
                    elif extra is False:
                        out.append((f"{p}/{_escape(key)}", "is not a field of this kind of line"))
                    elif extra_check is not None:
                        extra_check(item, f"{p}/{_escape(key)}", out)

            checks.append(check_properties)
        return checks


def _check_keyword_values(node: dict, where: str) -> None:
    """Refuse a keyword whose value is not what JSON Schema (and so the checker) expects."""

    def refuse(key: str, wanted: str) -> None:
        raise SchemaError(f"{where}/{key}: must be {wanted}, not {json.dumps(node[key])[:60]}")

    for key in ("minLength", "maxLength", "minItems", "maxItems"):
        value = node.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            refuse(key, "a non-negative integer")
    if "minimum" in node and not _TYPE_TESTS["number"](node["minimum"]):
        refuse("minimum", "a number")
    types = node.get("type", "string")
    names = types if isinstance(types, list) else [types]
    if not names or not all(isinstance(name, str) and name in _TYPE_TESTS for name in names):
        refuse("type", f"one of {', '.join(_TYPE_TESTS)} or a list of them")
    if len(set(names)) < len(names):
        refuse("type", "a list without repeats")
    if "enum" in node and not (isinstance(node["enum"], list) and node["enum"]):
        refuse("enum", "a non-empty array")
    required = node.get("required", [])
    if not isinstance(required, list) or not all(isinstance(key, str) for key in required):
        refuse("required", "an array of strings")
    if not isinstance(node.get("properties", {}), dict):
        refuse("properties", "an object")
    if "prefixItems" in node and not (
        isinstance(node["prefixItems"], list) and node["prefixItems"]
    ):
        refuse("prefixItems", "a non-empty array of schemas")
    if isinstance(node.get("items"), list):
        refuse("items", "one schema (a list of item schemas is draft 7; use prefixItems)")
    if "format" in node and node["format"] not in _FORMATS:
        refuse("format", f"one the checker asserts ({', '.join(_FORMATS)})")
    if "pattern" in node:
        if not isinstance(node["pattern"], str):
            refuse("pattern", "a string")
        try:
            re.compile(_ecma_pattern(node["pattern"]))
        except re.error as exc:
            raise SchemaError(f"{where}/pattern: does not compile ({exc})") from None


def _type_check(types: str | list[str]) -> Check:
    names = [types] if isinstance(types, str) else types
    word = " or ".join(_TYPE_WORDS[name] for name in names)
    if len(names) == 1:  # every node of the bundle schema: one call fewer per value
        test = _TYPE_TESTS[names[0]]

        def check_type(v, p, out, test=test, word=word):
            if not test(v):
                out.append((p, f"must be {word}, not {_type_name(v)}"))
                raise _Stop

        return check_type
    tests = tuple(_TYPE_TESTS[name] for name in names)

    def check_types(v, p, out, tests=tests, word=word):
        if not any(test(v) for test in tests):
            out.append((p, f"must be {word}, not {_type_name(v)}"))
            raise _Stop

    return check_types


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema's const and enum mean it: true is not 1, 1.0 is 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_json_equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _const_check(const: Any) -> Check:
    shown = json.dumps(const)
    if isinstance(const, str):  # the common case: no other JSON value equals a string

        def check_const(v, p, out, const=const, shown=shown):
            if v != const:
                out.append((p, f"must be {shown}"))

    else:

        def check_const(v, p, out, const=const, shown=shown):
            if not _json_equal(v, const):
                out.append((p, f"must be {shown}"))

    return check_const


def _enum_check(allowed: list) -> Check:
    words = ", ".join(x if isinstance(x, str) else json.dumps(x) for x in allowed)
    if all(isinstance(x, str) for x in allowed):
        choices = frozenset(allowed)

        def check_enum(v, p, out, choices=choices, words=words):
            if not (isinstance(v, str) and v in choices):
                out.append((p, f"{json.dumps(v)[:60]} is not one of: {words}"))

    else:

        def check_enum(v, p, out, allowed=allowed, words=words):
            if not any(_json_equal(v, x) for x in allowed):
                out.append((p, f"{json.dumps(v)[:60]} is not one of: {words}"))

    return check_enum


def _string_checks(node: dict) -> list[Check]:
    checks: list[Check] = []
    if "minLength" in node:
        n = node["minLength"]

        def check_min_length(v, p, out, n=n):
            if len(v) < n:
                out.append((p, "must not be empty" if n == 1 else f"needs {n}+ characters"))

        checks.append(check_min_length)
    if "maxLength" in node:
        n = node["maxLength"]

        def check_max_length(v, p, out, n=n):
            if len(v) > n:
                out.append((p, f"is {len(v):,} characters long; the limit is {n:,}"))

        checks.append(check_max_length)
    if "pattern" in node:
        source = node["pattern"]
        pattern = re.compile(_ecma_pattern(source))

        def check_pattern(v, p, out, pattern=pattern, source=source):
            if not pattern.search(v):
                shown = json.dumps(v[:80], ensure_ascii=False)
                if source == r"\S":
                    out.append((p, "must contain a written reason, not only blanks"))
                else:
                    out.append((p, f"{shown} does not match {source}"))

        checks.append(check_pattern)
    if "format" in node:
        test, problem = _FORMATS[node["format"]]

        def check_format(v, p, out, test=test, problem=problem):
            if not test(v):
                out.append((p, problem(v)))

        checks.append(check_format)
    return checks


def _number_checks(node: dict) -> list[Check]:
    if "minimum" not in node:
        return []
    minimum = node["minimum"]

    def check_minimum(v, p, out, minimum=minimum):
        if v < minimum:
            out.append((p, f"must be at least {minimum}"))

    return [check_minimum]


_FAMILY_TESTS = {
    "string": _TYPE_TESTS["string"],
    "number": _TYPE_TESTS["number"],
    "array": _TYPE_TESTS["array"],
    "object": _TYPE_TESTS["object"],
}


def _guarded(checks: list[Check], family: str, types: Any) -> list[Check]:
    """Checks of one family of keywords, run only on values of that family.

    JSON Schema applies `maxLength` to strings only, `minimum` to numbers only, and so
    on; where the node's `type` already guarantees the family, no guard is needed.
    """
    if not checks or types == family or (family == "number" and types == "integer"):
        return checks
    test = _FAMILY_TESTS[family]

    def check_family(v, p, out, test=test, checks=tuple(checks)):
        if test(v):
            for check in checks:
                check(v, p, out)

    return [check_family]


def _accept(v: Any, p: str, out: list[tuple[str, str]]) -> None:
    pass


def _refuse(v: Any, p: str, out: list[tuple[str, str]]) -> None:
    out.append((p, "is not allowed here"))


def _ecma_pattern(source: str) -> str:
    """A schema pattern (ECMA-262) as a Python regex with the same meaning of `$`.

    ECMA-262's `$` (no multiline flag) is the end of the input; Python's `$` also matches
    before a final newline, which would let `"Q-017\\n"` pass as an id. Every `$` outside
    a character class becomes `\\Z`.
    """
    out, escaped, in_class = [], False, False
    for char in source:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            char = r"\Z"
        out.append(char)
    return "".join(out)


class _Stop(Exception):
    """Raised by a failed type check: the other keywords of that node make no sense."""


def compile_bundle_schema(schema: dict) -> dict[str, Check]:
    """One check per line kind from the bundle schema; SchemaError for anything it cannot honour.

    The spec's `oneOf` is checked by dispatching on `kind`, which gives messages about
    the branch the line means rather than about all four. That is exact only because
    each branch requires `kind` and pins it to its own name; this is checked here too.
    """
    unknown = sorted(set(schema) - _ROOT_KEYWORDS)
    if unknown:
        raise SchemaError(f"#: the bundle checker does not implement {', '.join(unknown)}")
    if schema.get("$schema") != DRAFT_2020_12:
        raise SchemaError(f"#/$schema: the bundle checker reads {DRAFT_2020_12} only")
    defs = schema.get("$defs", {})
    if not isinstance(defs, dict):
        raise SchemaError("#/$defs: must be an object")
    compiler = _Compiler(defs)
    for name in defs:  # every definition, used or not: a bad keyword fails now
        compiler.ref(f"#/$defs/{name}", "#/$defs")
    branches = schema.get("oneOf")
    if not isinstance(branches, list) or not all(
        isinstance(branch, dict) and set(branch) == {"$ref"} and isinstance(branch["$ref"], str)
        for branch in branches
    ):
        raise SchemaError("#/oneOf: must be a list of one $ref per line kind")
    names = [branch["$ref"].removeprefix("#/$defs/") for branch in branches]
    if sorted(names) != sorted(LINE_KINDS):
        raise SchemaError(f"#/oneOf: must name the line kinds {', '.join(LINE_KINDS)}")
    for name in names:
        branch = defs.get(name)
        pinned = (
            isinstance(branch, dict)
            and "kind" in branch.get("required", [])
            and branch.get("properties", {}).get("kind") == {"const": name}
        )
        if not pinned:
            raise SchemaError(
                f"#/$defs/{name}: must require `kind` with const {json.dumps(name)}, "
                "so that a line's kind picks its branch of oneOf"
            )
    return {name: compiler.ref(f"#/$defs/{name}", "#/oneOf") for name in names}


def compile_schema(node: Any, defs: dict | None = None) -> Check:
    """One schema node compiled into a check, with the `$defs` its `$ref`s name."""
    return _Compiler(defs or {}).compile(node, "#")


@cache
def line_checks() -> dict[str, Check]:
    """The bundle schema compiled, one check per line kind; compiled on first use."""
    return compile_bundle_schema(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def schema_problems(number: int, line: dict) -> list[Problem]:
    """Check one parsed line against the schema branch that its `kind` names."""
    kind = line.get("kind")
    if "kind" not in line:
        return [Problem(number, "/kind", "is required (one of: run, passage, case, response)")]
    checks = line_checks()
    if not isinstance(kind, str) or kind not in checks:
        shown = json.dumps(kind, ensure_ascii=False)[:60]
        return [
            Problem(
                number, "/kind", f"unknown kind {shown} (one of: run, passage, case, response)"
            )
        ]
    found: list[tuple[str, str]] = []
    checks[kind](line, "", found)
    return [Problem(number, path, message) for path, message in found]
