"""What a bundle says is what the database keeps: every line can be rebuilt from the rows.

All fixture bundles go into one project in sorted order (as load_demo does);
each line is then rebuilt from the database and compared with the file, a
field absent from the file comparing with its default. The hash chains of the
imported claims are recomputed from the stored rows.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from cards.chain import claim_revision_document, seal, verdict_revision_document
from cards.models import Claim, ClaimRevision, VerdictRevision
from evidence.canonical import text_sha256
from evidence.models import Case, Expectation, Passage, Project, Snapshot
from ingest.schema import parse_rfc3339
from ingest.services import FLUSH_EVERY_RESPONSES, ImportSummary
from replay.models import Response, Retrieval, Run
from tests.conftest import (
    BUNDLES,
    FIXTURES,
    bundle_bytes,
    import_bytes,
    import_fixture,
    row_counts,
)
from tests.factories import synthetic_bundle

FIXTURE_PATHS = sorted(FIXTURES.glob("*.jsonl"))


def read_lines(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --- the file's lines, with defaults filled in ----------------------------------------------


def expected_run(line: dict) -> dict:
    return {
        "run_id": line["run_id"],
        "label": line.get("label", ""),
        "created_at": parse_rfc3339(line["created_at"]),
        "collection_snapshot": line["collection_snapshot"],
        "system": line["system"],
        "locale": line.get("locale", ""),
        "baseline_run_id": line.get("baseline_run_id", ""),
        "notes": line.get("notes", ""),
    }


def expected_passage(line: dict) -> dict:
    defaults = {
        "sha256": text_sha256(line["text"]),
        "title": "",
        "url": "",
        "anchor": "",
        "context_before": "",
        "context_after": "",
        "version_status": "unknown",
        "superseded_by": "",
    }
    return defaults | line


def expected_case(line: dict) -> dict:
    facts = [{"evidence": []} | fact for fact in line.get("required_facts", [])]
    evidence = list(dict.fromkeys(ref for fact in facts for ref in fact["evidence"]))
    return {
        "kind": "case",
        "case_id": line["case_id"],
        "query": line["query"],
        "query_id": line.get("query_id", ""),
        "required_facts": facts,
        "relevant_refs": line.get("relevant_refs", evidence),
        "known_gaps": line.get("known_gaps", []),
    }


def expected_judgement(judgement: dict, cited: list[str]) -> dict:
    return {
        "annotator": judgement["annotator"],
        "support": judgement["support"],
        "association": judgement.get("association", "attached" if cited else "missing"),
        "reason": judgement["reason"],
        "diagnosis": judgement.get("diagnosis", ""),
        "contradicts": judgement.get("contradicts", False),
        "citation_relevance": judgement.get("citation_relevance", {}),
        "note": judgement.get("note", ""),
        "at": parse_rfc3339(judgement["at"]) if "at" in judgement else None,
    }


def expected_claim(claim: dict) -> dict:
    cited = claim.get("citations", [])
    return {
        "claim_id": claim["claim_id"],
        "text": claim["text"],
        "kind": claim.get("kind", "factual"),
        "spans": claim.get("spans", []),
        "citations": cited,
        "facts": claim.get("facts", []),
        "gaps": claim.get("gaps", []),
        "judgements": [expected_judgement(j, cited) for j in claim.get("judgements", [])],
    }


def expected_response(line: dict) -> dict:
    return {
        "kind": "response",
        "case_id": line["case_id"],
        "answer_id": line.get("answer_id", ""),
        "text": line["text"],
        "abstained": line.get("abstained", False),
        "retrieved": [{"score": None, "filters": None} | item for item in line["retrieved"]],
        "citations": [{"start": None, "end": None} | item for item in line.get("citations", [])],
        "trace": line.get("trace"),
        "claims": [expected_claim(claim) for claim in line.get("claims", [])],
        # A bundle that carries claims (even none) marks the decomposition complete.
        "reviewed": "claims" in line,
    }


# --- the same lines, rebuilt from the database ----------------------------------------------


def rebuilt_run(run: Run) -> dict:
    return {
        "run_id": run.run_id,
        "label": run.label,
        "created_at": run.created_at,
        "collection_snapshot": run.snapshot.name,
        "system": run.system,
        "locale": run.locale,
        "baseline_run_id": run.baseline_run_id,
        "notes": run.notes,
    }


def rebuilt_passage(passage: Passage) -> dict:
    return {
        "kind": "passage",
        "ref": passage.ref,
        "doc_id": passage.doc_id,
        "version": passage.version,
        "chunk_id": passage.chunk_id,
        "text": passage.text,
        "sha256": passage.sha256,
        "title": passage.title,
        "url": passage.url,
        "anchor": passage.anchor,
        "context_before": passage.context_before,
        "context_after": passage.context_after,
        "version_status": passage.version_status,
        "superseded_by": passage.superseded_by,
    }


def rebuilt_case(expectation: Expectation) -> dict:
    return {
        "kind": "case",
        "case_id": expectation.case.case_id,
        "query": expectation.query,
        "query_id": expectation.query_id,
        "required_facts": expectation.required_facts,
        "relevant_refs": expectation.relevant_refs,
        "known_gaps": expectation.known_gaps,
    }


def rebuilt_claim(claim: Claim) -> dict:
    (revision,) = claim.revisions.all()  # an imported claim has exactly one
    return {
        "claim_id": claim.key,
        "text": revision.text,
        "kind": revision.kind,
        "spans": revision.spans,
        "citations": revision.citations,
        "facts": revision.facts,
        "gaps": revision.gaps,
        "judgements": [
            {
                "annotator": verdict.annotator,
                "support": verdict.support,
                "association": verdict.association,
                "reason": verdict.reason,
                "diagnosis": verdict.diagnosis,
                "contradicts": verdict.contradicts,
                "citation_relevance": verdict.citation_relevance,
                "note": verdict.note,
                "at": verdict.stated_at,
            }
            for verdict in claim.verdicts.order_by("seq")
        ],
    }


def rebuilt_response(response: Response) -> dict:
    return {
        "kind": "response",
        "case_id": response.case.case_id,
        "answer_id": response.answer_id,
        "text": response.text,
        "abstained": response.abstained,
        "retrieved": [
            {"ref": r.passage.ref, "rank": r.rank, "score": r.score, "filters": r.filters}
            for r in response.retrieved.order_by("rank")
        ],
        "citations": [
            {"marker": c.marker, "ref": c.passage.ref, "start": c.start, "end": c.end}
            for c in response.citations.order_by("position")
        ],
        "trace": response.trace,
        "claims": [rebuilt_claim(claim) for claim in response.claims.order_by("position")],
        "reviewed": response.reviews.exists(),
    }


def assert_round_trip(project: str, lines: list[dict]) -> None:
    """Every line of a bundle, as stored in `project`, equals the line with its defaults."""
    run_line = lines[0]
    run = Run.objects.get(project__slug=project, run_id=run_line["run_id"])
    assert rebuilt_run(run) == expected_run(run_line)
    responses = [line for line in lines if line["kind"] == "response"]
    stored = list(run.responses.order_by("position"))
    assert [r.case.case_id for r in stored] == [line["case_id"] for line in responses]
    assert [r.position for r in stored] == list(range(1, len(responses) + 1))
    for line in lines[1:]:
        if line["kind"] == "passage":
            passage = Passage.objects.get(snapshot=run.snapshot, ref=line["ref"])
            assert rebuilt_passage(passage) == expected_passage(line)
        elif line["kind"] == "case":
            # The expectation this run's response was judged against.
            expectation = run.responses.get(case__case_id=line["case_id"]).expectation
            assert rebuilt_case(expectation) == expected_case(line)
        else:
            response = run.responses.get(case__case_id=line["case_id"])
            assert rebuilt_response(response) == expected_response(line)


def chain_documents(claim: Claim) -> list[tuple[object, dict]]:
    """Each revision of a claim's chain with the document its hash must seal, by seq."""
    response = claim.response
    identity = {
        "project": response.run.project.slug,
        "run_id": response.run.run_id,
        "case_id": response.case.case_id,
        "claim_id": claim.key,
    }
    chain: list[tuple[object, dict]] = []
    for revision in claim.revisions.all():
        document = claim_revision_document(
            **identity,
            seq=revision.seq,
            text=revision.text,
            kind=revision.kind,
            spans=revision.spans,
            citations=revision.citations,
            facts=revision.facts,
            gaps=revision.gaps,
            withdrawn=revision.withdrawn,
            reason=revision.reason,
            annotator=revision.annotator,
            origin=revision.origin,
            created_at=revision.created_at,
            prev_sha256=revision.prev_sha256,
        )
        chain.append((revision, document))
    for verdict in claim.verdicts.select_related("supersedes"):
        document = verdict_revision_document(
            **identity,
            seq=verdict.seq,
            annotator=verdict.annotator,
            origin=verdict.origin,
            association=verdict.association,
            support=verdict.support,
            contradicts=verdict.contradicts,
            reason=verdict.reason,
            diagnosis=verdict.diagnosis,
            citation_relevance=verdict.citation_relevance,
            note=verdict.note,
            stated_at=verdict.stated_at,
            supersedes=verdict.supersedes.seq if verdict.supersedes else None,
            created_at=verdict.created_at,
            prev_sha256=verdict.prev_sha256,
        )
        chain.append((verdict, document))
    return sorted(chain, key=lambda item: item[0].seq)


def assert_chains_hold(claims) -> int:
    """Recompute every chain; return how many revisions were checked."""
    checked = 0
    for claim in claims.select_related("response__run__project", "response__case"):
        chain = chain_documents(claim)
        assert [row.seq for row, _ in chain] == list(range(1, len(chain) + 1)), claim.key
        previous = None
        for row, document in chain:
            assert row.prev_sha256 == previous, (claim.key, row.seq)
            assert row.sha256 == seal(document), (claim.key, row.seq)
            previous = row.sha256
            checked += 1
    return checked


# --- the fixtures ---------------------------------------------------------------------------


@pytest.fixture
def summaries(demo_runs) -> dict[str, ImportSummary]:
    """Every fixture imported into `demo` in sorted order, with its import summary."""
    return demo_runs


def test_every_fixture_imports_and_round_trips(summaries):
    assert len(summaries) == len(FIXTURE_PATHS) == 9
    for path in FIXTURE_PATHS:
        assert_round_trip("demo", read_lines(path))


def test_each_run_keeps_the_sha256_and_name_of_its_source_file(summaries):
    for path in FIXTURE_PATHS:
        run = Run.objects.get(run_id=read_lines(path)[0]["run_id"])
        assert run.source_name == path.name
        assert run.source_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_summaries_count_what_each_file_holds(summaries):
    for path in FIXTURE_PATHS:
        lines = read_lines(path)
        responses = [line for line in lines if line["kind"] == "response"]
        claims = [claim for r in responses for claim in r.get("claims", [])]
        summary = summaries[path.name]
        assert summary.lines == len(lines)
        assert summary.passages_new + summary.passages_reused == sum(
            line["kind"] == "passage" for line in lines
        )
        assert summary.cases_new + summary.cases_reused == sum(
            line["kind"] == "case" for line in lines
        )
        assert summary.responses == len(responses)
        assert summary.retrieved == sum(len(r["retrieved"]) for r in responses)
        assert summary.citations == sum(len(r.get("citations", [])) for r in responses)
        assert summary.claims == len(claims)
        assert summary.verdicts == sum(len(c.get("judgements", [])) for c in claims)


def test_every_stored_passage_hash_is_the_hash_of_its_stored_text(summaries):
    passages = list(Passage.objects.all())
    assert len(passages) == 16
    for passage in passages:
        assert passage.sha256 == hashlib.sha256(passage.text.encode("utf-8")).hexdigest()


def test_every_revision_hash_seals_its_document_and_links_the_chain(summaries):
    checked = assert_chains_hold(Claim.objects.all())
    assert checked == ClaimRevision.objects.count() + VerdictRevision.objects.count() == 38


def test_replays_reuse_passages_and_cases(summaries):
    assert summaries["p7-answer-a.jsonl"].passages_new == 4
    assert summaries["p7-answer-a.jsonl"].cases_new == 1
    for name in ("p7-answer-b.jsonl", "p7-answer-c.jsonl"):
        assert (summaries[name].passages_new, summaries[name].passages_reused) == (0, 4)
        assert (summaries[name].cases_new, summaries[name].cases_reused) == (0, 1)
    snapshot = Snapshot.objects.get(name="p7-archive@2026-09")
    assert snapshot.passages.count() == 4
    case = Case.objects.get(case_id="P7-Q1")
    assert case.expectations.count() == 1
    assert case.responses.count() == 3
    assert {r.run.run_id for r in case.responses.all()} == {
        "p7-answer-a",
        "p7-answer-b",
        "p7-answer-c",
    }
    assert Retrieval.objects.filter(response__case=case).values("passage").distinct().count() == 4


def test_a_replay_in_the_same_snapshot_reuses_its_passages(summaries):
    replay = summaries["q017-r2.jsonl"]
    assert (replay.passages_new, replay.passages_reused) == (0, 2)
    assert (replay.cases_new, replay.cases_reused) == (0, 1)
    assert replay.drift == []


def test_a_replay_in_a_new_snapshot_records_drift(summaries):
    drifted = summaries["q017-r3.jsonl"]
    assert (drifted.passages_new, drifted.passages_reused) == (2, 0)
    assert drifted.cases_reused == 1
    r1 = {line.get("ref"): line for line in read_lines(FIXTURES / "q017-r1.jsonl")}
    r3 = {line.get("ref"): line for line in read_lines(FIXTURES / "q017-r3.jsonl")}
    d01 = "D-01@returns-v4#p04"
    assert drifted.drift == [
        {
            "ref": d01,
            "snapshot": "store-kb@2026-07",
            "sha256": r1[d01]["sha256"],
            "this_sha256": r3[d01]["sha256"],
        }
    ]
    stored = Passage.objects.filter(ref=d01).values_list("snapshot__name", "sha256")
    assert sorted(stored) == [
        ("store-kb@2026-07", r1[d01]["sha256"]),
        ("store-kb@2026-10", r3[d01]["sha256"]),
    ]


def test_the_whole_demo_holds_what_the_files_hold(summaries):
    assert row_counts() == {
        # p7 4 + policy 2 + pro-plan 4 + store-kb@2026-07 2 + store-kb@2026-10 2 + resi 2
        "Passage": 16,
        # P7-Q1, pol-1, q1-q3, Q-017, resi-1: replays add no case and no expectation
        "Case": 7,
        "Expectation": 7,
        "Snapshot": 6,
        "Project": 1,
        "Run": 9,
        "Response": 11,
        "Retrieval": 31,
        "Citation": 16,
        # p7 3 + 1 + 4, q017 4 + 4, resi 3; one judgement each
        "Claim": 19,
        "ClaimRevision": 19,
        "VerdictRevision": 19,
        # the six responses whose line has `claims`
        "ResponseReview": 6,
    }


# --- dry runs -------------------------------------------------------------------------------


def test_a_dry_run_stores_nothing_but_reports_the_same_counts(project):
    for path in FIXTURE_PATHS:
        before = row_counts()
        dry = import_fixture(path.name, dry_run=True)
        assert row_counts() == before, path.name
        assert dry.dry_run
        real = import_fixture(path.name)
        assert dry.as_dict() | {"dry_run": False} == real.as_dict(), path.name


def test_a_dry_run_can_create_no_project(db):
    summary = import_fixture("q017-r1.jsonl", project="trial", create_project=True, dry_run=True)
    assert summary.responses == 1
    assert not Project.objects.filter(slug="trial").exists()


# --- every optional field -------------------------------------------------------------------


def everything_bundle() -> list[dict]:
    """A small bundle that uses every optional field the spec has."""
    answer = "The sources do not say how long a refund takes. Returns take 30 days [1]."
    marker = answer.index("[1]")
    return [
        {
            "kind": "run",
            "schema": "evidence-bundle/1",
            "run_id": "all-fields",
            "label": "Every field",
            "created_at": "2026-10-02T08:30:00.250+02:00",
            "collection_snapshot": "kb@2026-10",
            "system": {"model": "m", "prompt_version": "p3", "temperature": 0.2, "tools": []},
            "locale": "en-GB",
            "baseline_run_id": "q017-r1",
            "notes": "Written by hand.",
        },
        {
            "kind": "passage",
            "ref": "R@v9#p1",
            "doc_id": "R",
            "version": "v9",
            "chunk_id": "p1",
            "text": "Returns are accepted for 30 days. Ünïcödé ✓.",
            "title": "Returns",
            "url": "https://example.com/returns",
            "anchor": "#p1",
            "context_before": "Before.",
            "context_after": "After.",
            "version_status": "superseded",
            "superseded_by": "R@v10#p1",
        },
        {
            "kind": "case",
            "case_id": "C-1",
            "query": "How long do returns and refunds take?",
            "required_facts": [
                {"fact_id": "F1", "text": "Returns: 30 days.", "evidence": ["R@v9#p1"]},
                {"fact_id": "F2", "text": "Returns are accepted.", "evidence": ["R@v9#p1"]},
            ],
            "known_gaps": [{"gap_id": "X1", "text": "Refund duration."}],
        },
        {
            "kind": "response",
            "case_id": "C-1",
            "answer_id": "A-1",
            "text": answer,
            "abstained": False,
            "retrieved": [
                {"ref": "R@v9#p1", "rank": 1, "score": -1.5e-7, "filters": {"lang": ["en"]}}
            ],
            "citations": [{"marker": "[1]", "ref": "R@v9#p1", "start": marker, "end": marker + 3}],
            "trace": {"latency_ms": 812, "steps": [{"tool": "search", "ok": True}], "x": None},
            "claims": [
                {
                    "claim_id": "k1",
                    "text": "The sources do not give a refund duration.",
                    "kind": "abstention",
                    "spans": [[0, 47]],
                    "gaps": ["X1"],
                    "judgements": [
                        {
                            "annotator": "judge",
                            "support": "supported",
                            "reason": "No passage gives one.",
                            "at": "2026-10-02T09:00:00Z",
                        }
                    ],
                },
                {
                    "claim_id": "k2",
                    "text": "Returns take 30 days.",
                    "spans": [[48, 68]],
                    "citations": ["R@v9#p1"],
                    "facts": ["F1"],
                    "judgements": [
                        {
                            "annotator": "judge",
                            "support": "partial",
                            "association": "attached",
                            "reason": "First look.",
                            "diagnosis": "qualifier_dropped",
                            "citation_relevance": {"R@v9#p1": "necessary"},
                            "note": "to re-check",
                            "at": "2026-10-02T09:00:00.123456+05:30",
                        },
                        {
                            "annotator": "person",
                            "support": "unsupported",
                            "contradicts": True,
                            "reason": "The passage is superseded.",
                            "diagnosis": "locator_drift",
                        },
                        {
                            "annotator": "judge",
                            "support": "supported",
                            "reason": "Second look: it says 30 days.",
                            "at": "2026-10-02T10:00:00Z",
                        },
                    ],
                },
            ],
        },
    ]


def test_a_bundle_with_every_optional_field_round_trips(project):
    lines = everything_bundle()
    summary = import_bytes(bundle_bytes(*lines))
    assert (summary.claims, summary.verdicts) == (2, 4)
    assert_round_trip("demo", lines)
    assert assert_chains_hold(Claim.objects.all()) == 6


def test_a_later_judgement_by_the_same_annotator_supersedes_the_earlier(project):
    import_bytes(bundle_bytes(*everything_bundle()))
    verdicts = list(Claim.objects.get(key="k2").verdicts.order_by("seq"))
    assert [(v.seq, v.annotator) for v in verdicts] == [(2, "judge"), (3, "person"), (4, "judge")]
    assert [v.supersedes for v in verdicts] == [None, None, verdicts[0]]


def test_a_trace_keeps_its_numbers_as_written(project):
    lines = everything_bundle()
    trace = {"big": 1e23, "round": 1e16, "negative_zero": -0.0, "small": 1e-7}
    lines[3]["trace"] = trace
    import_bytes(bundle_bytes(*lines))
    stored = Response.objects.get().trace
    assert json.dumps(stored, sort_keys=True) == json.dumps(trace, sort_keys=True)


# --- batches and query counts ---------------------------------------------------------------


def test_the_query_count_does_not_grow_with_the_number_of_lines(db, django_assert_max_num_queries):
    small = bundle_bytes(*synthetic_bundle(run_id="small", cases=20))
    large = bundle_bytes(*synthetic_bundle(run_id="large", cases=200))
    assert FLUSH_EVERY_RESPONSES > 200  # both fit one batch: no flush in the middle
    with CaptureQueriesContext(connection) as queries:
        assert import_bytes(small, project="small", create_project=True).responses == 20
    with django_assert_max_num_queries(len(queries)) as large_queries:
        assert import_bytes(large, project="large", create_project=True).responses == 200
    # Under 80: some 20 of them store the run's figures (cards.services.tallies).
    assert len(large_queries) == len(queries) < 80


def test_a_bundle_written_in_several_batches_stores_the_same_rows(db, monkeypatch):
    lines = synthetic_bundle(run_id="batched", cases=12, claims=2, revisions=2)
    import_bytes(bundle_bytes(*lines), project="one-batch", create_project=True)
    monkeypatch.setattr("ingest.services.FLUSH_EVERY_RESPONSES", 5)
    summary = import_bytes(bundle_bytes(*lines), project="batches", create_project=True)
    assert summary.responses == 12
    for project in ("one-batch", "batches"):
        assert_round_trip(project, lines)
    assert_chains_hold(Claim.objects.all())


def one_line_per_batch(monkeypatch) -> None:
    """Flush after every line taken: whatever a line refers to is then an earlier batch's."""
    for name in ("FLUSH_EVERY_RESPONSES", "FLUSH_EVERY_PASSAGES", "FLUSH_EVERY_BYTES"):
        monkeypatch.setattr(f"ingest.services.{name}", 1)


def test_every_fixture_round_trips_with_one_line_per_batch(db, monkeypatch):
    # The replays reuse the passages and cases stored by the runs before them, in the same
    # snapshot or another (drift): each ref and case is found in ingest.seen's tables.
    whole = {name: import_fixture(name, project="whole", create_project=True) for name in BUNDLES}
    one_line_per_batch(monkeypatch)
    lines = {name: import_fixture(name, project="lines", create_project=True) for name in BUNDLES}
    for name in BUNDLES:
        assert lines[name].as_dict() == {**whole[name].as_dict(), "project": "lines"}
    for path in FIXTURE_PATHS:
        assert_round_trip("lines", read_lines(path))
    assert assert_chains_hold(Claim.objects.filter(response__run__project__slug="lines")) > 0


def test_a_bundle_with_all_its_passages_first_round_trips_with_one_line_per_batch(db, monkeypatch):
    # Every response then refers to passages and a case of batches long flushed.
    run, *rest = synthetic_bundle(run_id="apart", cases=6, claims=2, revisions=2)
    lines = [run, *(line for kind in ("passage", "case", "response") for line in rest
                    if line["kind"] == kind)]  # fmt: skip
    one_line_per_batch(monkeypatch)
    summary = import_bytes(bundle_bytes(*lines), project="apart", create_project=True)
    assert (summary.passages_new, summary.cases_new, summary.responses) == (24, 6, 6)
    assert_round_trip("apart", lines)
    assert assert_chains_hold(Claim.objects.all()) == 6 * 2 * 3


@pytest.mark.parametrize("dry_run", [False, True], ids=["stored", "dry run"])
def test_the_tables_of_what_an_import_has_seen_end_with_it(db, monkeypatch, dry_run):
    one_line_per_batch(monkeypatch)
    bundle = bundle_bytes(*synthetic_bundle(cases=3))
    summary = import_bytes(bundle, project="seen", create_project=True, dry_run=dry_run)
    assert summary.responses == 3
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM ingest_seen_passage")
