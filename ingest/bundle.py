"""Reading an evidence bundle line by line: bytes (plain or gzip) into parsed JSON objects,
or into problems of the form `line N: /json/pointer: message`.

No database here. Each line is then checked against the schema (`ingest.schema`), the
cross-line rules (`ingest.rules`), and stored (`ingest.writer`).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

SCHEMA_PATH = Path(__file__).parent / "schema" / "bundle.schema.json"
SCHEMA_NAME = "evidence-bundle/1"
LINE_KINDS = ("run", "passage", "case", "response")

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


class BundleTooLarge(BundleReadError):
    """The bundle is past one of its size limits (`Limits`); reading stops there."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one import may read, so that it costs at most a small multiple of what it stores.

    Each is a Django setting (`BUNDLE_MAX_…`, see docs/decisions.md, "Limits"); the
    defaults here are those of config/settings.py and serve code without Django settings.
    """

    # The bytes of the bundle once un-gzipped: a 2.4 MB gzip can inflate to 2.5 GB.
    inflated_bytes: int = 4 * 1024**3
    # Lines, blank ones included: a blank line stores nothing but costs a loop turn.
    lines: int = 5_000_000
    # One line: json turns 8 MiB of `{},{},…` into some 190 MB of Python objects.
    line_bytes: int = 8 * 1024**2
    # An object kept verbatim (a trace, the run's system, a retrieval's filters), as
    # stored (compact JSON, UTF-8): nothing reads it, so nothing needs it large.
    verbatim_bytes: int = 2 * 1024**2
    # A passage's text, in characters (the schema's own maximum is 200,000).
    passage_chars: int = 200_000


DEFAULT_LIMITS = Limits()


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


def iter_raw_lines(
    stream: IO[bytes], limits: Limits = DEFAULT_LIMITS
) -> Iterator[tuple[int, bytes | None]]:
    """Yield (line number, bytes); bytes is None for a line over `limits.line_bytes` (skipped).

    Raises BundleTooLarge as soon as the lines or the bytes read pass their limits, so
    a bomb costs what the limits allow, never what it inflates to.
    """
    number = 0
    inflated = 0
    longest = limits.line_bytes
    try:
        while True:
            chunk = stream.readline(longest + 1)
            if not chunk:
                return
            number += 1
            inflated += len(chunk)
            if number > limits.lines or inflated > limits.inflated_bytes:
                _within(number, inflated, limits)
            if len(chunk) > longest and not chunk.endswith(b"\n"):
                while chunk and not chunk.endswith(b"\n"):  # skip the rest of the line
                    chunk = stream.readline(longest)
                    inflated += len(chunk)
                    _within(number, inflated, limits)
                yield number, None
                continue
            yield number, chunk
    except EOFError:
        raise BundleReadError(
            number + 1, "the gzip stream is truncated (the file ends before its end marker)"
        ) from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise BundleReadError(number + 1, f"the gzip stream is corrupt ({exc})") from None


def _within(number: int, inflated: int, limits: Limits) -> None:
    if number > limits.lines:
        raise BundleTooLarge(
            number,
            f"the bundle has more than {limits.lines:,} lines, blank lines included "
            "(BUNDLE_MAX_LINES)",
        )
    if inflated > limits.inflated_bytes:
        raise BundleTooLarge(
            number,
            f"the bundle is larger than {limits.inflated_bytes:,} bytes uncompressed "
            "(BUNDLE_MAX_INFLATED_BYTES)",
        )


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


def strict_decode(text: str) -> Any:
    """The JSON of one line as the bundle format reads it: `json.loads` refusing NaN and
    Infinity, numbers too large for a float and duplicate keys (ValueError)."""
    return json.loads(
        text,
        parse_constant=_reject_constant,
        parse_float=_finite_float,
        object_pairs_hook=_no_duplicate_keys,
    )


_LARGEST_INT = 2**63  # orjson reads an integer past 64 bits as a float, without a word


def quick_decode(text: str) -> Any:
    """`strict_decode(text)` by orjson, in half the time; None where it cannot vouch for that.

    orjson refuses NaN, Infinity and numbers past a float as `strict_decode` does, but
    keeps the last of duplicate keys and reads an integer past 64 bits as a float. Both
    are caught by counting: without `\\u` escapes (which could spell a colon), every
    colon of the text separates a member of an object or stands in a string, so the text
    has as many as the value has members and colons in its strings, unless a duplicate
    key was dropped; and a float of 2**63 or more may have been such an integer. Then,
    as for any error, the caller asks `strict_decode`, which says what is wrong.
    """
    if "\\u" in text:
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    colons = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            colons += item.count(":")
        elif kind is dict:
            colons += len(item) + sum(key.count(":") for key in item)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float and not -_LARGEST_INT < item < _LARGEST_INT:
            return None
    return value if colons == text.count(":") else None


def parse_line(
    number: int, raw: bytes | None, limits: Limits = DEFAULT_LIMITS
) -> tuple[dict | None, Problem | None]:
    """Bytes of one line → (object, None) or (None, problem). Blank lines give (None, None)."""
    if raw is None:
        return None, Problem(
            number, "", f"line is longer than {limits.line_bytes:,} bytes (BUNDLE_MAX_LINE_BYTES)"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, Problem(number, "", f"not valid UTF-8 (byte {exc.start + 1} of the line)")
    if number == 1 and text.startswith("\ufeff"):
        text = text[1:]
    text = text.rstrip("\r\n")
    if not text.strip():
        return None, None
    value = quick_decode(text)
    try:
        if value is None:  # whatever the quick path does not vouch for, and every error
            value = strict_decode(text)
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
    """The first string (or key) holding a NUL or an unpaired surrogate, with its path.

    Depth first over one iterator per open container, so the walk holds as many
    entries as the line is deep, not one per value (millions, for `[{},{},…]`).
    """
    # (entries of a container as (key or index, child), its path, whether keys are keys)
    stack: list[tuple[Iterator[tuple[Any, Any]], str, bool]] = []
    if _is_container(value):
        stack.append(_entries(value, path))
    elif isinstance(value, str) and (problem := _string_problem(value)):
        return path, problem
    while stack:
        entries, where, keyed = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        key, child = entry
        here = f"{where}/{_escape(str(key))}"
        if keyed and (problem := _string_problem(key)):
            return here, f"the key {problem}"
        if isinstance(child, str) and (problem := _string_problem(child)):
            return here, problem
        if _is_container(child):
            stack.append(_entries(child, here))
    return None


def _entries(node: dict | list, path: str) -> tuple[Iterator[tuple[Any, Any]], str, bool]:
    if isinstance(node, dict):
        return iter(node.items()), path, True
    return enumerate(node), path, False


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
    """Nesting depth, iteratively (a recursive walk is what deep input attacks).

    One iterator per open container: the walk holds as many entries as the value is
    deep, where a stack of all the children held 170 MB for an 8 MiB `[{},{},…]`.
    """
    if not _is_container(value):
        return 0
    deepest = 1
    stack = [_children(value)]
    while stack:
        child = next(stack[-1], _END)
        if child is _END:
            stack.pop()
        elif _is_container(child):
            stack.append(_children(child))
            if len(stack) > deepest:
                deepest = len(stack)
                if deepest > MAX_DEPTH:
                    return deepest
    return deepest


_END = object()


def _children(node: dict | list) -> Iterator[Any]:
    return iter(node.values() if isinstance(node, dict) else node)


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


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")[:100]
