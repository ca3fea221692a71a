"""Dealing a run's cases to the reviewers in rotation: round-robin or random, idempotent."""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.messages import get_messages
from django.core.exceptions import PermissionDenied, ValidationError

from cards.models import Assignment
from cards.services.assignments import assignment_deal, assignment_seed, assignment_set
from evidence.models import Project
from evidence.services import project_settings_update
from replay.models import Run
from tests.cards.conftest import member
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle

URL = "/p/demo/runs/synthetic-r1/assign/deal/"


@pytest.fixture
def run(project, reviewer, second_reviewer, lead) -> Run:
    member("carol")
    import_bytes(bundle_bytes(*synthetic_bundle(cases=6, claims=1)))
    return Run.objects.get(run_id="synthetic-r1")


def settle(lead, *, assignment: str, per_case: int = 2, rotation=("alice", "bob", "carol")):
    project_settings_update(
        project=Project.objects.get(slug="demo"), actor=lead, blind_review=True,
        reviewers_per_case=per_case, assignment=assignment, rotation=rotation,
    )  # fmt: skip


def dealt(run: Run) -> dict[str, list[str]]:
    cases: dict[str, list[str]] = {}
    for case_id, name in (
        Assignment.objects.filter(response__run=run)
        .order_by("response__position", "reviewer__username")
        .values_list("response__case__case_id", "reviewer__username")
    ):
        cases.setdefault(case_id, []).append(name)
    return cases


def test_round_robin_deals_each_case_to_the_next_reviewers_in_turn(run, lead):
    settle(lead, assignment="round_robin")
    assert assignment_deal(run=run, lead=lead).created == 12
    assert dealt(run) == {
        "case-0": ["alice", "bob"],
        "case-1": ["alice", "carol"],
        "case-2": ["bob", "carol"],
        "case-3": ["alice", "bob"],
        "case-4": ["alice", "carol"],
        "case-5": ["bob", "carol"],
    }


def test_dealing_twice_assigns_nothing_new(run, lead):
    settle(lead, assignment="round_robin")
    assignment_deal(run=run, lead=lead)
    before = dealt(run)
    assert assignment_deal(run=run, lead=lead).created == 0
    assert dealt(run) == before


def test_random_dealing_is_balanced_and_the_same_for_the_same_run(run, lead):
    settle(lead, assignment="random")
    assignment_deal(run=run, lead=lead)
    first = dealt(run)
    assert all(len(set(names)) == 2 for names in first.values())
    assert set(Counter(n for names in first.values() for n in names).values()) == {4}
    Assignment.objects.all().delete()  # assignments are not evidence: they may be redone
    assignment_deal(run=run, lead=lead)
    assert dealt(run) == first
    assert assignment_seed(run) == assignment_seed(Run.objects.get(pk=run.pk))


def test_random_dealing_depends_on_the_run(project, lead, reviewer, second_reviewer):
    member("carol")
    member("dave")
    settle(lead, assignment="random", rotation=("alice", "bob", "carol", "dave"))
    orders = []
    for run_id in ("r-one", "r-two", "r-three"):
        import_bytes(bundle_bytes(*synthetic_bundle(run_id=run_id, cases=8, claims=1)))
        run = Run.objects.get(run_id=run_id)
        assignment_deal(run=run, lead=lead)
        orders.append(list(dealt(run).values()))
    assert len({str(order) for order in orders}) > 1


def test_a_case_assigned_by_hand_keeps_its_reviewer_and_is_topped_up(run, lead, reviewer):
    settle(lead, assignment="round_robin")
    first = run.responses.order_by("position").first()
    assignment_set(responses=[first], reviewer=lead, lead=lead)
    assignment_deal(run=run, lead=lead)
    assert dealt(run)["case-0"] == ["alice", "lead"]


def test_fewer_reviewers_in_rotation_than_asked_leaves_cases_short(run, lead):
    settle(lead, assignment="round_robin", per_case=2)
    Project.objects.filter(slug="demo").update(reviewers_per_case=3)
    result = assignment_deal(run=run, lead=lead)
    assert (result.created, result.short) == (18, 0)
    Project.objects.filter(slug="demo").update(reviewers_per_case=4)
    assert assignment_deal(run=run, lead=lead).short == 6


def test_a_project_that_assigns_by_hand_refuses_to_deal(run, lead):
    with pytest.raises(ValidationError, match="assigns cases by hand"):
        assignment_deal(run=run, lead=lead)


def test_only_a_lead_deals(run, lead, reviewer):
    settle(lead, assignment="round_robin")
    with pytest.raises(PermissionDenied):
        assignment_deal(run=run, lead=reviewer)


def test_the_assign_page_deals_by_a_plain_post(client, run, lead, django_assert_max_num_queries):
    settle(lead, assignment="round_robin")
    client.force_login(lead)
    with django_assert_max_num_queries(8):
        page = client.get("/p/demo/runs/synthetic-r1/assign/").content.decode()
    assert "Round-robin across alice, bob, carol, 2 reviewers per case" in page
    with django_assert_max_num_queries(16):
        response = client.post(URL)
    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Assigned 12 new case places."
    ]
    again = client.post(URL)
    assert [str(m) for m in get_messages(again.wsgi_request)][-1] == (
        "Every case already has its reviewers: nothing to assign."
    )


def test_the_assign_page_of_a_manual_project_points_to_the_settings(client, run, lead):
    client.force_login(lead)
    page = client.get("/p/demo/runs/synthetic-r1/assign/").content.decode()
    assert "This project assigns cases by hand" in page
    assert "/p/demo/settings/" in page
    response = client.post(URL)
    assert "assigns cases by hand" in str(list(get_messages(response.wsgi_request))[0])


def test_a_reviewer_may_not_deal_and_an_outsider_gets_404(client, run, lead, reviewer, outsider):
    settle(lead, assignment="round_robin")
    client.force_login(reviewer)
    assert client.post(URL).status_code == 403
    client.force_login(outsider)
    assert client.post(URL).status_code == 404
    assert not Assignment.objects.exists()
