"""Disagreements between annotators, and the lead's adjudication that settles a card."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from cards.models import Claim, Origin, VerdictRevision
from cards.oversight import disagreements
from cards.services.claims import claim_revise
from cards.services.guards import StaleCard
from replay.models import Run
from tests.cards.conftest import judge, loaded_form, member, page_for, response_for, verdict_url


def disagreeing_keys(run_id: str) -> list[str]:
    return [item.claim.key for item in disagreements(run=Run.objects.get(run_id=run_id))]


@pytest.fixture
def split(claim, reviewer, second_reviewer) -> Claim:
    """Alice and Bob disagree on the claim."""
    judge(claim, reviewer, "supported", "Alice: D-01 excludes final-sale items.")
    judge(claim, second_reviewer, "unsupported", "Bob: D-01 is about direct purchases only.")
    return claim


# --- disagreements ---------------------------------------------------------------------------


def test_a_claim_whose_annotators_differ_is_a_disagreement(split):
    (item,) = disagreements(run=Run.objects.get(run_id="q017-r3"))
    assert item.claim == split
    assert item.revision.seq == 1
    assert sorted((v.annotator, v.support) for v in item.verdicts) == [
        ("alice", "supported"),
        ("bob", "unsupported"),
    ]
    assert item.adjudication is None


def test_only_each_annotators_newest_verdict_counts(split, reviewer):
    judge(split, reviewer, "unsupported", "Alice: on reflection, Bob is right.")
    assert disagreeing_keys("q017-r3") == []


def test_agreeing_annotators_are_no_disagreement(claim, reviewer, second_reviewer):
    judge(claim, reviewer, "partial", "Alice.")
    judge(claim, second_reviewer, "partial", "Bob, for other reasons.")
    judge(claim, reviewer, "partial", "Alice again.")
    assert disagreeing_keys("q017-r3") == []


def test_a_single_annotator_is_no_disagreement(claim, reviewer):
    judge(claim, reviewer, "partial", "First.")
    judge(claim, reviewer, "supported", "Changed my mind.")
    assert disagreeing_keys("q017-r3") == []


def test_a_withdrawn_claim_is_no_disagreement(split, lead):
    claim_revise(claim=split, author=lead, seen_claim_seq=1, withdrawn=True, reason="Not one.")
    assert disagreeing_keys("q017-r3") == []


def test_a_local_reviewer_can_disagree_with_an_imported_judgement(reviewer, demo_runs):
    claim = Claim.objects.get(response=response_for("q017-r1"), key="C-017-2")  # seed: partial
    judge(claim, reviewer, "supported", "The answer gives the 30 days the passage gives.")
    (item,) = disagreements(run=Run.objects.get(run_id="q017-r1"))
    assert sorted((v.annotator, v.origin) for v in item.verdicts) == [
        ("alice", Origin.REVIEW),
        ("seed-protocol", Origin.IMPORTED),
    ]


def test_a_local_namesake_of_an_imported_annotator_is_another_annotator(demo_runs):
    namesake = member("seed-protocol")
    claim = Claim.objects.get(response=response_for("q017-r1"), key="C-017-2")  # seed: partial
    judge(claim, namesake, "supported", "I am a person, not the imported protocol.")
    assert disagreeing_keys("q017-r1") == ["C-017-2"]


def test_an_adjudication_is_listed_with_its_disagreement(split, lead):
    adjudication = judge(split, lead, "partial", "Lead: both are half right.", adjudication=True)
    (item,) = disagreements(run=Run.objects.get(run_id="q017-r3"))
    assert item.adjudication == adjudication
    assert len(item.verdicts) == 2  # the adjudication is not one more annotator


def test_the_disagreements_page_is_refused_to_a_reviewer(client, split, reviewer):
    client.force_login(reviewer)
    url = reverse("run_disagreements", args=["demo", "q017-r3"])
    assert client.get(url).status_code == 403
    assert client.get(url, HTTP_HX_REQUEST="true").status_code == 403


def test_the_disagreements_page_shows_a_lead_both_reasons(client, split, lead):
    client.force_login(lead)
    response = client.get(reverse("run_disagreements", args=["demo", "q017-r3"]))
    assert response.status_code == 200
    content = response.content.decode()
    assert "Alice: D-01 excludes final-sale items." in content
    assert "Bob: D-01 is about direct purchases only." in content
    assert f"#card-{split.key}" in content
    assert "not adjudicated" in content


def test_the_disagreements_page_marks_an_imported_annotator(client, reviewer, lead, demo_runs):
    claim = Claim.objects.get(response=response_for("q017-r1"), key="C-017-2")
    judge(claim, reviewer, "supported", "Alice: the answer gives the passage's 30 days.")
    client.force_login(lead)
    content = client.get(reverse("run_disagreements", args=["demo", "q017-r1"])).content.decode()
    assert 'seed-protocol <span class="badge">imported</span>' in content
    assert "Alice: the answer gives the passage&#x27;s 30 days." in content


def test_an_adjudicated_disagreement_says_so_on_the_page(client, split, lead):
    judge(split, lead, "partial", "Lead: both are half right.", adjudication=True)
    client.force_login(lead)
    content = client.get(reverse("run_disagreements", args=["demo", "q017-r3"])).content.decode()
    assert "adjudicated: partial" in content


# --- adjudication ----------------------------------------------------------------------------


def test_a_reviewer_may_not_adjudicate(split, reviewer):
    with pytest.raises(PermissionDenied):
        judge(split, reviewer, "partial", "I decide.", adjudication=True)
    assert not VerdictRevision.objects.filter(origin=Origin.ADJUDICATION).exists()


def test_a_lead_adjudicates_and_the_adjudication_becomes_the_current_verdict(
    split, lead, reviewer
):
    adjudication = judge(split, lead, "partial", "Lead: both are half right.", adjudication=True)
    assert (adjudication.origin, adjudication.author, adjudication.seq) == (
        Origin.ADJUDICATION,
        lead,
        4,
    )
    # A reviewer's later verdict does not displace it.
    judge(split, reviewer, "supported", "Alice insists.")
    for viewer in (lead, reviewer):
        card = page_for(viewer, "q017-r3", "Q-017").card(split.key)
        assert card.current == adjudication


def test_a_second_adjudication_supersedes_the_first(split, lead):
    first = judge(split, lead, "partial", "Lead: half right.", adjudication=True)
    second = judge(split, lead, "unsupported", "Lead: on reflection, no.", adjudication=True)
    assert second.supersedes == first
    assert page_for(lead, "q017-r3", "Q-017").card(split.key).current == second


def test_an_adjudication_is_stale_when_a_verdict_arrived_since_the_lead_looked(
    split, lead, reviewer
):
    looked_at = page_for(lead, "q017-r3", "Q-017").card(split.key).head_seq
    judge(split, reviewer, "unsupported", "Alice changes her mind.")
    with pytest.raises(StaleCard, match="A verdict arrived since you opened this claim"):
        judge(split, lead, "partial", "Lead.", adjudication=True, seen_head_seq=looked_at)
    assert not split.verdicts.filter(origin=Origin.ADJUDICATION).exists()


def test_a_lead_adjudicates_through_the_card(client, split, lead):
    client.force_login(lead)
    data = loaded_form(client, "q017-r3", "Q-017", split.key, adjudicate=True)
    assert data["adjudicate"] is True
    response = client.post(
        verdict_url("q017-r3", "Q-017", split.key),
        {**data, "support": "partial", "reason": "Lead: both are half right."},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert "(adjudication)" in response.content.decode()
    assert split.verdicts.get(origin=Origin.ADJUDICATION).reason == "Lead: both are half right."


def test_a_reviewer_posting_an_adjudication_gets_403_and_nothing_is_stored(
    client, split, reviewer
):
    client.force_login(reviewer)
    data = loaded_form(client, "q017-r3", "Q-017", split.key)
    response = client.post(
        verdict_url("q017-r3", "Q-017", split.key),
        {**data, "adjudicate": "True", "support": "partial", "reason": "I decide."},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 403
    assert "Only a lead of this project may do this." in response.content.decode()
    assert split.verdicts.count() == 2


def test_a_lead_who_judged_the_claim_can_still_adjudicate_it(client, split, lead):
    client.force_login(lead)
    data = loaded_form(client, "q017-r3", "Q-017", split.key)
    client.post(
        verdict_url("q017-r3", "Q-017", split.key),
        {**data, "support": "supported", "reason": "Lead, as a third reviewer."},
    )
    data = loaded_form(client, "q017-r3", "Q-017", split.key, adjudicate=True)
    response = client.post(
        verdict_url("q017-r3", "Q-017", split.key),
        {**data, "support": "partial", "reason": "Lead: adjudicated."},
    )
    assert response.status_code == 302
    assert split.verdicts.filter(origin=Origin.ADJUDICATION).count() == 1


def test_a_lead_who_adjudicated_can_still_save_a_review_verdict(client, split, lead):
    judge(split, lead, "partial", "Lead: adjudicated.", adjudication=True)
    client.force_login(lead)
    data = loaded_form(client, "q017-r3", "Q-017", split.key)
    response = client.post(
        verdict_url("q017-r3", "Q-017", split.key),
        {**data, "support": "supported", "reason": "Lead, as a reviewer."},
    )
    assert response.status_code == 302
    assert split.verdicts.filter(origin=Origin.REVIEW, author=lead).count() == 1
