from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cards.models import Association, Diagnosis, Origin, Relevance, Support, VerdictRevision
from cards.services.claims import claim_create, claim_revise
from cards.services.guards import StaleCard
from cards.services.verdicts import verdict_save
from tests.cards.conftest import D01, D02, NO_DURATION, judge, page_for


def test_it_appends_a_verdict_revision_to_the_claims_chain(claim, second_reviewer):
    verdict = judge(claim, second_reviewer, "partial", "  D-01 says so, with a condition.  ")
    first_revision = claim.revisions.get()
    assert verdict.seq == 2
    assert verdict.prev_sha256 == first_revision.sha256
    assert (verdict.author, verdict.annotator, verdict.origin) == (
        second_reviewer,
        "bob",
        Origin.REVIEW,
    )
    assert verdict.support == Support.PARTIAL
    assert verdict.reason == "D-01 says so, with a condition."
    assert verdict.supersedes is None
    assert (verdict.contradicts, verdict.diagnosis, verdict.note) == (False, "", "")


@pytest.mark.parametrize("support", Support.values)
def test_it_accepts_each_of_the_four_labels(claim, reviewer, support):
    assert judge(claim, reviewer, support).support == support


@pytest.mark.parametrize("support", ["", "yes", "Supported", "contradicted"])
def test_it_refuses_any_other_label(claim, reviewer, support):
    with pytest.raises(ValidationError) as refused:
        judge(claim, reviewer, support)
    assert "support" in refused.value.message_dict
    assert not claim.verdicts.exists()


@pytest.mark.parametrize("reason", ["", " ", "   \n\t", None])
def test_it_refuses_a_blank_reason(claim, reviewer, reason):
    with pytest.raises(ValidationError) as refused:
        judge(claim, reviewer, "supported", reason)
    assert refused.value.message_dict["reason"] == [
        "A written reason is required: say what in the passage decides it."
    ]
    assert not VerdictRevision.objects.filter(claim=claim).exists()


def test_it_reports_every_problem_at_once(claim, reviewer):
    with pytest.raises(ValidationError) as refused:
        judge(claim, reviewer, "maybe", " ", diagnosis="guess", association="nearby")
    assert set(refused.value.message_dict) == {"support", "reason", "diagnosis", "association"}


def test_contradicts_goes_with_unsupported(claim, reviewer):
    verdict = judge(claim, reviewer, "unsupported", "D-01 says the opposite.", contradicts=True)
    assert verdict.contradicts


@pytest.mark.parametrize("support", ["supported", "partial", "not_assessable"])
def test_it_refuses_contradicts_with_any_other_label(claim, reviewer, support):
    with pytest.raises(ValidationError) as refused:
        judge(claim, reviewer, support, contradicts=True)
    assert "contradicts" in refused.value.message_dict


@pytest.mark.parametrize("diagnosis", Diagnosis.values)
def test_it_accepts_each_of_the_six_diagnoses(claim, reviewer, diagnosis):
    assert judge(claim, reviewer, "partial", diagnosis=diagnosis).diagnosis == diagnosis


def test_there_are_exactly_six_diagnoses():
    assert sorted(Diagnosis.values) == [
        "citation_conflicts",
        "expected_passage_not_retrieved",
        "locator_drift",
        "not_in_collection",
        "qualifier_dropped",
        "supporting_passage_not_cited",
    ]


@pytest.mark.parametrize("diagnosis", ["hallucination", "Qualifier dropped", " "])
def test_it_refuses_any_other_diagnosis(claim, reviewer, diagnosis):
    with pytest.raises(ValidationError) as refused:
        judge(claim, reviewer, "partial", diagnosis=diagnosis)
    assert "diagnosis" in refused.value.message_dict


def test_it_records_relevance_for_the_claims_citations(claim, reviewer):
    verdict = judge(claim, reviewer, citation_relevance={D01: Relevance.NECESSARY})
    assert verdict.citation_relevance == {D01: "necessary"}


def test_a_citation_left_unjudged_is_not_recorded(claim, reviewer):
    assert judge(claim, reviewer, citation_relevance={D01: ""}).citation_relevance == {}


@pytest.mark.parametrize(
    "relevance",
    [
        {D02: "necessary"},  # retrieved, but not attached to this claim
        {"nowhere@v1#p1": "redundant"},
        {D01: "essential"},
    ],
)
def test_it_refuses_relevance_outside_the_claims_citations(claim, reviewer, relevance):
    with pytest.raises(ValidationError) as refused:
        judge(claim, reviewer, citation_relevance=relevance)
    assert "citation_relevance" in refused.value.message_dict


def test_association_defaults_to_attached_when_the_claim_has_citations(claim, reviewer):
    assert claim.revisions.get().citations == [D01]
    assert judge(claim, reviewer).association == Association.ATTACHED


def test_association_defaults_to_missing_when_the_claim_has_none(replay_response, reviewer):
    bare = claim_create(
        response=replay_response, author=reviewer, text="No duration.", spans=[NO_DURATION]
    )
    assert judge(bare, reviewer, "unsupported", "Nothing cited.").association == "missing"


def test_association_follows_the_newest_claim_revision(claim, reviewer):
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, citations=[], reason="Unlink.")
    assert judge(claim, reviewer).association == Association.MISSING


def test_an_explicit_association_that_agrees_with_the_citations_is_kept(claim, reviewer):
    verdict = judge(claim, reviewer, "unsupported", "Marker is misplaced.", association="attached")
    assert verdict.association == Association.ATTACHED


def test_it_refuses_missing_on_a_claim_with_citations_as_the_import_does(claim, reviewer):
    with pytest.raises(ValidationError) as refused:
        judge(claim, reviewer, "unsupported", "Marker is misplaced.", association="missing")
    assert refused.value.message_dict["association"] == [
        "The citation is missing, but the claim has citations: relink the claim first."
    ]
    assert not claim.verdicts.exists()


def test_it_refuses_attached_on_a_claim_without_citations_as_the_import_does(
    replay_response, reviewer
):
    bare = claim_create(
        response=replay_response, author=reviewer, text="No duration.", spans=[NO_DURATION]
    )
    with pytest.raises(ValidationError) as refused:
        judge(bare, reviewer, "unsupported", "Nothing cited.", association="attached")
    assert refused.value.message_dict["association"] == [
        "The citation is attached, but the claim has no citations: relink the claim first."
    ]


def test_a_note_is_kept(claim, reviewer):
    assert judge(claim, reviewer, note="Ask the policy team.").note == "Ask the policy team."


def test_a_withdrawn_claim_takes_no_verdict(claim, reviewer):
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, withdrawn=True, reason="Dup.")
    with pytest.raises(ValidationError) as refused:
        judge(claim, reviewer)
    assert "withdrawn" in refused.value.message_dict["support"][0]


def test_a_lead_reviews_like_a_reviewer(claim, lead):
    verdict = judge(claim, lead, "partial", "The lead as a reviewer.")
    assert (verdict.origin, verdict.author) == (Origin.REVIEW, lead)


def test_it_refuses_someone_from_another_project(claim, outsider):
    with pytest.raises(PermissionDenied):
        judge(claim, outsider)
    assert not claim.verdicts.exists()


def test_a_second_verdict_by_the_same_person_supersedes_the_first(claim, reviewer):
    first = judge(claim, reviewer, "partial", "First look.")
    second = judge(claim, reviewer, "supported", "Second look.")
    assert (first.seq, second.seq) == (2, 3)
    assert second.supersedes == first
    assert second.prev_sha256 == first.sha256
    assert first.reason == "First look."  # the earlier verdict stays, unchanged


# --- stale forms -----------------------------------------------------------------------------


def test_a_form_loaded_before_the_claim_was_rewritten_is_stale(claim, reviewer, second_reviewer):
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    with pytest.raises(StaleCard, match="bob rewrote this claim since you opened it"):
        judge(claim, reviewer, seen_claim_seq=1)
    assert not claim.verdicts.exists()


def test_a_form_loaded_before_my_other_verdict_is_stale(claim, reviewer):
    judge(claim, reviewer, "partial", "Saved in another window.")
    with pytest.raises(StaleCard, match="You saved another verdict on this claim"):
        judge(claim, reviewer, "supported", "From the old window.", seen_own_seq=None)
    assert list(claim.verdicts.values_list("reason", flat=True)) == ["Saved in another window."]


def test_another_reviewers_verdict_does_not_make_my_form_stale(claim, reviewer, second_reviewer):
    # Both forms loaded while the claim had no verdict (blind double review).
    judge(claim, second_reviewer, "unsupported", "Bob disagrees.", seen_own_seq=None)
    verdict = judge(claim, reviewer, "supported", "Alice agrees.", seen_own_seq=None)
    assert verdict.seq == 3
    assert claim.verdicts.count() == 2


def test_a_form_loaded_before_the_claim_was_withdrawn_is_stale(claim, reviewer, second_reviewer):
    claim_revise(
        claim=claim, author=second_reviewer, seen_claim_seq=1, withdrawn=True, reason="D."
    )
    with pytest.raises(StaleCard):
        judge(claim, reviewer, seen_claim_seq=1)


def test_a_form_both_stale_and_invalid_is_reported_as_stale(claim, reviewer):
    # The claim changed under the form: that comes first (the typed input is kept on the page).
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, text="B.", reason="B.")
    with pytest.raises(StaleCard):
        judge(claim, reviewer, "supported", " ", seen_claim_seq=1)


# --- what the page shows ----------------------------------------------------------------------


def test_the_history_lists_every_revision_newest_first(claim, reviewer, second_reviewer):
    judge(claim, reviewer, "partial", "Alice first.")
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="Why.")
    judge(claim, reviewer, "supported", "Alice again.")
    card = page_for(reviewer, "q017-r3", "Q-017").card(claim.key)
    assert [(entry.seq, entry.kind) for entry in card.history] == [
        (4, "verdict"),
        (3, "claim"),
        (2, "verdict"),
        (1, "claim"),
    ]
    assert [v.reason for v in card.verdicts] == ["Alice again.", "Alice first."]
    assert card.current.reason == "Alice again."
    assert (card.mine.seq, card.head_seq) == (4, 4)


def test_the_page_renders_the_history_newest_first(client, claim, reviewer):
    judge(claim, reviewer, "partial", "Alice first.")
    judge(claim, reviewer, "supported", "Alice again.")
    client.force_login(reviewer)
    content = client.get("/p/demo/runs/q017-r3/cases/Q-017/", {"card": claim.key}).content.decode()
    history = content[content.index('class="history-list"') :]
    assert history.index("because: Alice again.") < history.index("because: Alice first.")
    assert history.index("Alice first.") < history.index("split the claim")


def test_a_save_locks_reads_the_chain_once_inserts_and_updates_its_figures(
    claim, reviewer, second_reviewer
):
    judge(claim, second_reviewer)  # a chain head in the verdict table, not the claim's
    mine = judge(claim, reviewer)
    with CaptureQueriesContext(connection) as queries:
        again = verdict_save(
            claim=claim, author=reviewer, support="partial", reason="D-01 hedges.",
            seen_claim_seq=1, seen_own_seq=mine.seq,
        )  # fmt: skip
    statements = [q["sql"].split()[0] for q in queries.captured_queries]
    # The lock (PostgreSQL only: SQLite's transactions begin IMMEDIATE), one read, the
    # INSERT and the UPDATE of the claim's own stored figures (one statement on PostgreSQL,
    # a data-modifying WITH); the savepoint is the test's transaction (a request has BEGIN
    # and COMMIT).
    wanted = ["SELECT", "INSERT", "UPDATE"]
    if connection.vendor == "postgresql":
        wanted = ["SELECT", "SELECT", "WITH"]
    assert [s for s in statements if s not in {"SAVEPOINT", "RELEASE"}] == wanted
    assert (again.seq, again.prev_sha256, again.supersedes) == (4, mine.sha256, mine)
