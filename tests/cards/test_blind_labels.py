"""metrics.md: in a project that reviews blind, a reviewer's label is their blind verdict, the
last one saved before they could see anyone else's verdict on the case; later revisions are
kept and shown as informed revisions, but change neither agreement, consensus nor the
disagreement list. Otherwise, and for imported annotators, the newest label."""

from __future__ import annotations

import pytest

from cards.agreement import run_agreement
from cards.blind import sightings
from cards.metrics import Source, run_metrics
from cards.models import Claim, ResponseReview
from cards.oversight import disagreements
from cards.services.claims import claim_create
from cards.services.reviews import response_mark_complete, unblinding_create
from cards.verdicts import newest_labels
from evidence.models import Project
from evidence.services import project_settings_update
from replay.models import Run
from tests.cards.conftest import (
    FINAL_SALE,
    REFUND_START,
    case_url,
    judge,
    loaded_form,
    page_for,
    verdict_url,
)

CASE = case_url("q017-r3", "Q-017")
BOB_ON_C1 = "Bob: D-01 says final-sale items are excluded, but not this way."
BOB_ON_C2 = "Bob: D-02 says refunds start at the warehouse."
PLACEHOLDER = "Placeholder, to be replaced once I have seen the others."


@pytest.fixture
def two_claims(replay_response, reviewer) -> list[Claim]:
    return [
        claim_create(response=replay_response, author=reviewer, text=text, spans=[span])
        for text, span in (
            ("Final-sale items are excluded from returns.", FINAL_SALE),
            ("Refund processing starts once the item reaches the warehouse.", REFUND_START),
        )
    ]


def run() -> Run:
    return Run.objects.select_related("project").get(run_id="q017-r3")


def measured(client, lead) -> dict:
    """Agreement (run_agreement and the figures page), consensus and the disagreement list."""
    agreement = run_agreement(run=run(), annotators=["alice", "bob"])
    client.force_login(lead)
    page = client.get("/p/demo/runs/q017-r3/figures/agreement/", {"annotator": ["alice", "bob"]})
    shown = page.context["agreement"]
    consensus = run_metrics(run=run(), source=Source("consensus")).per_response[0]["verdicts"]
    return {
        "agreement": (agreement.claims, agreement.raw.k, agreement.raw.n, agreement.kappa),
        "labels": sorted((d.claim_id, sorted(d.labels.items())) for d in agreement.disagreeing),
        "page": (shown.claims, shown.raw.k, shown.raw.n, shown.kappa, shown.alpha),
        "page_text": f"all agree on <strong>{shown.raw.k} / {shown.raw.n}</strong>"
        in page.content.decode(),
        "consensus": consensus,
        "disagreements": [
            (d.claim.key, sorted((v.annotator, v.support, v.reason) for v in d.verdicts))
            for d in disagreements(run=run())
        ],
    }


def whole_cards(client, claims) -> str:
    """The cards of these claims, each loaded whole."""
    return "".join(
        client.get(
            case_url("q017-r3", "Q-017", "card_detail", claim.key), HTTP_HX_REQUEST="true"
        ).content.decode()
        for claim in claims
    )


def placeholder_attack(client, claims, reviewer, second_reviewer, lead) -> tuple[dict, dict]:
    """bob judges; alice saves placeholders, marks her review complete, reads bob's verdicts
    and copies his labels in new revisions. What is measured before and after the copy."""
    c1, c2 = claims
    judge(c1, second_reviewer, "unsupported", BOB_ON_C1)
    judge(c2, second_reviewer, "supported", BOB_ON_C2)
    client.force_login(reviewer)
    for claim in claims:
        data = loaded_form(client, "q017-r3", "Q-017", claim.key)
        client.post(
            verdict_url("q017-r3", "Q-017", claim.key),
            {**data, "support": "not_assessable", "reason": PLACEHOLDER},
        )
    assert client.post(case_url("q017-r3", "Q-017", "review_complete")).status_code == 302
    seen = whole_cards(client, claims)
    assert BOB_ON_C1 in seen and BOB_ON_C2 in seen
    before = measured(client, lead)
    client.force_login(reviewer)
    for claim, support in ((c1, "unsupported"), (c2, "supported")):
        data = loaded_form(client, "q017-r3", "Q-017", claim.key)
        response = client.post(
            verdict_url("q017-r3", "Q-017", claim.key),
            {**data, "support": support, "reason": "Copied from bob."},
        )
        assert response.status_code == 302
    return before, measured(client, lead)


def test_copying_anothers_labels_after_seeing_them_does_not_change_the_measured_agreement(
    client, blind, two_claims, reviewer, second_reviewer, lead
):
    before, after = placeholder_attack(client, two_claims, reviewer, second_reviewer, lead)
    assert after == before
    assert before["agreement"][:3] == (2, 0, 2)  # the placeholders, not the copies
    assert before["page"][:3] == (2, 0, 2) and before["page_text"]
    assert before["consensus"]["no_consensus"] == 2
    assert [labels for _, labels in before["disagreements"]] == [
        [("alice", "not_assessable", PLACEHOLDER), ("bob", "unsupported", BOB_ON_C1)],
        [("alice", "not_assessable", PLACEHOLDER), ("bob", "supported", BOB_ON_C2)],
    ]


def test_the_copy_is_kept_and_shown_as_an_informed_revision(
    client, blind, two_claims, reviewer, second_reviewer, lead
):
    placeholder_attack(client, two_claims, reviewer, second_reviewer, lead)
    card = page_for(reviewer, "q017-r3", "Q-017").card("c1")
    verdicts = [(e.row.support, e.informed) for e in card.history if e.kind == "verdict"]
    assert verdicts == [
        ("unsupported", True),  # alice's copy
        ("not_assessable", False),  # alice's blind verdict
        ("unsupported", False),  # bob's, saved before he could see anyone's
    ]
    # The card's own verdict is still the newest: only the labels of agreement are blind.
    assert (card.mine.reason, card.current.reason) == ("Copied from bob.", "Copied from bob.")
    client.force_login(reviewer)
    content = whole_cards(client, two_claims)
    assert content.count("informed revision</span>") == 4  # two cards: history and list
    client.force_login(lead)
    assert whole_cards(client, two_claims).count("informed revision</span>") == 4


def test_without_blind_review_the_copy_is_the_label(
    client, two_claims, reviewer, second_reviewer, lead
):
    before, after = placeholder_attack(client, two_claims, reviewer, second_reviewer, lead)
    assert before["agreement"][:3] == (2, 0, 2)
    assert after["agreement"][:3] == (2, 2, 2)
    assert after["disagreements"] == []
    assert "informed revision" not in client.get(CASE).content.decode()


# --- when a reviewer could first see another's verdict ----------------------------------------


def labels(claim: Claim) -> dict[str, tuple[str, str]]:
    """Each annotator's label on the claim, by key, as agreement reads it."""
    clock = sightings(run=Run.objects.select_related("project").get(pk=claim.response.run_id))
    verdicts = list(claim.verdicts.order_by("-seq"))
    chosen = newest_labels(verdicts, sighted=clock.of(claim.response_id))
    return {a.key: (v.support, v.reason) for a, v in chosen.items()}


def test_a_revision_before_anyone_else_judged_is_still_blind(
    blind, claim, replay_response, reviewer, second_reviewer
):
    judge(claim, reviewer, "partial", "first")
    response_mark_complete(response=replay_response, author=reviewer)
    judge(claim, reviewer, "supported", "second: nothing of anyone else to see yet")
    judge(claim, second_reviewer, "unsupported", "bob")
    judge(claim, reviewer, "unsupported", "third: after bob's")
    assert labels(claim) == {
        "alice": ("supported", "second: nothing of anyone else to see yet"),
        "bob": ("unsupported", "bob"),
    }


def test_a_reviewer_who_saw_before_judging_has_no_label(
    blind, claim, replay_response, reviewer, second_reviewer, lead
):
    judge(claim, second_reviewer, "unsupported", "bob")
    unblinding_create(run=run(), lead=lead, response=replay_response)
    judge(claim, reviewer, "unsupported", "alice, after the lead unblinded the case")
    assert labels(claim) == {"bob": ("unsupported", "bob")}
    assert run_agreement(run=run(), annotators=["alice", "bob"]).claims == 0


def test_a_run_unblinding_is_a_moment_of_sight_for_every_case(
    blind, claim, reviewer, second_reviewer, lead
):
    judge(claim, reviewer, "supported", "alice, blind")
    judge(claim, second_reviewer, "unsupported", "bob")
    unblinding_create(run=run(), lead=lead)
    judge(claim, reviewer, "unsupported", "alice, informed")
    assert labels(claim)["alice"] == ("supported", "alice, blind")


def test_a_lead_could_see_from_the_first_verdict_of_anyone_else(blind, claim, reviewer, lead):
    judge(claim, lead, "partial", "lead, before anyone")
    judge(claim, reviewer, "supported", "alice")
    judge(claim, lead, "supported", "lead, having seen alice's")
    assert labels(claim) == {
        "lead": ("partial", "lead, before anyone"),
        "alice": ("supported", "alice"),
    }


def test_verdicts_saved_before_blind_review_was_switched_on_could_see_everything(
    claim, reviewer, second_reviewer, lead
):
    judge(claim, second_reviewer, "unsupported", "bob")
    judge(claim, reviewer, "unsupported", "alice, who could read bob's")
    project = Project.objects.get(slug="demo")
    project_settings_update(
        project=project, actor=lead, blind_review=True, reviewers_per_case=1,
        assignment="manual", rotation=[],
    )  # fmt: skip
    assert labels(claim) == {"bob": ("unsupported", "bob")}
    project_settings_update(
        project=project, actor=lead, blind_review=False, reviewers_per_case=1,
        assignment="manual", rotation=[],
    )  # fmt: skip
    assert labels(claim)["alice"] == ("unsupported", "alice, who could read bob's")


def test_imported_judgements_keep_their_newest_label_and_count_as_seen(
    blind, demo_runs, reviewer, lead
):
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-1")
    judge(claim, reviewer, "partial", "alice, blind to seed-protocol")
    unblinding_create(run=claim.response.run, lead=lead)
    judge(claim, reviewer, "unsupported", "alice, informed")
    assert labels(claim) == {
        "alice": ("partial", "alice, blind to seed-protocol"),
        "imported:seed-protocol": (
            "unsupported",
            "The passage explicitly excludes final-sale items, so it does not support 'any item'.",
        ),
    }


def test_the_clock_costs_nothing_when_the_project_is_not_blind(claim, django_assert_num_queries):
    the_run = run()
    with django_assert_num_queries(0):
        assert sightings(run=the_run).of(claim.response_id) == {}


def test_a_review_mark_is_timed_by_the_same_clock_as_the_verdicts(
    blind, claim, replay_response, reviewer
):
    verdict = judge(claim, reviewer, "supported", "alice")
    mark = response_mark_complete(response=replay_response, author=reviewer)
    mark = ResponseReview.objects.get(pk=mark.pk)
    assert verdict.created_at < mark.created_at


def test_a_comparison_counts_the_blind_labels_as_the_runs_figures_do(
    client, blind, two_claims, reviewer, second_reviewer, lead
):
    from cards.run_state import roster_for
    from compare.comparison import compare_runs
    from compare.pages import compared_page, comparison_state

    placeholder_attack(client, two_claims, reviewer, second_reviewer, lead)
    consensus = Source("consensus")
    figures = run_metrics(run=run(), source=consensus).totals
    comparison = compare_runs(run_a=run(), run_b=run(), source=consensus)
    assert comparison.metrics_a["verdicts"] == figures["verdicts"]
    assert comparison.metrics_a["verdicts"]["no_consensus"] == 2  # the copies do not count
    assert comparison.metrics_a["micro"]["support"] == figures["micro"]["support"]
    # A page reads its pairs by case, with the same clock.
    state = comparison_state(run_a=run(), run_b=run())
    roster = roster_for(runs=[run(), run()], state=state)
    page = compared_page(
        run_a=run(), run_b=run(), roster=roster, source=consensus, state=state, show="all",
        page_number=1,
    )  # fmt: skip
    shown = [row["pair"].as_json() for row in page.rows if row["pair"].case_id == "Q-017"]
    assert shown == [p.as_json() for p in comparison.pairs if p.case_id == "Q-017"]
