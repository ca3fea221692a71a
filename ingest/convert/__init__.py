"""Converting other tools' files into an evidence bundle (issue 14; docs/import-formats.md).

`iter_bundle_lines` turns the bytes of a Ragas, ALCE or jsonl-simple file into the
lines of one bundle, a record at a time; `convert_bundle` writes them to a stream. Each
converted line is held to the bundle schema as it is made, so a problem names the
input's own line or record; the importer then checks the bundle as it checks any other.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import IO

from ingest.bundle import DEFAULT_LIMITS, Limits
from ingest.convert import alce, ragas, simple
from ingest.convert.build import (
    SNAPSHOT_CHARS,
    UNKNOWN_TIME,
    Builder,
    ConversionInvalid,
    ConvertOptions,
    ConvertProblem,
    Invalid,
    Origins,
    dumps,
    snapshot_name,
)
from ingest.convert.records import RecordError, iter_records

__all__ = [
    "FORMATS",
    "SNAPSHOT_CHARS",
    "UNKNOWN_TIME",
    "ConversionInvalid",
    "ConvertOptions",
    "Origins",
    "convert_bundle",
    "converted_file",
    "default_run_id",
    "iter_bundle_lines",
    "snapshot_name",
]
# Held in memory up to this size, then in a temporary file.
SPOOL_BYTES = 8 * 1024**2

FORMATS: dict[str, ModuleType] = {module.FORMAT: module for module in (ragas, alce, simple)}


def iter_bundle_lines(
    *,
    fmt: str,
    source: IO[bytes],
    options: ConvertOptions,
    limits: Limits = DEFAULT_LIMITS,
    origins: Origins | None = None,
) -> Iterator[bytes]:
    """The bundle's lines, as bytes, one record at a time; raises ConversionInvalid at the
    end (after the last good line) when any record could not be converted. `origins`, when
    given, learns which record made each line."""
    converter = FORMATS[fmt]
    builder = Builder(fmt, options)
    origins = Origins() if origins is None else origins
    started = False
    try:
        for record in iter_records(source, limits=limits, key=converter.KEY):
            if record.beside:
                converter.beside(builder, record.beside, record.value)
                continue
            builder.records += 1
            if record.problem:
                builder.problem(record.where, "", record.problem)
                continue
            if not started:
                started = True
                run = builder.checked("the run", [builder.run_line()])
                origins.add("the run", run)
                for line in run:
                    yield dumps(line)
            try:
                lines = converter.convert(builder, record.value, where=record.where)
            except Invalid as exc:
                builder.problem(record.where, exc.path, exc.message)
                continue
            lines = builder.checked(record.where, lines)
            origins.add(record.where, lines)
            for line in lines:
                yield dumps(line)
            if builder.more:
                break
    except RecordError as exc:
        builder.problem("", "", str(exc))
    if not builder.records and not builder.problems:
        builder.problem("", "", f"the file holds no {fmt} record")
    if builder.problems:
        raise ConversionInvalid(builder.problems, more=builder.more)


def convert_bundle(
    *,
    fmt: str,
    source: IO[bytes],
    out: IO[bytes],
    run_id: str,
    snapshot: str = "",
    created_at: str = UNKNOWN_TIME,
    label: str = "",
    limits: Limits = DEFAULT_LIMITS,
    origins: Origins | None = None,
) -> int:
    """Write the bundle converted from `source` to `out`; the number of lines written.

    Raises ConversionInvalid (its `problems`, each naming the input's line or record);
    `out` may then hold a part of the bundle, which the caller throws away.
    """
    options = ConvertOptions(run_id=run_id, snapshot=snapshot, created_at=created_at, label=label)
    written = 0
    lines = iter_bundle_lines(
        fmt=fmt, source=source, options=options, limits=limits, origins=origins
    )
    for line in lines:
        out.write(line)
        written += 1
    return written


def converted_file(
    *, fmt: str, source: IO[bytes], run_id: str, limits: Limits = DEFAULT_LIMITS, **options: str
) -> tuple[IO[bytes], Origins]:
    """The converted bundle in a temporary file, at its start, for the importer to read, and
    where each of its lines came from (`Origins.placed` names the importer's problems by
    record); raises ConversionInvalid (a BundleInvalid, so callers of the import handle it)."""
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
    origins = Origins()
    try:
        convert_bundle(
            fmt=fmt,
            source=source,
            out=spool,
            run_id=run_id,
            limits=limits,
            origins=origins,
            **options,
        )
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool, origins  # type: ignore[return-value]


def default_run_id(name: str, fmt: str) -> str:
    """A file's name without its extensions, made a run id (the format's name when empty)."""
    stem = Path(name).name.split(".")[0]
    return re.sub(r"[^A-Za-z0-9._:-]+", "-", stem).strip("-")[:100] or fmt


_ = ConvertProblem  # re-exported for callers that show problems one by one
