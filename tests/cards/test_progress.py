"""cards.progress: when a response counts as reviewed (metrics.md), in Python and in SQL."""

from __future__ import annotations

import pytest
from django.db import connection

from cards.models import Origin, ResponseReview
from cards.progress import (
    LATEST_REVIEW_COMPLETE_SQL,
    is_reviewed,
    responses_for_run,
    reviewed_condition,
)
from replay.models import Run
from tests.conftest import bundle_bytes, import_bytes

RUN = {
    "kind": "run", "schema": "evidence-bundle/1", "run_id": "r",
    "created_at": "2026-10-01T12:00:00Z", "collection_snapshot": "s", "system": {},
}  # fmt: skip
PASSAGE = {"kind": "passage", "ref": "D@v#1", "doc_id": "D", "version": "v", "chunk_id": "1",
           "text": "Returns within 14 days."}  # fmt: skip


def _response(case_id: str, text: str, abstained: bool = False) -> list[dict]:
    return [
        {"kind": "case", "case_id": case_id, "query": f"{case_id}?"},
        {"kind": "response", "case_id": case_id, "text": text, "abstained": abstained,
         "retrieved": [{"ref": "D@v#1", "rank": 1}]},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("complete", "abstained", "text", "reviewed"),
    [
        (None, False, "An answer.", False),  # never marked
        (False, False, "An answer.", False),  # reopened
        (True, False, "An answer.", True),  # decomposition complete
        (None, True, "", True),  # abstained with no text: nothing to split
        (None, True, "I cannot say.", False),  # abstained, but said something to review
        (True, True, "I cannot say.", True),
    ],
)
def test_is_reviewed_follows_metrics_md(complete, abstained, text, reviewed):
    assert is_reviewed(complete=complete, abstained=abstained, text=text) is reviewed


def test_the_database_filter_says_what_the_python_rule_says(project, lead):
    lines = [RUN, PASSAGE]
    lines += _response("never", "An answer.")
    lines += _response("done", "An answer.")
    lines += _response("reopened", "An answer.")
    lines += _response("silent", "", abstained=True)
    lines += _response("said-something", "I cannot say.", abstained=True)
    import_bytes(bundle_bytes(*lines))
    run = Run.objects.get(run_id="r")
    by_case = {r.case.case_id: r for r in responses_for_run(run=run)}
    for case_id, marks in {"done": [True], "reopened": [True, False]}.items():
        for complete in marks:
            ResponseReview.objects.create(
                response=by_case[case_id], complete=complete, author=lead,
                annotator=lead.username, origin=Origin.REVIEW,
            )  # fmt: skip
    rows = list(responses_for_run(run=run))
    in_sql = {r.case.case_id for r in responses_for_run(run=run).filter(reviewed_condition())}
    in_python = {
        r.case.case_id
        for r in rows
        if is_reviewed(complete=r.review_complete, abstained=r.abstained, text=r.text)
    }
    assert in_sql == in_python == {"done", "silent"}


def test_the_review_mark_written_as_sql_reads_what_the_orm_expression_reads(project, lead):
    lines = [RUN, PASSAGE]
    for case_id in ("never", "done", "reopened", "redone"):
        lines += _response(case_id, "An answer.")
    import_bytes(bundle_bytes(*lines))
    run = Run.objects.get(run_id="r")
    by_case = {r.case.case_id: r for r in responses_for_run(run=run)}
    marks = {"done": [True], "reopened": [True, False], "redone": [True, False, True]}
    for case_id, completes in marks.items():
        for complete in completes:
            ResponseReview.objects.create(
                response=by_case[case_id], complete=complete, author=lead,
                annotator=lead.username, origin=Origin.REVIEW,
            )  # fmt: skip
    in_orm = {r.case.case_id: bool(r.review_complete) for r in responses_for_run(run=run)}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT k.case_id, " + LATEST_REVIEW_COMPLETE_SQL.format(response="x")
            + " FROM replay_response x JOIN evidence_case k ON k.id = x.case_id"
        )  # fmt: skip
        in_sql = {case_id: bool(complete) for case_id, complete in cursor.fetchall()}
    assert in_sql == in_orm == {"never": False, "done": True, "reopened": False, "redone": True}
