"""Reading the records of a file to convert, one at a time, each named as its reader sees it.

Two shapes: JSON Lines (one record a line: `line N`) and one JSON document holding an
array of records, at the top or under a key (ALCE's `{"args": …, "data": […]}`:
`data[N] (line L)`). The document is read in chunks and each record decoded on its own,
so memory holds one record and one chunk, never the whole file.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from ingest.bundle import BundleReadError, Limits, iter_raw_lines, open_bundle

CHUNK_CHARS = 64 * 1024
_BLANK = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder(parse_constant=lambda name: None)  # pandas' NaN: no value


class RecordError(Exception):
    """The input cannot be read on from here (broken JSON in a document, a broken gzip)."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True, slots=True)
class Record:
    where: str  # "line 3", "data[2] (line 57)": how a person finds it in the input
    value: Any  # a parsed record, or None when `problem` says why it could not be parsed
    problem: str = ""
    beside: str = ""  # the key of a value beside the records (ALCE's "args"), not a record


def iter_records(raw: IO[bytes], *, limits: Limits, key: str | None = None) -> Iterator[Record]:
    """The records of the input (plain or gzip): JSON Lines, or a JSON array (under `key`)."""
    stream, _ = open_bundle(raw)
    head = stream.peek(4096)[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")  # type: ignore[attr-defined]
    if head[:1] == b"[" or (key is not None and head[:1] == b"{" and _one_document(head)):
        yield from _iter_document(stream, limits=limits, key=key)
    else:
        yield from _iter_lines(stream, limits=limits)


def _one_document(head: bytes) -> bool:
    """Whether a file opening with `{` is one document holding the records, not JSON Lines
    (whose first line is a whole record)."""
    first_line = head.split(b"\n", 1)[0].strip()
    try:
        first = json.loads(first_line)
    except ValueError:
        return True  # pretty-printed, or a long first line: a document
    return not isinstance(first, dict) or "question" not in first


def _iter_lines(stream: IO[bytes], *, limits: Limits) -> Iterator[Record]:
    try:
        for number, chunk in iter_raw_lines(stream, limits):
            where = f"line {number}"
            if chunk is None:
                yield Record(where, None, f"longer than {limits.line_bytes:,} bytes")
                continue
            try:
                text = chunk.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield Record(where, None, f"not valid UTF-8 (byte {exc.start + 1} of the line)")
                continue
            text = text.lstrip("\ufeff").strip()
            if not text:
                continue
            try:
                value = _DECODER.decode(text)
            except json.JSONDecodeError as exc:
                yield Record(where, None, f"not valid JSON ({exc.msg}, column {exc.colno})")
                continue
            yield Record(where, value)
    except BundleReadError as exc:
        raise RecordError("", exc.problem.message) from None


class _Document:
    """A JSON document read in chunks: position, line number, one value at a time."""

    def __init__(self, stream: IO[bytes], limits: Limits):
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.limits = limits
        self.buf = ""
        self.pos = 0
        self.line = 1  # the line of buf[0]
        self.read = 0
        self.eof = False

    def line_at(self) -> int:
        return self.line + self.buf.count("\n", 0, self.pos)

    def fill(self) -> None:
        try:
            # As much again as the value being decoded holds so far: a long record is
            # re-parsed a few times, not once per chunk.
            data = self.stream.read(max(CHUNK_CHARS, len(self.buf) - self.pos))
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise RecordError(f"line {self.line_at()}", "not valid UTF-8") from None
        except (EOFError, OSError) as exc:
            raise RecordError("", f"the gzip stream is broken ({exc})") from None
        self.read += len(data)
        if self.read > self.limits.inflated_bytes:
            raise RecordError(
                "", f"the input is larger than {self.limits.inflated_bytes:,} bytes uncompressed"
            )
        self.line += self.buf.count("\n", 0, self.pos)
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        self.eof = not data

    def blank(self) -> None:
        while True:
            self.pos = _BLANK.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or self.eof:
                return
            self.fill()

    def peek(self) -> str:
        self.blank()
        return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def take(self, char: str, what: str) -> None:
        if self.peek() != char:
            found = repr(self.peek()) if self.peek() else "the end of the file"
            raise RecordError(f"line {self.line_at()}", f"expected {what}, found {found}")
        self.pos += 1

    def value(self, where: str) -> Any:
        """Decode the value at the position, reading more until it is whole."""
        self.blank()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise RecordError(where, f"not valid JSON ({exc.msg})") from None
                end = None
            # A value that ends where the chunk ends may go on (a number cut in two).
            whole = end is not None and (end < len(self.buf) or self.eof)
            if (end if whole else len(self.buf)) - self.pos > self.limits.line_bytes:
                raise RecordError(
                    where, f"a record is longer than {self.limits.line_bytes:,} bytes"
                )
            if whole:
                self.pos = end
                return value
            self.fill()


def _iter_document(stream: IO[bytes], *, limits: Limits, key: str | None) -> Iterator[Record]:
    doc = _Document(stream, limits)
    doc.fill()
    if doc.buf.startswith("\ufeff"):
        doc.pos = 1
    if doc.peek() == "{" and key is not None:
        doc.take("{", "an object")
        while doc.peek() != "}":
            name = doc.value(f"line {doc.line_at()}")
            doc.take(":", "':'")
            if name == key:
                yield from _iter_array(doc, prefix=key)
            else:
                where = f"line {doc.line_at()}"
                yield Record(where, doc.value(where), beside=str(name))
            if doc.peek() == ",":
                doc.pos += 1
            elif doc.peek() != "}":
                raise RecordError(f"line {doc.line_at()}", "expected ',' or '}' after a value")
        return
    yield from _iter_array(doc, prefix="")


def _iter_array(doc: _Document, *, prefix: str) -> Iterator[Record]:
    doc.take("[", "an array of records")
    index = 0
    while doc.peek() != "]":
        where = (
            f"{prefix}[{index}] (line {doc.line_at()})"
            if prefix
            else (f"record {index + 1} (line {doc.line_at()})")
        )
        yield Record(where, doc.value(where))
        index += 1
        if doc.peek() == ",":
            doc.pos += 1
        elif doc.peek() != "]":
            raise RecordError(f"line {doc.line_at()}", "expected ',' or ']' after a record")
    doc.take("]", "']'")


def finite(value: Any) -> Any:
    """The value with NaN and infinities as null (a score Ragas could not compute)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value
