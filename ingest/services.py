"""The bundle import: one streaming pass that checks every line and writes rows in batches.

The pieces, in the order a line meets them: `ingest.bundle` reads and parses it
and checks it against the schema; `ingest.rules` checks it against the lines
before it; `ingest.writer` stores what was accepted, a batch at a time. This
module holds the read loop that ties them together, in one transaction.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from evidence.models import Project, Snapshot
from ingest.bulk import RowWriter
from ingest.bundle import (
    MAX_PROBLEMS,
    BundleReadError,
    Limits,
    Problem,
    iter_raw_lines,
    open_bundle,
    parse_line,
)
from ingest.rules import Problems, Rules, StopReading
from ingest.schema import schema_problems
from ingest.seen import Seen
from ingest.writer import BatchWriter

FLUSH_EVERY_RESPONSES = 1000
FLUSH_EVERY_PASSAGES = 10000
# …or sooner, once the lines waiting for a flush hold this many bytes: row counts alone
# let 50 responses with 15 MB traces (a 770 KB gzip) wait together, 876 MB at peak.
FLUSH_EVERY_BYTES = 8 * 1024**2


def limits_from_settings() -> Limits:
    """The import's size limits, from the `BUNDLE_MAX_…` settings (docs/decisions.md)."""
    return Limits(
        inflated_bytes=settings.BUNDLE_MAX_INFLATED_BYTES,
        lines=settings.BUNDLE_MAX_LINES,
        line_bytes=settings.BUNDLE_MAX_LINE_BYTES,
        verbatim_bytes=settings.BUNDLE_MAX_VERBATIM_BYTES,
        passage_chars=settings.BUNDLE_MAX_PASSAGE_CHARS,
    )


class BundleInvalid(Exception):
    """The bundle was refused; nothing was stored. `problems` says why, line by line."""

    def __init__(self, problems: list[Problem], *, more: bool = False):
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = problems
        self.more = more

    def lines(self) -> list[str]:
        lines = [str(problem) for problem in self.problems]
        if self.more:
            lines.append(f"… stopped after {MAX_PROBLEMS} problems; fix these and import again")
        return lines


@dataclass
class ImportSummary:
    project: str
    run_id: str
    dry_run: bool
    lines: int = 0
    passages_new: int = 0
    passages_reused: int = 0
    cases_new: int = 0
    cases_reused: int = 0
    expectation_versions_new: int = 0
    responses: int = 0
    retrieved: int = 0
    citations: int = 0
    claims: int = 0
    verdicts: int = 0
    drift: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "lines": self.lines,
            "passages": {"new": self.passages_new, "reused": self.passages_reused},
            "cases": {
                "new": self.cases_new,
                "reused": self.cases_reused,
                "new_expectation_versions": self.expectation_versions_new,
            },
            "responses": self.responses,
            "retrieved": self.retrieved,
            "citations": self.citations,
            "claims": self.claims,
            "verdicts": self.verdicts,
            "drift": self.drift,
        }


# (bytes read so far, lines read so far, responses written so far in this transaction)
Progress = Callable[[int, int, int], None]


YOUNG_THRESHOLD = 50_000  # objects allocated between young collections (Python's: 2,000)


def bundle_import(
    *,
    stream: IO[bytes],
    project_slug: str,
    create_project: bool = False,
    user: AbstractBaseUser | None = None,
    source_name: str = "",
    dry_run: bool = False,
    new_expectation_versions: bool = False,
    progress: Progress | None = None,
    before_commit: Callable[[ImportSummary], None] | None = None,
) -> ImportSummary:
    """Validate and store one bundle in one transaction, or store nothing and raise BundleInvalid.

    The stream is read once. Lines are checked as they come; rows are written
    in batches as they are known good, and the transaction is rolled back at
    the end if any line had a problem (or when `dry_run`). What later lines may
    refer to is kept in temporary tables (`ingest.seen`), so memory stays flat
    however long the bundle is.

    `before_commit` is called with the summary inside the transaction, when the import is
    about to be stored; whatever it writes commits with the run, and whatever it raises
    rolls the run back and reaches the caller (a job that was given up meanwhile).
    """
    importer = _Importer(
        project_slug=project_slug,
        create_project=create_project,
        user=user,
        source_name=source_name,
        dry_run=dry_run,
        new_expectation_versions=new_expectation_versions,
    )
    # What exists before the import (Django and the apps, some 55,000 objects) outlives it:
    # out of the cyclic collector's sight, a full collection walks only the current batch
    # (GC 0.75-0.87 s instead of 1.15 of 14 s CPU at 10,000 cases, measured interleaved).
    # A caller's own freeze is left to the caller, whose unfreeze then releases the import's
    # objects too. Counted before our freeze only: counting walks every frozen object
    # (2-10 ms after ours, per call, twice per import; the test suite imports thousands).
    outer_freeze = gc.get_freeze_count()
    gc.freeze()
    # Young collections less often: a batch allocates hundreds of thousands of objects,
    # nearly none in cycles (refcounting frees them), and each collection of the youngest
    # generation walked them anyway.
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), *threshold[1:])
    try:
        with transaction.atomic():
            try:
                importer.read(stream, progress)
            except BaseException:
                importer.rows.wait(raising=False)  # before the rollback uses the connection
                raise
            if importer.problems or dry_run:
                transaction.set_rollback(True)  # and with it the temporary tables
            else:
                importer.seen.drop()
                # The stored figures were written with each batch (ingest.tallies): the
                # run's own row is their sum.
                importer.batches.tallies.finish()
                importer.rows.analyze_after_commit()
                if before_commit is not None:
                    before_commit(importer.summary)
    except IntegrityError as exc:
        # Every rule is checked before writing; what reaches here is a race with
        # another writer (the same run_id imported twice at once, say).
        importer.problems.last_word(Problem(0, "", f"the database refused the import: {exc}"))
    except DatabaseError as exc:
        importer.problems.last_word(
            Problem(0, "", f"the database failed during the import: {exc}")
        )
    finally:
        gc.set_threshold(*threshold)
        if not outer_freeze:
            gc.unfreeze()
    if importer.problems:
        shown, more = importer.problems.report()
        raise BundleInvalid(shown, more=more)
    return importer.summary


class _Importer:
    """The read loop: each line through the schema and the rules, then into a batch."""

    def __init__(
        self,
        *,
        project_slug: str,
        create_project: bool,
        user: AbstractBaseUser | None,
        source_name: str,
        dry_run: bool,
        new_expectation_versions: bool,
    ):
        self.project_slug = project_slug
        self.create_project = create_project
        self.user = user
        self.source_name = source_name
        self.new_expectation_versions = new_expectation_versions
        self.problems = Problems()
        self.limits = limits_from_settings()
        self.rules = Rules(problems=self.problems, limits=self.limits)
        self.summary = ImportSummary(project=project_slug, run_id="", dry_run=dry_run)
        self.project: Project | None = Project.objects.filter(slug=project_slug).first()
        self.rows = RowWriter()
        self.seen = Seen()
        self.batches: BatchWriter | None = None  # from the run line on
        self.pending_bytes = 0  # of the lines waiting for a flush, as read
        self.first_line: int | None = None
        self.seen_content = False
        self.now = timezone.now()
        self.source_hash = hashlib.sha256()

    def read(self, raw: IO[bytes], progress: Progress | None) -> None:
        if self.project is None and not self.create_project:
            self.problems.add(0, "", f"project {self.project_slug!r} does not exist")
            return
        stream, counter = open_bundle(raw)
        self.rows.overlap = True  # until the last flush: PostgreSQL stores while we read
        read_error: Problem | None = None
        try:
            for number, chunk in iter_raw_lines(stream, self.limits):
                if chunk is not None:
                    self.source_hash.update(chunk)
                self.summary.lines = number
                if progress is not None and number % 500 == 0:
                    progress(counter.bytes_read, number, self.summary.responses)
                if chunk == b"\n":
                    continue  # blank: nothing to parse or store (millions, in a bomb)
                self.feed(number, chunk)
                rules = self.rules
                if (
                    len(rules.responses) >= FLUSH_EVERY_RESPONSES
                    or len(rules.passages) >= FLUSH_EVERY_PASSAGES
                    or self.pending_bytes >= FLUSH_EVERY_BYTES
                ):
                    self.flush()
        except BundleReadError as exc:
            read_error = exc.problem
        except StopReading:
            pass
        else:
            if not self.seen_content:
                self.problems.add(0, "", "the bundle is empty: its first line must be the run")
        # Whatever ended reading, the lines read so far get every check, those only a
        # flush makes included: the report is then the first problems of the bundle.
        self.problems.capped = False
        self.flush(last=True)
        if read_error is not None:
            self.problems.last_word(read_error)
        elif self.batches is not None:
            self.batches.finish(
                source_name=self.source_name,
                source_sha256=self.source_hash.hexdigest(),
                user=self.user,
            )
        if progress is not None:
            progress(counter.bytes_read, self.summary.lines, self.summary.responses)

    def flush(self, *, last: bool = False) -> None:
        """Settle the batch's questions about earlier batches, store it, remember it.

        The batch's rows are stored while the next batch is read (`RowWriter.send`), and
        the next flush first waits for them; the last batch's before the run is stored.
        """
        self.rows.wait()
        with self.problems.uncapped():
            batch = self.rules.settle(self.seen, last=last)
            if self.batches is not None:
                self.batches.write(batch)
            if not last:  # nothing asks after the last batch
                self.rules.remember(self.seen, batch)
        self.rules.next_batch()
        self.pending_bytes = 0
        if last:
            self.rows.sync()
            self.rows.overlap = False
        else:
            self.rows.send()
        if self.batches is not None and self.batches.writing:
            # While the batch is being stored (with the last, after): its stored figures.
            self.batches.tallies.make()
        if self.problems.capped and self.problems.over():
            raise StopReading

    def feed(self, number: int, chunk: bytes | None) -> None:
        if chunk is None or chunk.strip():
            self.seen_content = True
        line, problem = parse_line(number, chunk, self.limits)
        if problem is not None:
            self.problems.add(problem.line, problem.path, problem.message)
            return
        if line is None:
            return  # a blank line
        first = self.first_line is None
        if first:
            self.first_line = number
        kind = line.get("kind")
        if first and kind != "run":
            self.problems.add(number, "/kind", 'the first line must be the run (kind "run")')
        found = schema_problems(number, line)
        if found:
            for item in found:
                self.problems.add(item.line, item.path, item.message)
            return
        if kind == "run":
            if self.rules.on_run(number, line, first=first, project=self.project):
                self.start(line)
            return
        # Until a run is taken there is nowhere to store lines: they are only checked.
        if kind == "passage":
            taken = self.rules.on_passage(number, line)
        elif kind == "case":
            taken = self.rules.on_case(number, line)
        else:
            taken = self.rules.on_response(number, line)
        if taken is not None and chunk is not None:
            self.pending_bytes += len(chunk)

    def start(self, line: dict) -> None:
        """The run line was taken: make its project and snapshot if need be, start batches."""
        self.summary.run_id = line["run_id"]
        if self.project is None:
            self.project = Project.objects.create(slug=self.project_slug, name=self.project_slug)
        snapshot, fresh = Snapshot.objects.get_or_create(
            project=self.project, name=line["collection_snapshot"]
        )
        self.batches = BatchWriter(
            rows=self.rows,
            problems=self.problems,
            summary=self.summary,
            project=self.project,
            snapshot=snapshot,
            fresh_snapshot=fresh,
            run_line=line,
            new_expectation_versions=self.new_expectation_versions,
            now=self.now,
        )
