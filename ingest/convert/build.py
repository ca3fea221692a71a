"""Building bundle lines from converted records: refs, passages declared once, ids, checks.

Everything here is a function of the input alone (no clock, no randomness, no set
order), so the same input always gives the same bundle bytes.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from evidence.canonical import text_sha256
from ingest.bundle import MAX_PROBLEMS, SCHEMA_NAME, Problem
from ingest.schema import schema_problems
from ingest.services import BundleInvalid

# The sources carry no time of the run; a fixed one keeps the bytes the same (--created-at).
UNKNOWN_TIME = "1970-01-01T00:00:00Z"
ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
REF_PATTERN = re.compile(r"^([^@#\s]{1,200})@([^@#\s]{1,200})#([^@#\s]{1,200})$")
NOT_ID = re.compile(r"[^A-Za-z0-9._:-]+")
NOT_PART = re.compile(r"[@#\s]+")


class Invalid(Exception):
    """One record cannot be converted; `path` is a JSON pointer into the record."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True, slots=True)
class ConvertProblem:
    where: str  # the input's own line or record
    path: str
    message: str

    def __str__(self) -> str:
        parts = [part for part in (self.where, self.path) if part]
        return ": ".join([*parts, self.message])


class ConversionInvalid(BundleInvalid):
    """The input could not be converted, so nothing is imported: a refused bundle, whose
    `problems` (ConvertProblem) name the input's lines or records, not the bundle's."""


# "(first on line 3)", "already has a response on line 9": a bundle line inside a message.
_LINE_IN_MESSAGE = re.compile(r"\bon line (\d+)\b")


@dataclass
class Origins:
    """Which input record made each bundle line, so the importer's `line N` problems of a
    converted bundle (a text another snapshot holds, a changed expectation) name the
    user's own record, as the conversion's problems do: the bundle is never seen."""

    starts: list[int] = field(default_factory=list)  # the first bundle line of each record
    wheres: list[str] = field(default_factory=list)  # the record's place: "line 2"
    kinds: list[list[str]] = field(default_factory=list)  # its lines' kinds, in order

    def add(self, where: str, lines: list[dict[str, Any]]) -> None:
        if lines:
            first = self.starts[-1] + len(self.kinds[-1]) if self.starts else 1
            self.starts.append(first)
            self.wheres.append(where)
            self.kinds.append([line["kind"] for line in lines])

    def at(self, line: int) -> tuple[str, str] | None:
        """(the record's place, the kind of the line), or None for a line not made here."""
        index = bisect.bisect_right(self.starts, line) - 1
        if index < 0 or line - self.starts[index] >= len(self.kinds[index]):
            return None
        return self.wheres[index], self.kinds[index][line - self.starts[index]]

    def placed(self, exc: BundleInvalid) -> BundleInvalid:
        """The importer's refusal of the converted bundle, its problems named by record."""
        if isinstance(exc, ConversionInvalid):
            return exc  # named by record already
        return ConversionInvalid([self._problem(p) for p in exc.problems], more=exc.more)

    def _problem(self, problem: Problem) -> ConvertProblem:
        message = _LINE_IN_MESSAGE.sub(self._place_of, problem.message)
        origin = self.at(problem.line) if problem.line else None
        if origin is None:
            return ConvertProblem("", problem.path, message)
        where, kind = origin
        at = f"its {kind} line, {problem.path}" if problem.path else f"its {kind} line"
        return ConvertProblem(where, "", f"{at}: {message}")

    def _place_of(self, match: re.Match[str]) -> str:
        origin = self.at(int(match.group(1)))
        return f"in {origin[0]}" if origin else match.group(0)


# The schema's maxLength of collection_snapshot; the command, the upload page and the API
# hold a chosen name to the same rule (`snapshot_name`).
SNAPSHOT_CHARS = 200
_SNAPSHOT = re.compile(rf"[^\x00-\x1f\x7f]{{0,{SNAPSHOT_CHARS}}}")


def snapshot_name(value: str) -> str:
    """A snapshot chosen for a conversion, without the blanks around it ("": the format's
    name); ValueError when it is longer than the schema allows or holds a control character
    (a name shown on every page, and a NUL PostgreSQL cannot store)."""
    name = value.strip()
    if not _SNAPSHOT.fullmatch(name):
        raise ValueError(name)
    return name


@dataclass(frozen=True)
class ConvertOptions:
    run_id: str
    snapshot: str = ""  # default: the format's name
    created_at: str = UNKNOWN_TIME
    label: str = ""


@dataclass(frozen=True, slots=True)
class Context:
    """A passage as a source gives it: its text, and what else it says about it."""

    text: str
    id: str | None = None
    title: str | None = None
    url: str | None = None


def dumps(line: dict[str, Any]) -> bytes:
    """One bundle line: compact JSON, keys in the order they were built, UTF-8."""
    return (
        json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )
        + b"\n"
    )


def digest(text: str, size: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:size]


def ref_parts(context: Context) -> tuple[str, str, str]:
    """`doc_id`, `version`, `chunk_id` of a context: from its id when it has one (a whole
    ref is taken as it is), else from its text's SHA-256, so the same text always gets the
    same ref."""
    if context.id is not None and context.id.strip():
        whole = REF_PATTERN.match(context.id)
        if whole:
            return whole.group(1), whole.group(2), whole.group(3)
        return NOT_PART.sub("_", context.id.strip())[:200], "1", "1"
    return f"ctx-{digest(context.text)}", "1", "1"


def case_id_for(given: Any, query: str) -> str:
    """The source's own id made a bundle id, else one derived from the query text: the same
    question gets the same case in every converted replay."""
    if isinstance(given, (str, int)) and not isinstance(given, bool) and str(given).strip():
        cleaned = NOT_ID.sub("-", str(given).strip()).strip("-")[:100]
        if cleaned:
            return cleaned
    return f"q-{digest(query)}"


@dataclass
class Builder:
    """What the lines so far declared, and the problems found, for one conversion."""

    fmt: str
    options: ConvertOptions
    system: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[ConvertProblem] = field(default_factory=list)
    more: bool = False
    passages: dict[str, tuple[str, str]] = field(default_factory=dict)  # ref → (sha, where)
    cases: dict[str, str] = field(default_factory=dict)  # case_id → where
    records: int = 0

    def problem(self, where: str, path: str, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(ConvertProblem(where, path, message))
        else:
            self.more = True

    def run_line(self) -> dict[str, Any]:
        line: dict[str, Any] = {
            "kind": "run",
            "schema": SCHEMA_NAME,
            "run_id": self.options.run_id,
            "created_at": self.options.created_at,
            "collection_snapshot": self.options.snapshot or self.fmt,
            "system": {**self.system, "converted_from": self.fmt},
        }
        if self.options.label:
            line["label"] = self.options.label
        notes = [f"Converted from {self.fmt} by convert_bundle.", *self.notes]
        if self.options.created_at == UNKNOWN_TIME:
            notes.append("The source does not say when the run was made.")
        line["notes"] = " ".join(notes)
        return line

    def passage(
        self, context: Context, *, where: str, path: str, lines: list[dict[str, Any]]
    ) -> str:
        """The ref of a context; its passage line is added to `lines` the first time."""
        if not isinstance(context.text, str) or not context.text:
            raise Invalid(path, "a context needs a non-empty text")
        doc_id, version, chunk_id = ref_parts(context)
        ref = f"{doc_id}@{version}#{chunk_id}"
        sha = text_sha256(context.text)
        if ref in self.passages:
            first_sha, first_where = self.passages[ref]
            if first_sha != sha:
                raise Invalid(
                    path,
                    f"context {context.id!r} has another text than it had in {first_where}",
                )
            return ref
        self.passages[ref] = (sha, where)
        line: dict[str, Any] = {
            "kind": "passage",
            "ref": ref,
            "doc_id": doc_id,
            "version": version,
            "chunk_id": chunk_id,
            "text": context.text,
            "sha256": sha,
        }
        if context.title:
            line["title"] = context.title
        if context.url:
            line["url"] = context.url
        lines.append(line)
        return ref

    def case(self, case_id: str, *, where: str) -> None:
        if case_id in self.cases:
            raise Invalid(
                "", f"case {case_id} again (first in {self.cases[case_id]}): one answer a case"
            )
        self.cases[case_id] = where

    def checked(self, where: str, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The lines, each held to the bundle schema; a problem is the record's, not a line's."""
        found = False
        for line in lines:
            for problem in schema_problems(0, line):
                found = True
                self.problem(
                    where, "", f"its {line['kind']} line, {problem.path}: {problem.message}"
                )
        return [] if found else lines


def text_of(record: dict[str, Any], *keys: str) -> tuple[str, Any]:
    """The first of `keys` the record has (not null): (key, value); ("", None) if none."""
    for key in keys:
        if record.get(key) is not None:
            return key, record[key]
    return "", None


def require_text(record: dict[str, Any], *keys: str, allow_empty: bool = False) -> tuple[str, str]:
    key, value = text_of(record, *keys)
    if value is None:
        raise Invalid("", f"needs {' or '.join(repr(k) for k in keys)}")
    if not isinstance(value, str):
        raise Invalid(f"/{key}", "must be a string")
    if not allow_empty and not value.strip():
        raise Invalid(f"/{key}", "must not be empty")
    return key, value


def ranked(refs: list[str]) -> list[dict[str, Any]]:
    return [{"ref": ref, "rank": rank} for rank, ref in enumerate(refs, 1)]


def response_line(
    *,
    fmt: str,
    case_id: str,
    text: str,
    retrieved: list[dict[str, Any]],
    citations: list[dict[str, Any]] | None = None,
    claims: list[dict[str, Any]] | None = None,
    trace: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A response line; an empty answer is an abstention, the trace is kept under `fmt`."""
    line: dict[str, Any] = {"kind": "response", "case_id": case_id, "text": text}
    if not text.strip():
        line["abstained"] = True
    line["retrieved"] = retrieved
    if citations:
        line["citations"] = citations
    if claims:
        line["claims"] = claims
    if trace:
        line["trace"] = {fmt: trace}
    return line


def rest_of(record: dict[str, Any], used: set[str]) -> dict[str, Any]:
    """What the bundle has no field for, kept verbatim in the response's trace."""
    return {key: value for key, value in record.items() if key not in used}
