"""The stored figures: every write keeps them current, and they equal a recomputation.

The reference is the streaming computation (`run_metrics`, which reads every revision):
on the demo and on a generated run worked over by every write path, each stored claim
row is recomputed from scratch and compared, and the figures read from the stored rows
are compared with the streamed ones, response by response and in total.
"""

from __future__ import annotations

import json
import pickle
import random
import re

import pytest
from django.db.models import Q
from django.urls import reverse

import cards.dashboard
import cards.metrics
import cards.views.figures
from cards.annotators import roster_of
from cards.dashboard import precheck_counts
from cards.metrics import run_metrics, stored_run_figures, streamed_run_metrics
from cards.models import Claim, ClaimTally, ResponseTally, RunTally
from cards.services.claims import claim_revise
from cards.services.reviews import response_mark_complete
from cards.services.tallies import _claim_hints, _claim_states, claim_tally, run_tallies_store
from cards.verdicts import Source
from replay.models import Run
from tests.cards.conftest import LABELS, judge, work_over
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def stored_rows(run: Run) -> dict[int, dict]:
    fields = ("current", "kind", "support", "attached", "diagnosis", "judged_citations",
              "useful_citations", "facts", "gaps", "hints")  # fmt: skip
    return {
        row.pop("claim_id"): row
        for row in ClaimTally.objects.filter(response__run=run).values("claim_id", *fields)
    }


def recomputed_rows(run: Run) -> dict[int, dict]:
    states = list(_claim_states(Q(claim__response__run=run)))
    hints = _claim_hints(run, states)
    return {pk: claim_tally(state, hints[pk]) for pk, _, state in states}


def assert_stored_figures_are_current(run: Run) -> None:
    assert stored_rows(run) == recomputed_rows(run)
    assert ResponseTally.objects.filter(run=run).count() == run.responses.count()
    streamed = streamed_run_metrics(run=run, source=Source())
    stored = stored_run_figures(run=run)
    assert list(stored.per_response) == streamed.per_response
    assert stored.totals == streamed.totals
    assert stored.hint_counts == precheck_counts(streamed)
    # The same JSON, byte for byte: keys in the same order (pages print them in order).
    assert json.dumps(stored.as_json()) == json.dumps(streamed.as_json())
    # Another source: retrieval and pre-checks read from the same rows, claims computed.
    for source in (Source("consensus"), *(Source.of(a) for a in roster_of(runs=[run]).annotators)):
        reference = streamed_run_metrics(run=run, source=source)
        assert json.dumps(run_metrics(run=run, source=source).as_json()) == json.dumps(
            reference.as_json()
        ), source.label
    # As the figures page keeps what it read in the cache (`grown_run_figures`), read back.
    read = pickle.loads(pickle.dumps(cards.metrics._stored_read(run)))
    assert all(type(claims[3]) is tuple for claims in read.claims.values())  # plain, as kept
    kept = cards.metrics._figures_of(run, read)
    assert list(kept.per_response) == streamed.per_response
    assert (kept.totals, kept.hint_counts) == (stored.totals, stored.hint_counts)


def test_the_stored_figures_of_every_demo_run_equal_the_streamed_ones(demo_runs):
    runs = Run.objects.filter(project__slug="demo")
    assert runs.count() == len(demo_runs)
    for run in runs:
        assert_stored_figures_are_current(run)


def test_rebuilding_from_scratch_changes_no_stored_row(demo_runs):
    run = Run.objects.get(run_id="q017-r1")
    before = stored_rows(run), RunTally.objects.get(run=run).retrieval
    ClaimTally.objects.filter(response__run=run).delete()
    run_tallies_store(run=run)
    assert (stored_rows(run), RunTally.objects.get(run=run).retrieval) == before


def test_a_verdict_on_a_claim_without_a_stored_row_stores_its_row_whole(demo_runs, reviewer):
    # A claim made before the rows existed: the save's UPDATE matches nothing, so the row
    # is computed from scratch (cards.services.tallies.verdict_insert_chosen).
    run = Run.objects.get(run_id="q017-r1")
    claim = Claim.objects.filter(response__run=run).order_by("pk").first()
    ClaimTally.objects.filter(claim=claim).delete()
    judge(claim, reviewer, "unsupported", "Not there.")
    assert ClaimTally.objects.get(claim=claim).support == "unsupported"
    assert_stored_figures_are_current(run)


def generated_run(cases: int = 6, claims: int = 3) -> Run:
    lines = synthetic_bundle(run_id="generated-r1", cases=cases, claims=claims, passages=5)
    for line in lines:
        if line["kind"] == "case":
            c = line["case_id"].removeprefix("case-")
            line["relevant_refs"] = [f"doc{c}@v1#c1", f"doc{c}@v1#c4"]
            line["required_facts"].append(
                {"fact_id": "G2", "text": "The other limit.", "evidence": [f"doc{c}@v1#c2"]}
            )
    import_bytes(bundle_bytes(*lines))
    return Run.objects.get(run_id="generated-r1")


def test_a_generated_run_worked_over_by_every_write_keeps_its_figures_current(
    project, reviewer, second_reviewer, lead
):
    run = generated_run()
    assert_stored_figures_are_current(run)
    work_over(run, random.Random(12), [reviewer, second_reviewer], lead, steps=120)
    assert_stored_figures_are_current(run)
    totals = stored_run_figures(run=run).totals
    # The walk reached what it was meant to: verdicts of every kind, and some unreviewed.
    assert all(totals["verdicts"][label] for label in LABELS)
    assert totals["unreviewed"] and totals["reviewed"]


@pytest.fixture
def claim_row(claim) -> ClaimTally:
    return ClaimTally.objects.get(claim=claim)


def test_a_split_claim_gets_its_row_unreviewed(claim_row):
    assert (claim_row.current, claim_row.kind, claim_row.support) == (True, "factual", "")
    assert (claim_row.attached, claim_row.facts) == (True, ["G2"])


def test_a_verdict_sets_its_claims_row(claim, reviewer):
    judge(claim, reviewer, "partial", citation_relevance={"D-01@returns-v4#p04": "necessary"})
    row = ClaimTally.objects.get(claim=claim)
    assert (row.support, row.judged_citations, row.useful_citations) == ("partial", 1, 1)


def test_a_review_after_an_adjudication_leaves_the_row_alone(claim, reviewer, lead):
    judge(claim, reviewer, "partial")
    judge(claim, lead, "unsupported", adjudication=True)
    judge(claim, reviewer, "supported")
    assert ClaimTally.objects.get(claim=claim).support == "unsupported"


def test_a_withdrawal_and_a_relink_reach_the_row(claim, reviewer):
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, reason="Wrong fact.", facts=[])
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=2, reason="Dup.", withdrawn=True)
    row = ClaimTally.objects.get(claim=claim)
    assert (row.facts, row.current) == ([], False)


def test_a_review_mark_and_a_reopening_reach_the_response_row(claim, reviewer):
    response = claim.response
    response_mark_complete(response=response, author=reviewer)
    assert ResponseTally.objects.get(response=response).reviewed
    response_mark_complete(response=response, author=reviewer, complete=False)
    assert not ResponseTally.objects.get(response=response).reviewed


def test_an_import_stores_every_row_of_its_run(replay_response):
    run = replay_response.run
    assert ResponseTally.objects.filter(run=run).count() == 1
    assert RunTally.objects.filter(run=run).exists()
    assert_stored_figures_are_current(run)


def test_a_refused_import_stores_no_row(project):
    lines = synthetic_bundle(run_id="refused-r1", cases=2)
    lines[-1]["case_id"] = "no-such-case"
    with pytest.raises(Exception, match="problem"):
        import_bytes(bundle_bytes(*lines))
    assert not ResponseTally.objects.filter(run__run_id="refused-r1").exists()
    assert not ClaimTally.objects.exists()


def test_the_stored_figures_and_a_page_of_responses_read_a_fixed_number_of_queries(
    project, django_assert_max_num_queries
):
    run = generated_run(cases=12)
    with django_assert_max_num_queries(8):
        figures = stored_run_figures(run=run)
        page = figures.per_response[5:10]
    assert [r["case_id"] for r in page] == [f"case-{c}" for c in (5, 6, 7, 8, 9)]
    assert figures.totals["responses"] == len(figures.per_response) == 12


# The page's CSRF token (in a form field and in the body's HTMX headers) changes per request.
CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"|"X-CSRFToken": "[^"]*"')


@pytest.mark.parametrize("suffix", ["figures", "csv", "json"])
def test_the_figures_pages_read_from_the_stored_rows_are_those_computed_before(
    client, reviewer, demo_runs, monkeypatch, suffix
):
    client.force_login(reviewer)
    name = {"figures": "run_figures", "csv": "run_figures_csv", "json": "run_figures_json"}
    read: list[str] = []

    stored_read = cards.metrics._stored_read

    def stored(run, *args):
        read.append(run.run_id)
        return stored_read(run, *args)

    monkeypatch.setattr(cards.metrics, "_stored_read", stored)
    runs = Run.objects.filter(project__slug="demo")
    for run in runs:
        url = reverse(name[suffix], args=["demo", run.run_id])
        for query in ["", "?page=2"] if suffix == "figures" else [""]:
            from_rows = client.get(url + query)
            with monkeypatch.context() as patch:
                for module in (cards.views.figures, cards.dashboard):
                    patch.setattr(
                        module,
                        "kept_run_metrics",
                        lambda *, run, source, state: streamed_run_metrics(run=run, source=source),
                    )
                computed = client.get(url + query)
            assert from_rows.status_code == computed.status_code == 200
            assert CSRF.sub(b"", from_rows.content) == CSRF.sub(b"", computed.content)
    assert sorted(set(read)) == sorted(run.run_id for run in runs)


def test_an_import_reads_a_passage_of_another_document_than_its_ref_says_as_the_reference(
    project,
):
    # A passage stored otherwise than by an import (its doc_id is not its ref's prefix)
    # and declared again by a bundle: the import's stored retrieval figures read its
    # document as the streaming pass does (`doc_exceptions`), so its doc recall differs.
    from cards.prechecks import numbers_in
    from evidence.models import Passage, Snapshot

    lines = synthetic_bundle(run_id="elsewhere-r1", cases=1, passages=4)
    for line in lines:
        if line["kind"] == "case":
            line["relevant_refs"] = ["doc0@v1#c2"]
    first = next(line for line in lines if line.get("ref") == "doc0@v1#c0")
    Passage.objects.create(
        snapshot=Snapshot.objects.create(project=project, name="synthetic@1"),
        ref=first["ref"], doc_id="elsewhere", version="v1", chunk_id="c0",
        text=first["text"], sha256=first["sha256"], version_status="current",
        numbers=" ".join(numbers_in(first["text"])),
    )  # fmt: skip
    import_bytes(bundle_bytes(*lines))
    run = Run.objects.get(run_id="elsewhere-r1")
    assert_stored_figures_are_current(run)
    # doc0's first passage at rank 1 is another document's: doc0 is first found at rank 2.
    (figures,) = stored_run_figures(run=run).per_response
    assert (figures["doc_recall@1"].k, figures["doc_recall@3"].k) == (0, 1)
