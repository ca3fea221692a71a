"""Each claim's claim and verdict revisions form one hash chain, checked from the rows alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone

from cards.chain import claim_revision, seal, verdict_revision
from cards.models import Claim, ClaimRevision, VerdictRevision
from cards.services.claims import claim_create, claim_revise
from tests.cards.conftest import (
    NO_DURATION,
    OLD_POLICY,
    REFUND_START,
    aside_bundle,
    assert_chain_holds,
    chain_of,
    judge,
    response_for,
)
from tests.conftest import bundle_bytes, import_bytes


def test_a_fresh_claim_starts_a_chain_of_one(claim):
    assert assert_chain_holds(claim) == 1
    (revision, document) = chain_of(claim)[0]
    assert revision.prev_sha256 is None
    assert document["type"] == "claim_revision"
    assert (document["project"], document["run_id"], document["case_id"]) == (
        "demo",
        "q017-r3",
        "Q-017",
    )


def test_claim_and_verdict_revisions_share_one_counter(claim, reviewer, second_reviewer, lead):
    judge(claim, reviewer, "partial", "First.")
    judge(
        claim, second_reviewer, "unsupported", "Bob.", contradicts=True, diagnosis="locator_drift"
    )
    claim_revise(claim=claim, author=lead, seen_claim_seq=1, text="Rewritten.", reason="Clearer.")
    judge(claim, reviewer, "supported", "Again.", citation_relevance={}, note="n")
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=4, withdrawn=True, reason="Dup.")
    assert assert_chain_holds(claim) == 6
    kinds = [document["type"] for _, document in chain_of(claim)]
    assert kinds == [
        "claim_revision",
        "verdict_revision",
        "verdict_revision",
        "claim_revision",
        "verdict_revision",
        "claim_revision",
    ]


def test_an_adjudication_is_a_link_of_the_same_chain(claim, reviewer, second_reviewer, lead):
    judge(claim, reviewer, "supported", "Alice.")
    judge(claim, second_reviewer, "unsupported", "Bob.")
    adjudication = judge(claim, lead, "partial", "Lead decides.", adjudication=True)
    assert adjudication.seq == 4
    assert assert_chain_holds(claim) == 4
    assert chain_of(claim)[-1][1]["origin"] == "adjudication"


def test_local_revisions_extend_an_imported_chain(reviewer, demo_runs):
    claim = Claim.objects.get(response=response_for("q017-r1"), key="C-017-2")
    assert assert_chain_holds(claim) == 2  # imported: the claim, then seed-protocol's judgement
    judge(claim, reviewer, "partial", "The 30-day window drops its conditions.")
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, text="30 days.", reason="Short.")
    assert assert_chain_holds(claim) == 4


def test_chains_of_different_claims_are_numbered_apart(replay_response, reviewer):
    one = claim_create(response=replay_response, author=reviewer, text="A.", spans=[REFUND_START])
    two = claim_create(response=replay_response, author=reviewer, text="B.", spans=[NO_DURATION])
    judge(one, reviewer)
    judge(two, reviewer, "not_assessable")
    judge(one, reviewer, "partial")
    assert assert_chain_holds(one) == 3
    assert assert_chain_holds(two) == 2
    assert two.revisions.get().prev_sha256 is None


def test_the_hash_covers_every_field_of_the_document(claim, reviewer):
    verdict = judge(claim, reviewer, "partial", "Because.")
    (_, first), (row, document) = chain_of(claim)
    assert row == verdict
    assert seal(document) == verdict.sha256
    for field, other in [
        ("support", "supported"),
        ("reason", "Because!"),
        ("author", "bob"),
        ("seq", 3),
        ("prev_sha256", None),
        ("created_at", "2026-01-01T00:00:00Z"),
        ("claim_id", "c2"),
    ]:
        assert seal(document | {field: other}) != verdict.sha256, field
    assert seal(first | {"text": "Changed."}) != claim.revisions.get().sha256


# --- one home for the document and the row ------------------------------------------------


def columns(model) -> list[str]:
    return [f.attname for f in model._meta.concrete_fields if f.attname not in {"id", "claim_id"}]


def verdict_fields(**changes) -> dict:
    """The fields of an imported verdict revision, second in its chain."""
    return {
        "project": "p", "run_id": "r", "case_id": "c", "claim_id": "c1", "seq": 2,
        "author_id": None, "annotator": "judge", "origin": "imported",
        "association": "attached", "support": "supported", "contradicts": False, "reason": "R.",
        "diagnosis": "", "citation_relevance": {}, "note": "", "stated_at": None,
        "supersedes_id": None, "supersedes_seq": None,
        "created_at": datetime(2026, 10, 2, 9, 0, tzinfo=UTC), "prev_sha256": None,
    } | changes  # fmt: skip


@pytest.mark.parametrize(
    ("supersedes_id", "supersedes_seq"), [(7, None), (None, 3)], ids=["row-only", "seq-only"]
)
def test_a_superseded_verdict_is_named_by_its_row_and_its_place_in_the_chain_together(
    supersedes_id, supersedes_seq
):
    # The row names it by id, the hashed document by `seq` (what an exported chain can check):
    # one without the other would store a verdict that its document does not describe.
    with pytest.raises(
        ValueError, match=r"^supersedes_id and supersedes_seq come together, or not at all$"
    ):
        verdict_revision(
            **verdict_fields(supersedes_id=supersedes_id, supersedes_seq=supersedes_seq)
        )
    both = verdict_revision(**verdict_fields(supersedes_id=7, supersedes_seq=3))
    assert (both.row["supersedes_id"], both.document["supersedes"]) == (7, 3)


def test_the_time_an_imported_judgement_was_made_is_hashed_with_it():
    # `stated_at`, the judgement's `at` in the bundle, is in the document the seal covers.
    stated = datetime(2026, 9, 30, 23, 59, tzinfo=UTC)
    verdict = verdict_revision(**verdict_fields(stated_at=stated))
    assert verdict.row["stated_at"] == stated
    assert verdict.document["stated_at"] == "2026-09-30T23:59:00.000000Z"
    assert verdict.sha256 != verdict_revision(**verdict_fields()).sha256


def test_a_sealed_revision_names_every_column_but_id_and_claim_in_table_order():
    identity = {"project": "p", "run_id": "r", "case_id": "c", "claim_id": "c1"}
    now = datetime(2026, 10, 2, 9, 0, tzinfo=UTC)
    claim = claim_revision(
        **identity, seq=1, text="T.", kind="factual", spans=[(0, 2)], citations=["a"],
        facts=[], gaps=[], withdrawn=False, reason="", author_id=None, annotator="bundle",
        origin="imported", created_at=now, prev_sha256=None,
    )  # fmt: skip
    verdict = verdict_revision(**verdict_fields(prev_sha256=claim.sha256))
    assert list(claim.row) == columns(ClaimRevision)
    assert list(verdict.row) == columns(VerdictRevision)
    assert claim.sha256 == claim.row["sha256"] == seal(claim.document)
    assert verdict.sha256 == verdict.row["sha256"] == seal(verdict.document)
    assert claim.row["spans"] == claim.document["spans"] == [[0, 2]]
    assert (verdict.row["diagnosis"], verdict.document["diagnosis"]) == ("", None)


def test_a_revision_saved_in_review_and_one_imported_with_the_same_fields_match(
    project, reviewer, monkeypatch
):
    now = datetime(2026, 10, 2, 9, 0, tzinfo=UTC)
    monkeypatch.setattr(timezone, "now", lambda: now)
    judgement = {
        "support": "partial", "reason": "v1 says 30 days; v2 says 14.",
        "diagnosis": "locator_drift", "citation_relevance": {OLD_POLICY: "necessary"},
        "note": "Ask which version applies.",
    }  # fmt: skip
    imported_lines = aside_bundle("imported")
    imported_lines[-1]["claims"][0]["judgements"] = [{"annotator": "alice", **judgement}]
    import_bytes(bundle_bytes(*imported_lines))
    reviewed_lines = aside_bundle("reviewed")
    (claim_line,) = reviewed_lines[-1].pop("claims")
    import_bytes(bundle_bytes(*reviewed_lines))
    reviewed = claim_create(
        response=response_for("reviewed"), author=reviewer, text=claim_line["text"],
        spans=claim_line["spans"], citations=claim_line["citations"], facts=claim_line["facts"],
    )  # fmt: skip
    judge(reviewed, reviewer, **judgement)
    imported = Claim.objects.get(response=response_for("imported"))

    # Where and how each came in differ; every other field of the documents is the same.
    apart = {"project", "run_id", "case_id", "claim_id", "origin", "prev_sha256"}
    (_, claim_a), (_, verdict_a) = chain_of(imported)
    (_, claim_b), (_, verdict_b) = chain_of(reviewed)
    # A bundle's decomposition is authored by `bundle`, with a reason the import gives it.
    assert (claim_a["author"], claim_a["reason"]) == ("bundle", "Imported with run imported")
    assert (claim_b["author"], claim_b["reason"]) == ("alice", "")
    apart_claim = apart | {"author", "reason"}
    assert {k: v for k, v in claim_a.items() if k not in apart_claim} == {
        k: v for k, v in claim_b.items() if k not in apart_claim
    }
    assert {k: v for k, v in verdict_a.items() if k not in apart} == {
        k: v for k, v in verdict_b.items() if k not in apart
    }
    assert (verdict_a["origin"], verdict_b["origin"]) == ("imported", "review")
    assert_chain_holds(imported)
    assert_chain_holds(reviewed)
