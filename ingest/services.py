"""The bundle import: one streaming pass that checks every line and writes rows in batches."""

from __future__ import annotations

import gc
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from cards.chain import claim_revision_document, seal, verdict_revision_document
from cards.models import (
    Claim,
    ClaimKind,
    ClaimRevision,
    Diagnosis,
    Origin,
    ResponseReview,
    Support,
    VerdictRevision,
)
from cards.prechecks import numbers_in
from cards.rules import association_problem, default_association
from evidence.canonical import text_sha256
from evidence.expectations import expectation_document, expectation_sha256, stored_document
from evidence.models import Case, Expectation, Passage, Project, Snapshot
from ingest.bulk import RowWriter, to_json
from ingest.bundle import (
    MAX_PROBLEMS,
    SCHEMA_NAME,
    BundleReadError,
    Problem,
    iter_raw_lines,
    open_bundle,
    parse_line,
    parse_rfc3339,
    schema_problems,
)
from replay.models import Citation, Response, Retrieval, Run

BUNDLE_ANNOTATOR = "bundle"  # author of claim decompositions that arrive inside a bundle
FLUSH_EVERY_RESPONSES = 1000
FLUSH_EVERY_PASSAGES = 10000


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


Progress = Callable[[int, int], None]  # (bytes read so far, lines read so far)


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
) -> ImportSummary:
    """Validate and store one bundle in one transaction, or store nothing and raise BundleInvalid.

    The stream is read once. Lines are checked as they come; rows are written
    in batches as they are known good, and the transaction is rolled back at
    the end if any line had a problem (or when `dry_run`), so memory stays
    flat however long the bundle is.
    """
    importer = _Importer(
        project_slug=project_slug,
        create_project=create_project,
        user=user,
        source_name=source_name,
        dry_run=dry_run,
        new_expectation_versions=new_expectation_versions,
    )
    frozen = gc.get_freeze_count()
    try:
        with transaction.atomic():
            importer.read(stream, progress)
            if importer.problems or dry_run:
                transaction.set_rollback(True)
            else:
                importer.writer.analyze_after_commit()
    except IntegrityError as exc:
        # Every rule is checked before writing; what reaches here is a race with
        # another writer (the same run_id imported twice at once, say).
        importer.last_word(Problem(0, "", f"the database refused the import: {exc}"))
    except DatabaseError as exc:
        importer.last_word(Problem(0, "", f"the database failed during the import: {exc}"))
    finally:
        if gc.get_freeze_count() > frozen:
            gc.unfreeze()
    if importer.problems:
        raise BundleInvalid(importer.problems[:MAX_PROBLEMS], more=importer.truncated)
    return importer.summary


@dataclass(slots=True)
class _PassageSeen:
    line: int
    ref: str
    sha256: str
    data: dict | None  # the line, until it is stored
    pk: int | None = None


@dataclass(slots=True)
class _CaseSeen:
    line: int
    case_id: str
    document: dict | None  # until it is stored
    sha256: str
    fact_ids: frozenset[str]
    gap_ids: frozenset[str]
    query_id: str
    pk: int | None = None
    expectation_pk: int | None = None


@dataclass(slots=True)
class _ResponseSeen:
    line: int
    position: int
    data: dict
    case: _CaseSeen


class _StopReading(Exception):
    pass


class _Importer:
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
        self.problems: list[Problem] = []
        self.truncated = False
        self.summary = ImportSummary(project=project_slug, run_id="", dry_run=dry_run)
        self.project: Project | None = Project.objects.filter(slug=project_slug).first()
        self.snapshot: Snapshot | None = None
        self.fresh_snapshot = False
        self.other_snapshots = False
        self.run_line: dict | None = None
        self.run_pk: int | None = None
        self.first_line: int | None = None
        self.seen_content = False
        self.passages: dict[str, _PassageSeen] = {}
        self.cases: dict[str, _CaseSeen] = {}
        self.responded: dict[str, int] = {}
        self.pending_passages: list[_PassageSeen] = []
        self.pending_cases: list[_CaseSeen] = []
        self.pending_responses: list[_ResponseSeen] = []
        self.writer = RowWriter()
        self.now = timezone.now()
        self.source_hash = hashlib.sha256()

    # --- reading ---------------------------------------------------------------------------

    def problem(self, line: int, path: str, message: str) -> None:
        if len(self.problems) >= MAX_PROBLEMS:
            self.truncated = True
            raise _StopReading
        self.problems.append(Problem(line, path, message))

    def last_word(self, problem: Problem) -> None:
        """A problem that ends reading is always shown, even past the cap."""
        if len(self.problems) >= MAX_PROBLEMS:
            self.truncated = True
            del self.problems[MAX_PROBLEMS - 1 :]
        self.problems.append(problem)

    def read(self, raw: IO[bytes], progress: Progress | None) -> None:
        if self.project is None and not self.create_project:
            self.problems.append(Problem(0, "", f"project {self.project_slug!r} does not exist"))
            return
        stream, counter = open_bundle(raw)
        try:
            for number, chunk in iter_raw_lines(stream):
                if chunk is not None:
                    self.source_hash.update(chunk)
                self.summary.lines = number
                self.feed(number, chunk)
                if progress is not None and number % 500 == 0:
                    progress(counter.bytes_read, number)
                if len(self.pending_responses) >= FLUSH_EVERY_RESPONSES or (
                    len(self.pending_passages) >= FLUSH_EVERY_PASSAGES
                ):
                    self.flush()
            if not self.seen_content:
                self.problem(0, "", "the bundle is empty: its first line must be the run")
            elif self.run_line is not None:
                self.flush()
                self.finish()
        except BundleReadError as exc:
            self.last_word(exc.problem)
        except _StopReading:
            pass
        if progress is not None:
            progress(counter.bytes_read, self.summary.lines)

    def feed(self, number: int, chunk: bytes | None) -> None:
        if chunk is None or chunk.strip():
            self.seen_content = True
        line, problem = parse_line(number, chunk)
        if problem is not None:
            self.problem(problem.line, problem.path, problem.message)
            return
        if line is None:
            return  # a blank line
        first = self.first_line is None
        if first:
            self.first_line = number
        kind = line.get("kind")
        if first and kind != "run":
            self.problem(number, "/kind", 'the first line must be the run (kind "run")')
        found = schema_problems(number, line)
        if found:
            for item in found:
                self.problem(item.line, item.path, item.message)
            return
        if kind == "run":
            self.on_run(number, line, first)
            return
        if kind == "passage":
            self.on_passage(number, line)
        elif kind == "case":
            self.on_case(number, line)
        else:
            self.on_response(number, line)

    def on_run(self, number: int, line: dict, first: bool) -> None:
        if not first:
            self.problem(number, "/kind", "a bundle holds exactly one run, on its first line")
            return
        if line["schema"] != SCHEMA_NAME:  # the schema's const already says so; kept explicit
            self.problem(number, "/schema", f"only {SCHEMA_NAME} is understood")
            return
        run_id = line["run_id"]
        self.summary.run_id = run_id
        if set(run_id) <= {"."}:
            self.problem(number, "/run_id", "a run id of dots only cannot name a file or folder")
            return
        if self.project is not None and self.project.runs.filter(run_id=run_id).exists():
            self.problem(
                number,
                "/run_id",
                f"run {run_id!r} already exists in project {self.project.slug!r}; runs are "
                "never overwritten or extended: give the replay a new run_id",
            )
            return
        if line.get("baseline_run_id") == run_id:
            self.problem(number, "/baseline_run_id", "a run cannot be its own baseline")
        if self.project is None:
            self.project = Project.objects.create(slug=self.project_slug, name=self.project_slug)
        self.snapshot, self.fresh_snapshot = Snapshot.objects.get_or_create(
            project=self.project, name=line["collection_snapshot"]
        )
        # A snapshot this import creates holds only what this import writes (tracked in
        # memory), and a project with one snapshot has no drift: skip those look-ups.
        # They are not free: inside the import's transaction the planner has no statistics
        # for the rows just written and scans them all, once per batch.
        self.other_snapshots = (
            Snapshot.objects.filter(project=self.project).exclude(pk=self.snapshot.pk).exists()
        )
        self.run_line = line
        self.run_pk = self.writer.reserve_ids(Run, 1)[0]

    def declared(self, number: int, path: str, ref: str) -> _PassageSeen | None:
        seen = self.passages.get(ref)
        if seen is None:
            self.problem(number, path, f"passage {ref} is not declared on an earlier line")
        return seen

    def on_passage(self, number: int, line: dict) -> None:
        ref = line["ref"]
        joined = f"{line['doc_id']}@{line['version']}#{line['chunk_id']}"
        if ref != joined:
            self.problem(number, "/ref", f"must equal doc_id@version#chunk_id ({joined})")
            return
        digest = text_sha256(line["text"])
        if "sha256" in line and line["sha256"] != digest:
            self.problem(number, "/sha256", f"does not match the text, whose SHA-256 is {digest}")
            return
        if ref in self.passages:
            first = self.passages[ref].line
            self.problem(
                number, "/ref", f"passage {ref} is declared twice (first on line {first})"
            )
            return
        seen = _PassageSeen(number, ref, digest, line)
        self.passages[ref] = seen
        self.pending_passages.append(seen)

    def on_case(self, number: int, line: dict) -> None:
        case_id = line["case_id"]
        if case_id in self.cases:
            first = self.cases[case_id].line
            self.problem(
                number, "/case_id", f"case {case_id} is declared twice (first on line {first})"
            )
            return
        facts = line.get("required_facts", [])
        fact_ids: set[str] = set()
        evidence_refs: list[str] = []
        for i, fact in enumerate(facts):
            if fact["fact_id"] in fact_ids:
                self.problem(number, f"/required_facts/{i}/fact_id", "fact_id is used twice")
            fact_ids.add(fact["fact_id"])
            for j, ref in enumerate(fact.get("evidence", [])):
                self.declared(number, f"/required_facts/{i}/evidence/{j}", ref)
                evidence_refs.append(ref)
        if "relevant_refs" in line:
            for j, ref in enumerate(line["relevant_refs"]):
                self.declared(number, f"/relevant_refs/{j}", ref)
            relevant = list(dict.fromkeys(line["relevant_refs"]))
        else:
            relevant = list(dict.fromkeys(evidence_refs))
        gap_ids: set[str] = set()
        for i, gap in enumerate(line.get("known_gaps", [])):
            if gap["gap_id"] in gap_ids:
                self.problem(number, f"/known_gaps/{i}/gap_id", "gap_id is used twice")
            gap_ids.add(gap["gap_id"])
        document = expectation_document(
            query=line["query"],
            required_facts=facts,
            relevant_refs=relevant,
            known_gaps=line.get("known_gaps", []),
        )
        seen = _CaseSeen(
            line=number,
            case_id=case_id,
            document=document,
            sha256=expectation_sha256(document),
            fact_ids=frozenset(fact_ids),
            gap_ids=frozenset(gap_ids),
            query_id=line.get("query_id", ""),
        )
        self.cases[case_id] = seen
        self.pending_cases.append(seen)

    def on_response(self, number: int, line: dict) -> None:  # noqa: C901 - one rule per branch
        case_id = line["case_id"]
        case = self.cases.get(case_id)
        if case is None:
            self.problem(number, "/case_id", f"case {case_id} is not declared on an earlier line")
            return
        if case_id in self.responded:
            first = self.responded[case_id]
            self.problem(
                number, "/case_id", f"case {case_id} already has a response on line {first}"
            )
            return
        self.responded[case_id] = number
        text: str = line["text"]
        if not text and not line.get("abstained", False):
            self.problem(number, "/text", "is empty, which only an abstained response may be")
        _integral(line)
        seen_refs: dict[str, int] = {}
        for i, item in enumerate(line["retrieved"]):
            if "score" in item and not _fits_float(item["score"]):
                self.problem(number, f"/retrieved/{i}/score", "is too large for a number")
            if item["rank"] != i + 1:
                self.problem(
                    number,
                    f"/retrieved/{i}/rank",
                    f"is {item['rank']} but must be {i + 1}: ranks follow the list order "
                    "1..n without gaps or repeats",
                )
            if item["ref"] in seen_refs:
                self.problem(
                    number,
                    f"/retrieved/{i}/ref",
                    f"is retrieved twice (also at rank {seen_refs[item['ref']]})",
                )
            seen_refs[item["ref"]] = i + 1
            self.declared(number, f"/retrieved/{i}/ref", item["ref"])
        for i, citation in enumerate(line.get("citations", [])):
            self.declared(number, f"/citations/{i}/ref", citation["ref"])
            self.check_marker(number, i, citation, text)
        claim_ids: set[str] = set()
        for i, claim in enumerate(line.get("claims", [])):
            path = f"/claims/{i}"
            if claim["claim_id"] in claim_ids:
                self.problem(number, f"{path}/claim_id", "claim_id is used twice in this response")
            claim_ids.add(claim["claim_id"])
            self.check_claim(number, path, claim, text, case)
        self.pending_responses.append(_ResponseSeen(number, len(self.responded), line, case))

    def check_marker(self, number: int, i: int, citation: dict, text: str) -> None:
        start, end = citation.get("start"), citation.get("end")
        path = f"/citations/{i}"
        if (start is None) != (end is None):
            self.problem(number, path, "start and end come together, or not at all")
        elif start is not None:
            if not start <= end <= len(text):
                self.problem(
                    number,
                    f"{path}/end",
                    f"offsets {start}..{end} are outside the text (length {len(text)})",
                )
            elif text[start:end] != citation["marker"]:
                found = text[start:end][:40]
                self.problem(
                    number,
                    f"{path}/marker",
                    f"text[{start}:{end}] is {found!r}, not the marker {citation['marker']!r}",
                )

    def check_claim(self, number: int, path: str, claim: dict, text: str, case: _CaseSeen) -> None:  # noqa: C901
        for j, (start, end) in enumerate(claim.get("spans", [])):
            if not start < end <= len(text):
                self.problem(
                    number,
                    f"{path}/spans/{j}",
                    f"span {start}..{end} is empty or outside the text (length {len(text)})",
                )
        cited = claim.get("citations", [])
        for j, ref in enumerate(cited):
            self.declared(number, f"{path}/citations/{j}", ref)
        for j, fact_id in enumerate(claim.get("facts", [])):
            if fact_id not in case.fact_ids:
                self.problem(
                    number,
                    f"{path}/facts/{j}",
                    f"case {case.case_id} has no required fact {fact_id}",
                )
        for j, gap_id in enumerate(claim.get("gaps", [])):
            if gap_id not in case.gap_ids:
                self.problem(
                    number, f"{path}/gaps/{j}", f"case {case.case_id} has no known gap {gap_id}"
                )
        for j, judgement in enumerate(claim.get("judgements", [])):
            where = f"{path}/judgements/{j}"
            if "diagnosis" in judgement and judgement["diagnosis"] not in Diagnosis.values:
                self.problem(
                    number,
                    f"{where}/diagnosis",
                    f"{judgement['diagnosis']!r} is not one of: {', '.join(Diagnosis.values)}",
                )
            if judgement.get("contradicts") and judgement["support"] != Support.UNSUPPORTED:
                self.problem(
                    number, f"{where}/contradicts", "qualifies only an unsupported verdict"
                )
            if problem := association_problem(judgement.get("association"), cited):
                self.problem(number, f"{where}/association", problem)
            for ref in judgement.get("citation_relevance", {}):
                if ref not in cited:
                    self.problem(
                        number,
                        f"{where}/citation_relevance",
                        f"{ref} is not among the claim's citations",
                    )

    # --- writing ---------------------------------------------------------------------------

    @property
    def writing(self) -> bool:
        return not self.problems

    def flush(self) -> None:
        if self.snapshot is None:
            self.pending_passages, self.pending_cases, self.pending_responses = [], [], []
            return
        self.flush_passages()
        self.flush_cases()
        if self.writing:
            self.flush_responses()
        # Stored (or refused): keep only what later lines refer to, not texts and documents,
        # so memory grows with the number of refs and cases, not with their text.
        for passage in self.pending_passages:
            passage.data = None
        for case in self.pending_cases:
            case.document = None
        self.pending_passages, self.pending_cases, self.pending_responses = [], [], []
        # What is kept now lives until the end of the import: take it out of the cyclic
        # collector's sight, or every full collection walks it again (13 s of 240 s at
        # 100,000 cases, growing faster than N).
        gc.freeze()

    def flush_passages(self) -> None:
        pending = self.pending_passages
        if not pending:
            return
        refs = [p.ref for p in pending]
        stored = {}
        if not self.fresh_snapshot:
            stored = {
                row[0]: row[1:]
                for row in Passage.objects.filter(
                    snapshot=self.snapshot, ref__in=refs
                ).values_list("ref", "id", "sha256", *PASSAGE_LOCATOR)
            }
        new: list[_PassageSeen] = []
        for seen in pending:
            if seen.ref not in stored:
                new.append(seen)
                continue
            pk, digest, *locator = stored[seen.ref]
            if digest != seen.sha256:
                self.problem(
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
                self.problem(
                    seen.line,
                    f"/{changed[0]}",
                    f"passage {seen.ref} is stored in snapshot {self.snapshot.name} with the "
                    f"same text but another {', '.join(changed)}; a snapshot is frozen",
                )
                continue
            seen.pk = pk
            self.summary.passages_reused += 1
        if self.other_snapshots:
            self.record_drift(refs)
        if not self.writing:
            return
        ids = self.writer.reserve_ids(Passage, len(new))
        rows = []
        for seen, pk in zip(new, ids, strict=True):
            seen.pk = pk
            d = seen.data
            rows.append(
                (
                    pk, self.snapshot.pk, seen.ref, d["doc_id"], d["version"], d["chunk_id"],
                    d["text"], seen.sha256, d.get("title", ""), d.get("url", ""),
                    d.get("anchor", ""), d.get("context_before", ""), d.get("context_after", ""),
                    d.get("version_status", "unknown"), d.get("superseded_by", ""),
                    " ".join(numbers_in(d["text"])),
                )
            )  # fmt: skip
        self.writer.write(Passage, PASSAGE_COLUMNS, rows)
        self.summary.passages_new += len(rows)

    def record_drift(self, refs: list[str]) -> None:
        """The same ref with another text in another snapshot is drift, not an error."""
        mine = {ref: self.passages[ref].sha256 for ref in refs}
        others = Passage.objects.filter(snapshot__project=self.project, ref__in=refs).exclude(
            snapshot=self.snapshot
        )
        for ref, snapshot_name, digest in others.values_list("ref", "snapshot__name", "sha256"):
            if digest != mine[ref] and len(self.summary.drift) < 1000:
                self.summary.drift.append(
                    {
                        "ref": ref,
                        "snapshot": snapshot_name,
                        "sha256": digest,
                        "this_sha256": mine[ref],
                    }
                )

    def flush_cases(self) -> None:
        pending = self.pending_cases
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
        new_cases: list[_CaseSeen] = []
        new_expectations: list[tuple[_CaseSeen, int]] = []
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
                self.problem(
                    seen.line,
                    "/case_id",
                    f"case {seen.case_id} differs from its stored expectation (version "
                    f"{latest.version}) in: {', '.join(changed)}; expectations are fixed before "
                    "generation — import with a new expectation version if the change is intended",
                )
        if not self.writing:
            return
        for seen, pk in zip(new_cases, self.writer.reserve_ids(Case, len(new_cases)), strict=True):
            seen.pk = pk
        self.writer.write(
            Case, CASE_COLUMNS, [(c.pk, self.project.pk, c.case_id) for c in new_cases]
        )
        ids = self.writer.reserve_ids(Expectation, len(new_expectations))
        rows = []
        for (seen, version), pk in zip(new_expectations, ids, strict=True):
            seen.expectation_pk = pk
            d = seen.document
            rows.append(
                (
                    pk, seen.pk, version, d["query"], seen.query_id, to_json(d["required_facts"]),
                    to_json(d["relevant_refs"]), to_json(d["known_gaps"]), seen.sha256,
                )
            )  # fmt: skip
        self.writer.write(Expectation, EXPECTATION_COLUMNS, rows)
        self.summary.cases_new += len(new_cases)

    def flush_responses(self) -> None:  # noqa: C901 - builds every child row of a response
        pending = self.pending_responses
        if not pending:
            return
        w = self.writer
        response_ids = w.reserve_ids(Response, len(pending))
        retrieval_ids = iter(
            w.reserve_ids(Retrieval, sum(len(r.data["retrieved"]) for r in pending))
        )
        citation_ids = iter(
            w.reserve_ids(Citation, sum(len(r.data.get("citations", ())) for r in pending))
        )
        claims = [(r, c) for r in pending for c in r.data.get("claims", ())]
        claim_ids = iter(w.reserve_ids(Claim, len(claims)))
        claim_revision_ids = iter(w.reserve_ids(ClaimRevision, len(claims)))
        verdict_ids = iter(
            w.reserve_ids(VerdictRevision, sum(len(c.get("judgements", ())) for _, c in claims))
        )
        reviewed = [r for r in pending if "claims" in r.data]
        review_ids = iter(w.reserve_ids(ResponseReview, len(reviewed)))

        responses, retrievals, citations, claim_rows, claim_revisions, verdicts, reviews = (
            [], [], [], [], [], [], []
        )  # fmt: skip
        project_slug, run_id = self.project.slug, self.run_line["run_id"]
        for seen, response_pk in zip(pending, response_ids, strict=True):
            d = seen.data
            responses.append(
                (
                    response_pk, self.run_pk, seen.case.pk, seen.case.expectation_pk,
                    seen.position, d.get("answer_id", ""), d["text"], d.get("abstained", False),
                    to_json(d.get("trace")),
                )
            )  # fmt: skip
            for item in d["retrieved"]:
                retrievals.append(
                    (
                        next(retrieval_ids), response_pk, item["rank"],
                        self.passages[item["ref"]].pk,
                        float(item["score"]) if "score" in item else None,
                        to_json(item.get("score")),  # score_as_imported: the JSON number
                        to_json(item.get("filters")),
                    )
                )  # fmt: skip
            for position, item in enumerate(d.get("citations", ()), start=1):
                citations.append(
                    (
                        next(citation_ids), response_pk, position, item["marker"],
                        self.passages[item["ref"]].pk, item.get("start"), item.get("end"),
                    )
                )  # fmt: skip
            for position, claim in enumerate(d.get("claims", ()), start=1):
                claim_pk = next(claim_ids)
                claim_rows.append((claim_pk, response_pk, claim["claim_id"], position))
                identity = {
                    "project": project_slug,
                    "run_id": run_id,
                    "case_id": seen.case.case_id,
                    "claim_id": claim["claim_id"],
                }
                cited = claim.get("citations", [])
                document = claim_revision_document(
                    **identity,
                    seq=1,
                    text=claim["text"],
                    kind=claim.get("kind", ClaimKind.FACTUAL),
                    spans=claim.get("spans", []),
                    citations=cited,
                    facts=claim.get("facts", []),
                    gaps=claim.get("gaps", []),
                    withdrawn=False,
                    reason=f"Imported with run {run_id}",
                    annotator=BUNDLE_ANNOTATOR,
                    origin=Origin.IMPORTED,
                    created_at=self.now,
                    prev_sha256=None,
                )
                previous = seal(document)
                claim_revisions.append(
                    (
                        next(claim_revision_ids), claim_pk, 1, document["text"], document["kind"],
                        to_json(document["spans"]), to_json(cited), to_json(document["facts"]),
                        to_json(document["gaps"]), False, document["reason"], None,
                        BUNDLE_ANNOTATOR, Origin.IMPORTED, self.now, None, previous,
                    )
                )  # fmt: skip
                latest_by_annotator: dict[str, tuple[int, int]] = {}
                for seq, judgement in enumerate(claim.get("judgements", ()), start=2):
                    verdict_pk = next(verdict_ids)
                    annotator = judgement["annotator"]
                    supersedes = latest_by_annotator.get(annotator)
                    association = judgement.get("association", default_association(cited))
                    stated_at = parse_rfc3339(judgement["at"]) if "at" in judgement else None
                    document = verdict_revision_document(
                        **identity,
                        seq=seq,
                        annotator=annotator,
                        origin=Origin.IMPORTED,
                        association=association,
                        support=judgement["support"],
                        contradicts=judgement.get("contradicts", False),
                        reason=judgement["reason"],
                        diagnosis=judgement.get("diagnosis", ""),
                        citation_relevance=judgement.get("citation_relevance", {}),
                        note=judgement.get("note", ""),
                        stated_at=stated_at,
                        supersedes=supersedes[1] if supersedes else None,
                        created_at=self.now,
                        prev_sha256=previous,
                    )
                    digest = seal(document)
                    verdicts.append(
                        (
                            verdict_pk, claim_pk, seq, None, annotator, Origin.IMPORTED,
                            association, judgement["support"], document["contradicts"],
                            judgement["reason"], judgement.get("diagnosis", ""),
                            to_json(document["citation_relevance"]),
                            document["note"], stated_at, supersedes[0] if supersedes else None,
                            self.now, previous, digest,
                        )
                    )  # fmt: skip
                    latest_by_annotator[annotator] = (verdict_pk, seq)
                    previous = digest
            if "claims" in d:
                reviews.append(
                    (next(review_ids), response_pk, True, None, BUNDLE_ANNOTATOR, Origin.IMPORTED)
                )

        w.write(Response, RESPONSE_COLUMNS, responses)
        w.write(Retrieval, RETRIEVAL_COLUMNS, retrievals)
        w.write(Citation, CITATION_COLUMNS, citations)
        w.write(Claim, CLAIM_COLUMNS, claim_rows)
        w.write(ClaimRevision, CLAIM_REVISION_COLUMNS, claim_revisions)
        w.write(VerdictRevision, VERDICT_COLUMNS, verdicts)
        w.write(ResponseReview, REVIEW_COLUMNS, reviews)
        s = self.summary
        s.responses += len(responses)
        s.retrieved += len(retrievals)
        s.citations += len(citations)
        s.claims += len(claim_rows)
        s.verdicts += len(verdicts)

    def finish(self) -> None:
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
            source_name=self.source_name[:300],
            source_sha256=self.source_hash.hexdigest(),
            imported_by=self.user if self.user is not None and self.user.pk else None,
        )


def _integral(response: dict) -> None:
    """Integers may be written 1.0 (JSON Schema allows it): make them ints before use."""
    for item in response["retrieved"]:
        item["rank"] = int(item["rank"])
    for citation in response.get("citations", ()):
        for key in ("start", "end"):
            if key in citation:
                citation[key] = int(citation[key])
    for claim in response.get("claims", ()):
        claim["spans"] = [[int(a), int(b)] for a, b in claim.get("spans", ())]


def _fits_float(value: float | int) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _quoted(*names: str) -> tuple[str, ...]:
    return tuple(connection.ops.quote_name(name) for name in names)


PASSAGE_LOCATOR = (
    "title", "url", "anchor", "context_before", "context_after", "version_status", "superseded_by",
)  # fmt: skip
PASSAGE_DEFAULTS = {"version_status": "unknown"}
PASSAGE_COLUMNS = _quoted(
    "id", "snapshot_id", "ref", "doc_id", "version", "chunk_id", "text", "sha256", "title", "url",
    "anchor", "context_before", "context_after", "version_status", "superseded_by", "numbers",
)  # fmt: skip
CASE_COLUMNS = _quoted("id", "project_id", "case_id")
EXPECTATION_COLUMNS = _quoted(
    "id", "case_id", "version", "query", "query_id", "required_facts", "relevant_refs",
    "known_gaps", "sha256",
)  # fmt: skip
RESPONSE_COLUMNS = _quoted(
    "id",
    "run_id",
    "case_id",
    "expectation_id",
    "position",
    "answer_id",
    "text",
    "abstained",
    "trace",
)
RETRIEVAL_COLUMNS = _quoted(
    "id", "response_id", "rank", "passage_id", "score", "score_as_imported", "filters"
)
CITATION_COLUMNS = _quoted("id", "response_id", "position", "marker", "passage_id", "start", "end")
CLAIM_COLUMNS = _quoted("id", "response_id", "key", "position")
CLAIM_REVISION_COLUMNS = _quoted(
    "id", "claim_id", "seq", "text", "kind", "spans", "citations", "facts", "gaps", "withdrawn",
    "reason", "author_id", "annotator", "origin", "created_at", "prev_sha256", "sha256",
)  # fmt: skip
VERDICT_COLUMNS = _quoted(
    "id", "claim_id", "seq", "author_id", "annotator", "origin", "association", "support",
    "contradicts", "reason", "diagnosis", "citation_relevance", "note", "stated_at",
    "supersedes_id", "created_at", "prev_sha256", "sha256",
)  # fmt: skip
REVIEW_COLUMNS = _quoted("id", "response_id", "complete", "author_id", "annotator", "origin")
