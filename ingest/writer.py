"""Storing what the rules accepted, in batches: passages, cases and expectations, responses.

Primary keys are reserved before rows are built (`RowWriter.reserve_ids`), so
every foreign key is known without a round trip per row, and each table's
rows of a batch go in with one COPY (PostgreSQL) or one executemany (SQLite).
Some rules need the database and are checked here, per batch: a passage
already stored in the snapshot must keep its text and locator, a case already
stored must keep its expectation. After a problem nothing more is written (the
transaction is rolled back), but the look-ups go on, to report what they find.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.contrib.auth.models import AbstractBaseUser

from cards.models import (
    Claim,
    ClaimRevision,
    ClaimTally,
    ResponseReview,
    ResponseTally,
    VerdictRevision,
)
from cards.prechecks import numbers_in
from evidence.drift import drifted_from
from evidence.expectations import stored_document
from evidence.models import Case, Expectation, Passage, Project, Snapshot
from evidence.rows import rows_by_key
from ingest.bulk import RowWriter, to_json
from ingest.responses import Ids, ResponseRows
from ingest.rows import (
    CaseRow,
    CitationRow,
    ClaimRevisionRow,
    ClaimRow,
    ExpectationRow,
    PassageRow,
    ResponseReviewRow,
    ResponseRow,
    RetrievalRow,
    VerdictRevisionRow,
)
from ingest.rules import Batch, CaseSeen, PassageSeen, Problems, ResponseSeen
from ingest.schema import parse_rfc3339
from ingest.tallies import ImportTallies, Known, known
from replay.models import Citation, Response, Retrieval, Run

if TYPE_CHECKING:
    from ingest.services import ImportSummary

MAX_DRIFT = 1000  # drift entries in the summary: it stays small however large the snapshot
# A passage's locator: stored once per snapshot, it may not change on a later import.
PASSAGE_LOCATOR = (
    "title", "url", "anchor", "context_before", "context_after", "version_status", "superseded_by",
)  # fmt: skip
PASSAGE_DEFAULTS = {"version_status": "unknown"}


class BatchWriter:
    """The rows of one run, written a batch at a time inside the import's transaction."""

    def __init__(
        self,
        *,
        rows: RowWriter,
        problems: Problems,
        summary: ImportSummary,
        project: Project,
        snapshot: Snapshot,
        fresh_snapshot: bool,
        run_line: dict,
        new_expectation_versions: bool,
        now: datetime,
    ) -> None:
        self.rows = rows
        self.problems = problems
        self.summary = summary
        self.project = project
        self.snapshot = snapshot
        # A snapshot this import creates holds only what this import writes (where the
        # rules refuse a ref declared twice), and a project with one snapshot has no
        # drift: skip those look-ups.
        # They are not free: inside the import's transaction the planner has no statistics
        # for the rows just written and scans them all, once per batch.
        self.fresh_snapshot = fresh_snapshot
        self.other_snapshots = (
            Snapshot.objects.filter(project=project).exclude(pk=snapshot.pk).exists()
        )
        self.run_line = run_line
        self.run_pk = rows.reserve_ids(Run, 1)[0]
        # The run is stored last (its line's hash covers the whole bundle): its responses'
        # key to it is the one checked at COMMIT.
        # So is the stored figures' key to it: they are written with each batch.
        rows.check_foreign_keys_immediately(
            but=[(Response, "run"), (ClaimTally, "run"), (ResponseTally, "run")]
        )
        self.new_expectation_versions = new_expectation_versions
        self.now = now
        # The stored figures, made batch by batch from the rows as they are written.
        self.tallies = ImportTallies(rows=rows, run_pk=self.run_pk)
        self.known: dict[str, Known] = {}  # what the figures read of the batch's passages

    @property
    def writing(self) -> bool:
        return not self.problems

    def write(self, batch: Batch) -> None:
        """Store one batch the rules settled (or only check it against the database)."""
        self.flush_passages(batch.passages)
        self.flush_cases(batch.cases)
        if self.writing:
            if earlier := batch.earlier_refs - self.known.keys():
                # Stored by an earlier batch (or before this import, in this snapshot).
                for row in rows_by_key(
                    Passage._meta.db_table,
                    "ref",
                    earlier,
                    ("ref", "id", "doc_id", "version_status", "numbers"),
                    where=("snapshot_id", self.snapshot.pk),
                ):
                    ref, pk, doc_id, status, numbers = row
                    self.known[ref] = known(pk, ref, doc_id, status, numbers)
            self.flush_responses(batch.responses, {ref: k.pk for ref, k in self.known.items()})
        self.known = {}

    def flush_passages(self, pending: list[PassageSeen]) -> None:
        if not pending:
            return
        stored = {}
        if not self.fresh_snapshot:
            stored = {
                row[0]: row[1:]
                for row in Passage.objects.filter(
                    snapshot=self.snapshot, ref__in=[p.ref for p in pending]
                ).values_list("ref", "id", "sha256", *PASSAGE_LOCATOR, "doc_id", "numbers")
            }
        new: list[PassageSeen] = []
        for seen in pending:
            if seen.ref not in stored:
                new.append(seen)
                continue
            pk, digest, *locator, doc_id, numbers = stored[seen.ref]
            if digest != seen.sha256:
                self.problems.add(
                    seen.line,
                    "/text",
                    f"passage {seen.ref} already has another text in snapshot "
                    f"{self.snapshot.name} (stored SHA-256 {digest}, this line {seen.sha256}); "
                    "a changed text belongs to another snapshot or version",
                )
                continue
            changed = [
                name
                for name, value in zip(PASSAGE_LOCATOR, locator, strict=True)
                if seen.data.get(name, PASSAGE_DEFAULTS.get(name, "")) != value
            ]
            if changed:
                self.problems.add(
                    seen.line,
                    f"/{changed[0]}",
                    f"passage {seen.ref} is stored in snapshot {self.snapshot.name} with the "
                    f"same text but another {', '.join(changed)}; a snapshot is frozen",
                )
                continue
            seen.pk = pk
            status = locator[PASSAGE_LOCATOR.index("version_status")]
            self.known[seen.ref] = known(pk, seen.ref, doc_id, status, numbers)
            self.summary.passages_reused += 1
        if not self.writing:
            return
        rows = []
        for seen, pk in zip(new, self.rows.reserve_ids(Passage, len(new)), strict=True):
            seen.pk = pk
            d = seen.data
            rows.append(
                PassageRow(
                    id=pk,
                    snapshot_id=self.snapshot.pk,
                    ref=seen.ref,
                    doc_id=d["doc_id"],
                    version=d["version"],
                    chunk_id=d["chunk_id"],
                    text=d["text"],
                    sha256=seen.sha256,
                    title=d.get("title", ""),
                    url=d.get("url", ""),
                    anchor=d.get("anchor", ""),
                    context_before=d.get("context_before", ""),
                    context_after=d.get("context_after", ""),
                    version_status=d.get("version_status", PASSAGE_DEFAULTS["version_status"]),
                    superseded_by=d.get("superseded_by", ""),
                    numbers=" ".join(numbers_in(d["text"])),
                )
            )
        for row in rows:
            self.known[row.ref] = known(
                row.id, row.ref, row.doc_id, row.version_status, row.numbers
            )
        self.rows.write(Passage, PassageRow._fields, rows)
        self.summary.passages_new += len(rows)
        if self.other_snapshots:
            self.record_drift([p.ref for p in pending])

    def record_drift(self, refs: list[str]) -> None:
        """The same ref with another text in another snapshot is drift, not an error.

        Asked once this batch's passages are stored: `drifted_from` compares stored texts.
        """
        room = MAX_DRIFT - len(self.summary.drift)
        if room <= 0:
            return
        self.rows.sync()  # the batch's passages, stored before they are compared
        drifted = drifted_from(project_id=self.project.pk, snapshot_id=self.snapshot.pk, refs=refs)
        for ref, snapshot_name, digest, mine in drifted.values_list(
            "ref", "snapshot__name", "sha256", "mine"
        )[:room]:
            self.summary.drift.append(
                {"ref": ref, "snapshot": snapshot_name, "sha256": digest, "this_sha256": mine}
            )

    def flush_cases(self, pending: list[CaseSeen]) -> None:
        if not pending:
            return
        stored_cases = dict(
            Case.objects.filter(
                project=self.project, case_id__in=[c.case_id for c in pending]
            ).values_list("case_id", "id")
        )
        versions: dict[int, list[Expectation]] = {}
        for expectation in Expectation.objects.filter(case_id__in=stored_cases.values()).order_by(
            "case_id", "version"
        ):
            versions.setdefault(expectation.case_id, []).append(expectation)
        new_cases: list[CaseSeen] = []
        new_expectations: list[tuple[CaseSeen, int]] = []
        for seen in pending:
            pk = stored_cases.get(seen.case_id)
            if pk is None:
                new_cases.append(seen)
                new_expectations.append((seen, 1))
                continue
            seen.pk = pk
            known = versions.get(pk, [])
            match = next((e for e in known if e.sha256 == seen.sha256), None)
            if match is not None:
                seen.expectation_pk = match.pk
                self.summary.cases_reused += 1
            elif self.new_expectation_versions:
                new_expectations.append((seen, known[-1].version + 1 if known else 1))
                self.summary.cases_reused += 1
                self.summary.expectation_versions_new += 1
            else:
                latest = known[-1]
                changed = [
                    name
                    for name, value in seen.document.items()
                    if stored_document(latest)[name] != value
                ]
                self.problems.add(
                    seen.line,
                    "/case_id",
                    f"case {seen.case_id} differs from its stored expectation (version "
                    f"{latest.version}) in: {', '.join(changed)}; expectations are fixed before "
                    "generation — import with a new expectation version if the change is intended",
                )
        if not self.writing:
            return
        for seen, pk in zip(new_cases, self.rows.reserve_ids(Case, len(new_cases)), strict=True):
            seen.pk = pk
        self.rows.write(
            Case,
            CaseRow._fields,
            [CaseRow(id=c.pk, project_id=self.project.pk, case_id=c.case_id) for c in new_cases],
        )
        ids = self.rows.reserve_ids(Expectation, len(new_expectations))
        rows = []
        for (seen, version), pk in zip(new_expectations, ids, strict=True):
            seen.expectation_pk = pk
            d = seen.document
            rows.append(
                ExpectationRow(
                    id=pk,
                    case_id=seen.pk,
                    version=version,
                    query=d["query"],
                    query_id=seen.query_id,
                    required_facts=to_json(d["required_facts"]),
                    relevant_refs=to_json(d["relevant_refs"]),
                    known_gaps=to_json(d["known_gaps"]),
                    sha256=seen.sha256,
                )
            )
        self.rows.write(Expectation, ExpectationRow._fields, rows)
        self.summary.cases_new += len(new_cases)

    def flush_responses(
        self, pending: list[ResponseSeen], passage_pks: dict[str, int | None]
    ) -> None:
        if not pending:
            return
        claims = [c for r in pending for c in r.data.get("claims", ())]
        ids = Ids(
            self.rows,
            {
                Response: len(pending),
                Retrieval: sum(len(r.data["retrieved"]) for r in pending),
                Citation: sum(len(r.data.get("citations", ())) for r in pending),
                Claim: len(claims),
                ClaimRevision: len(claims),
                VerdictRevision: sum(len(c.get("judgements", ())) for c in claims),
                ResponseReview: sum("claims" in r.data for r in pending),
            },
        )
        batch = ResponseRows(
            ids=ids,
            passage_pks=passage_pks,
            run_pk=self.run_pk,
            project_slug=self.project.slug,
            run_id=self.run_line["run_id"],
            now=self.now,
        )
        for seen in pending:
            batch.add(seen)
        for model, row_type, rows in (
            (Response, ResponseRow, batch.responses),
            (Retrieval, RetrievalRow, batch.retrievals),
            (Citation, CitationRow, batch.citations),
            (Claim, ClaimRow, batch.claims),
            (ClaimRevision, ClaimRevisionRow, batch.claim_revisions),
            (VerdictRevision, VerdictRevisionRow, batch.verdicts),
            (ResponseReview, ResponseReviewRow, batch.reviews),
        ):
            self.rows.write(model, row_type._fields, rows)
        self.tallies.hold(pending, batch, self.known)
        s = self.summary
        s.responses += len(batch.responses)
        s.retrieved += len(batch.retrievals)
        s.citations += len(batch.citations)
        s.claims += len(batch.claims)
        s.verdicts += len(batch.verdicts)

    def finish(
        self, *, source_name: str, source_sha256: str, user: AbstractBaseUser | None
    ) -> None:
        """Store the run itself, last: its id was reserved when its line was read."""
        if not self.writing:
            return
        line = self.run_line
        Run.objects.create(
            pk=self.run_pk,
            project=self.project,
            run_id=line["run_id"],
            label=line.get("label", ""),
            created_at=parse_rfc3339(line["created_at"]),
            snapshot=self.snapshot,
            system=line["system"],
            locale=line.get("locale", ""),
            baseline_run_id=line.get("baseline_run_id", ""),
            notes=line.get("notes", ""),
            source_name=source_name[:300],
            source_sha256=source_sha256,
            imported_by=user if user is not None and user.pk else None,
        )
        self.rows.defer_foreign_keys()
