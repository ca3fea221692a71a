"""Reading an evidence bundle line by line, and checking each line against the schema.

No database here: this module turns bytes into validated dicts or into
problems of the form `line N: /json/pointer: message`. Cross-line rules and
storage are in `evidence.services`.

The schema file (`schema/bundle.schema.json`, a copy of the spec's) is the
single source of truth; it is compiled once into small closures, which is
several times faster than walking the schema for every line and gives
messages a person can act on (the spec's `oneOf` is dispatched on `kind`).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import IO, Any

SCHEMA_PATH = Path(__file__).parent / "schema" / "bundle.schema.json"
SCHEMA_NAME = "evidence-bundle/1"
LINE_KINDS = ("run", "passage", "case", "response")

MAX_LINE_BYTES = 16 * 1024 * 1024  # a response with a 200,000-character answer and its claims fits
MAX_DEPTH = 64  # deeper than any honest trace; Python's json would recurse into a crash
MAX_PROBLEMS = 50


@dataclass(frozen=True, slots=True)
class Problem:
    line: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}"


class BundleReadError(Exception):
    """The byte stream itself is broken (not gzip, truncated gzip); reading cannot go on."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.problem = Problem(line, "", message)


class CountingReader(io.RawIOBase):
    """Counts the bytes read from the underlying stream, for progress reports."""

    def __init__(self, raw: IO[bytes]):
        self.raw = raw
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self.raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.bytes_read += n
        return n


def open_bundle(raw: IO[bytes]) -> tuple[IO[bytes], CountingReader]:
    """Wrap a binary stream, un-gzipping it when it starts with gzip's magic bytes."""
    counter = CountingReader(raw)
    buffered = io.BufferedReader(counter, buffer_size=1024 * 1024)
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=buffered, mode="rb"), counter  # type: ignore[return-value]
    return buffered, counter


def iter_raw_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes | None]]:
    """Yield (line number, bytes); bytes is None for a line over MAX_LINE_BYTES (skipped)."""
    number = 0
    try:
        while True:
            chunk = stream.readline(MAX_LINE_BYTES + 1)
            if not chunk:
                return
            number += 1
            if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
                while chunk and not chunk.endswith(b"\n"):  # skip the rest of the line
                    chunk = stream.readline(MAX_LINE_BYTES)
                yield number, None
                continue
            yield number, chunk
    except EOFError:
        raise BundleReadError(
            number + 1, "the gzip stream is truncated (the file ends before its end marker)"
        ) from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise BundleReadError(number + 1, f"the gzip stream is corrupt ({exc})") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (NaN and Infinity are refused)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]} is too large")
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r} in one object")
            seen.add(key)
    return result


def parse_line(number: int, raw: bytes | None) -> tuple[dict | None, Problem | None]:
    """Bytes of one line → (object, None) or (None, problem). Blank lines give (None, None)."""
    if raw is None:
        return None, Problem(number, "", f"line is longer than {MAX_LINE_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, Problem(number, "", f"not valid UTF-8 (byte {exc.start + 1} of the line)")
    if number == 1 and text.startswith("\ufeff"):
        text = text[1:]
    text = text.rstrip("\r\n")
    if not text.strip():
        return None, None
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            object_pairs_hook=_no_duplicate_keys,
        )
    except json.JSONDecodeError as exc:
        return None, Problem(number, "", f"not valid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return None, Problem(number, "", "JSON nested too deeply")
    except ValueError as exc:  # NaN, huge numbers, duplicate keys
        message = str(exc)
        if "integer string conversion" in message:
            message = "a number has too many digits"
        return None, Problem(number, "", f"not valid JSON: {message}")
    if not isinstance(value, dict):
        return None, Problem(number, "", f"a line must be a JSON object, not {_type_name(value)}")
    # The walk costs as much as the parse: only a line with that many brackets can be deep.
    if text.count("{") + text.count("[") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        return None, Problem(number, "", f"JSON nested deeper than {MAX_DEPTH} levels")
    if "\\u" in text and _SUSPECT_ESCAPE.search(text):
        found = _unstorable_string(value, "")
        if found is not None:
            return None, Problem(number, *found)
    return value, None


# Escapes that can decode to text no database stores: NUL, and UTF-16 surrogates (a
# lone one is not Unicode at all; a pair decodes to one character and is fine).
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def _unstorable_string(value: Any, path: str) -> tuple[str, str] | None:
    """The first string (or key) holding a NUL or an unpaired surrogate, with its path."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                problem = _string_problem(key)
                if problem:
                    return f"{where}/{_escape(key)}", f"the key {problem}"
                stack.append((child, f"{where}/{_escape(key)}"))
        elif isinstance(node, list):
            stack.extend((child, f"{where}/{i}") for i, child in enumerate(node))
        elif isinstance(node, str):
            problem = _string_problem(node)
            if problem:
                return where, problem
    return None


def _string_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        return f"contains an unpaired surrogate (\\u{code:04x}), which is not valid Unicode"
    return None


def _depth(value: Any) -> int:
    """Nesting depth, iteratively (a recursive walk is what deep input attacks)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > MAX_DEPTH:
                return deepest
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values() if _is_container(child))
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node if _is_container(child))
    return deepest


def _is_container(value: Any) -> bool:
    return isinstance(value, dict | list)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


# --- the schema, compiled -------------------------------------------------------------------

Check = Callable[[Any, str, list[tuple[str, str]]], None]

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
}
_TYPE_WORDS = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
}
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$"
)


def _is_rfc3339(value: str) -> bool:
    if not _RFC3339.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


def parse_rfc3339(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))


class _Compiler:
    def __init__(self, schema: dict):
        self.defs = schema.get("$defs", {})
        self.compiled_refs: dict[str, Check] = {}

    def ref(self, pointer: str) -> Check:
        name = pointer.removeprefix("#/$defs/")
        if name not in self.compiled_refs:
            # Indirection so that recursive definitions would also compile.
            self.compiled_refs[name] = lambda v, p, out: None
            check = self.compile(self.defs[name])
            self.compiled_refs[name] = check
        return self.compiled_refs[name]

    def compile(self, node: dict) -> Check:  # noqa: C901 - one branch per keyword
        if "$ref" in node:
            return self.ref(node["$ref"])
        checks: list[Check] = []
        if "type" in node:
            test, word = _TYPE_TESTS[node["type"]], _TYPE_WORDS[node["type"]]

            def check_type(v, p, out, test=test, word=word):
                if not test(v):
                    out.append((p, f"must be {word}, not {_type_name(v)}"))
                    raise _Stop

            checks.append(check_type)
        if "const" in node:
            const = node["const"]

            def check_const(v, p, out, const=const):
                if v != const:
                    out.append((p, f"must be {json.dumps(const)}"))

            checks.append(check_const)
        if "enum" in node:
            allowed = node["enum"]
            words = ", ".join(allowed)

            def check_enum(v, p, out, allowed=allowed, words=words):
                if v not in allowed or isinstance(v, bool):
                    out.append((p, f"{json.dumps(v)[:60]} is not one of: {words}"))

            checks.append(check_enum)
        checks.extend(self._string_checks(node))
        if "minimum" in node:
            minimum = node["minimum"]

            def check_minimum(v, p, out, minimum=minimum):
                if v < minimum:
                    out.append((p, f"must be at least {minimum}"))

            checks.append(check_minimum)
        checks.extend(self._array_checks(node))
        checks.extend(self._object_checks(node))

        # Always wrapped: a failed type check stops its own node, never its parent's.
        def check_all(v, p, out, checks=tuple(checks)):
            try:
                for check in checks:
                    check(v, p, out)
            except _Stop:
                pass

        return check_all

    def _string_checks(self, node: dict) -> list[Check]:
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
        if node.get("format") == "date-time":

            def check_date_time(v, p, out):
                if not _is_rfc3339(v):
                    out.append((p, f"{json.dumps(v[:60])} is not an RFC 3339 date-time"))

            checks.append(check_date_time)
        return checks

    def _array_checks(self, node: dict) -> list[Check]:
        checks: list[Check] = []
        if "minItems" in node or "maxItems" in node:
            lo, hi = node.get("minItems", 0), node.get("maxItems", math.inf)

            def check_count(v, p, out, lo=lo, hi=hi):
                if not lo <= len(v) <= hi:
                    size = f"exactly {lo}" if lo == hi else f"{lo} to {hi}"
                    out.append((p, f"must have {size} items, not {len(v)}"))
                    raise _Stop

            checks.append(check_count)
        if "prefixItems" in node:
            prefix = [self.compile(item) for item in node["prefixItems"]]

            def check_prefix(v, p, out, prefix=prefix):
                for i, (item, check) in enumerate(zip(v, prefix, strict=False)):
                    check(item, f"{p}/{i}", out)

            checks.append(check_prefix)
        elif "items" in node:
            item_check = self.compile(node["items"])

            def check_items(v, p, out, item_check=item_check):
                for i, item in enumerate(v):
                    item_check(item, f"{p}/{i}", out)

            checks.append(check_items)
        return checks

    def _object_checks(self, node: dict) -> list[Check]:
        checks: list[Check] = []
        required = node.get("required", [])
        if required:

            def check_required(v, p, out, required=required):
                for key in required:
                    if key not in v:
                        out.append((f"{p}/{key}", "is required"))

            checks.append(check_required)
        properties = {k: self.compile(s) for k, s in node.get("properties", {}).items()}
        extra = node.get("additionalProperties", True)
        extra_check = self.compile(extra) if isinstance(extra, dict) else None
        if properties or extra is not True:

            def check_properties(v, p, out, properties=properties, extra=extra):
                for key, item in v.items():
                    check = properties.get(key)
                    if check is not None:
                        check(item, f"{p}/{key}", out)
                    elif extra is False:
                        out.append((f"{p}/{_escape(key)}", "is not a field of this kind of line"))
                    elif extra_check is not None:
                        extra_check(item, f"{p}/{_escape(key)}", out)

            checks.append(check_properties)
        return checks


def _ecma_pattern(source: str) -> str:
    """ECMA-262's `$` (no multiline flag) is the end of the input; Python's `$` also matches
    before a final newline, which would let `"Q-017\\n"` pass as an id."""
    if source.endswith("$") and not source.endswith("\\$"):
        return source[:-1] + r"\Z"
    return source


class _Stop(Exception):
    """Raised by a failed type check: the other keywords of that node make no sense."""


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")[:100]


@cache
def line_checks() -> dict[str, Check]:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    compiler = _Compiler(schema)
    kinds = {}
    for branch in schema["oneOf"]:
        name = branch["$ref"].removeprefix("#/$defs/")
        kinds[name] = compiler.ref(branch["$ref"])
    assert set(kinds) == set(LINE_KINDS), kinds
    return kinds


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
