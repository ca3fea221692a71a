"""cards.metrics reads passages per batch of responses: the figures are those of one pass."""

from __future__ import annotations

import gc

import pytest

import cards.metrics
from cards.metrics import Source, doc_exceptions, run_metrics
from evidence.canonical import text_sha256
from evidence.models import Passage
from replay.models import Retrieval, Run
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def cross_cited() -> list[dict]:
    """Three cases; the last claim of the second and third cites a passage the case before
    retrieved, "… the limit is 11 units …" (a claim may cite any passage its bundle
    declared): in batches of one response, a passage outside the batch."""
    lines = synthetic_bundle(run_id="cross", cases=3, passages=2, claims=2, revisions=1)
    responses = [line for line in lines if line["kind"] == "response"]
    for i, response in enumerate(responses[1:], start=1):
        response["claims"][-1]["citations"] = [f"doc{i - 1}@v1#c1"]
        response["claims"][-1]["text"] = "The limit is 11 units."
    return lines


def every_figure() -> dict:
    figures = {}
    for run in Run.objects.order_by("run_id"):
        for source in (Source(), Source("consensus")):
            figures[run.run_id, source.label] = run_metrics(run=run, source=source).as_json()
    return figures


@pytest.mark.parametrize("batch", [1, 2])
def test_the_figures_read_in_small_batches_are_those_read_at_once(demo_runs, batch, monkeypatch):
    import_bytes(bundle_bytes(*cross_cited()))
    at_once = every_figure()
    monkeypatch.setattr(cards.metrics, "BATCH", batch)
    assert every_figure() == at_once


def test_a_claim_citing_another_cases_passage_reads_that_passages_numbers(project, monkeypatch):
    import_bytes(bundle_bytes(*cross_cited()))
    monkeypatch.setattr(cards.metrics, "BATCH", 1)
    figures = run_metrics(run=Run.objects.get(run_id="cross")).per_response
    hints = [response["prechecks"]["claims"].get("c1", []) for response in figures]
    # Not retrieved by its own response, but read: 11 is in that passage.
    assert hints[1:] == [["citation_not_retrieved"]] * 2


def odd_passage(run: Run, ref: str, doc_id: str) -> Passage:
    """A passage whose document is not its ref's prefix: never imported (bundle.schema.json),
    only made another way."""
    text = f"Odd passage {ref}."
    return Passage.objects.create(
        snapshot=run.snapshot, ref=ref, doc_id=doc_id, version="1", chunk_id="1", text=text,
        sha256=text_sha256(text),
    )  # fmt: skip


def test_imported_passages_are_their_refs_documents(demo_runs):
    assert all(doc_exceptions(run) == {} for run in Run.objects.all())


def test_a_retrieved_passage_whose_document_is_not_its_refs_prefix_names_its_document(project):
    import_bytes(bundle_bytes(*cross_cited()))
    run = Run.objects.get(run_id="cross")
    retrieved = odd_passage(run, "odd@1#1", "ODD")
    odd_passage(run, "alone@1#1", "ALONE")  # in the snapshot, named by nothing of the run
    Retrieval.objects.create(
        response=run.responses.order_by("position").first(), rank=3, passage=retrieved
    )
    assert doc_exceptions(run) == {"odd@1#1": "ODD"}


def test_the_collector_is_paused_during_a_computed_pass_and_runs_again_after(project, monkeypatch):
    import_bytes(bundle_bytes(*synthetic_bundle(run_id="paused", cases=2)))
    seen = []
    streamed = cards.metrics.iter_response_figures

    def spied(**kwargs):
        for figures in streamed(**kwargs):
            seen.append(gc.isenabled())
            yield figures

    monkeypatch.setattr(cards.metrics, "iter_response_figures", spied)
    assert gc.isenabled()
    run_metrics(run=Run.objects.get(run_id="paused"), source=Source("consensus"))
    assert seen == [False, False]
    assert gc.isenabled()
