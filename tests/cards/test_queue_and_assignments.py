from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from cards.models import Assignment, Claim
from cards.queue import next_in_queue
from cards.services.assignments import assignment_set
from cards.services.claims import claim_create, claim_revise
from cards.services.reviews import response_mark_complete
from evidence.models import Membership
from replay.models import Response
from tests.cards.conftest import FINAL_SALE, judge, response_for

QUEUE = "/p/demo/queue/"


def assign_url(run_id: str) -> str:
    return reverse("run_assign", args=["demo", run_id])


def judge_every_claim(response, author) -> None:
    for claim in Claim.objects.filter(response=response):
        judge(claim, author, "partial", "Judged from the queue.")


def flashes(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


# --- assignments -----------------------------------------------------------------------------


def test_a_lead_assigns_cases_by_form_post(client, lead, reviewer, demo_runs):
    q1, q2 = response_for("pro-plan-r1", "q1"), response_for("pro-plan-r1", "q2")
    client.force_login(lead)
    response = client.post(
        assign_url("pro-plan-r1"), {"reviewer": "alice", "responses": [q1.pk, q2.pk]}
    )
    assert response.status_code == 302
    assert response["Location"] == assign_url("pro-plan-r1")
    assert flashes(response) == ["Assigned 2 new cases to alice."]
    assigned = Assignment.objects.order_by("response__position")
    assert [(a.response, a.reviewer, a.assigned_by) for a in assigned] == [
        (q1, reviewer, lead),
        (q2, reviewer, lead),
    ]


def test_assigning_a_case_twice_adds_nothing(client, lead, reviewer, demo_runs):
    q1 = response_for("pro-plan-r1", "q1")
    client.force_login(lead)
    client.post(assign_url("pro-plan-r1"), {"reviewer": "alice", "responses": [q1.pk]})
    response = client.post(assign_url("pro-plan-r1"), {"reviewer": "alice", "responses": [q1.pk]})
    assert flashes(response)[-1] == "Assigned 0 new cases to alice."
    assert Assignment.objects.count() == 1


def test_the_assign_page_lists_the_runs_cases_and_who_has_them(client, lead, reviewer, demo_runs):
    assignment_set(responses=[response_for("pro-plan-r1", "q2")], reviewer=reviewer, lead=lead)
    client.force_login(lead)
    response = client.get(assign_url("pro-plan-r1"))
    assert response.status_code == 200
    assert [r.case.case_id for r in response.context["responses"]] == ["q1", "q2", "q3"]
    assert list(response.context["assigned"].values()) == [["alice"]]
    assert b'<option value="alice">' in response.content


@pytest.mark.parametrize("htmx", [False, True])
def test_a_reviewer_may_not_assign(client, reviewer, second_reviewer, demo_runs, htmx):
    q1 = response_for("pro-plan-r1", "q1")
    client.force_login(reviewer)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    assert client.get(assign_url("pro-plan-r1"), **headers).status_code == 403
    response = client.post(
        assign_url("pro-plan-r1"), {"reviewer": "bob", "responses": [q1.pk]}, **headers
    )
    assert response.status_code == 403
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("username", ["", "nobody", "mallory"])
def test_a_lead_cannot_assign_to_someone_outside_the_project(
    client, lead, outsider, demo_runs, username
):
    client.force_login(lead)
    q1 = response_for("pro-plan-r1", "q1")
    response = client.post(assign_url("pro-plan-r1"), {"reviewer": username, "responses": [q1.pk]})
    assert response.status_code == 302
    assert flashes(response) == ["Choose a reviewer and at least one case."]
    assert not Assignment.objects.exists()


def test_cases_of_another_run_are_ignored(client, lead, reviewer, demo_runs):
    client.force_login(lead)
    other = response_for("q017-r1")
    response = client.post(
        assign_url("pro-plan-r1"), {"reviewer": "alice", "responses": [other.pk]}
    )
    assert flashes(response) == ["Choose a reviewer and at least one case."]
    assert not Assignment.objects.exists()


def test_the_service_refuses_a_reviewer_as_assigner(reviewer, second_reviewer, demo_runs):
    with pytest.raises(PermissionDenied):
        assignment_set(
            responses=[response_for("pro-plan-r1", "q1")], reviewer=second_reviewer, lead=reviewer
        )
    assert not Assignment.objects.exists()


def test_the_service_refuses_an_assignee_from_another_project(lead, outsider, demo_runs):
    with pytest.raises(PermissionDenied):
        assignment_set(responses=[response_for("pro-plan-r1", "q1")], reviewer=outsider, lead=lead)


# --- the queue -------------------------------------------------------------------------------


@pytest.fixture
def assigned(lead, reviewer, demo_runs):
    """Alice has Q-017 of the first and of the second run: reviewed, but not by her yet."""
    responses = [response_for("q017-r2"), response_for("q017-r1")]
    assignment_set(responses=responses, reviewer=reviewer, lead=lead)
    return responses


def test_the_queue_opens_my_first_assigned_case_not_reviewed_by_me(client, reviewer, assigned):
    client.force_login(reviewer)
    response = client.get(QUEUE)
    assert response.status_code == 302
    assert response["Location"] == "/p/demo/runs/q017-r1/cases/Q-017/"


def test_the_queue_moves_on_once_i_judged_every_claim(client, reviewer, assigned):
    judge_every_claim(response_for("q017-r1"), reviewer)
    client.force_login(reviewer)
    assert client.get(QUEUE)["Location"] == "/p/demo/runs/q017-r2/cases/Q-017/"


def test_an_empty_queue_says_so_with_a_link_to_my_work(
    client, lead, reviewer, second_reviewer, assigned
):
    others = Response.objects.exclude(pk__in=[r.pk for r in assigned])
    assignment_set(responses=list(others), reviewer=second_reviewer, lead=lead)
    for response in assigned:
        judge_every_claim(response, reviewer)
    client.force_login(reviewer)
    response = client.get(QUEUE)
    assert response.status_code == 200
    assert "Your queue is empty" in response.content.decode()
    assert f'href="{reverse("my_work", args=["demo"])}"' in response.content.decode()


def test_a_case_assigned_to_someone_else_is_not_in_my_queue(client, second_reviewer, assigned):
    client.force_login(second_reviewer)
    location = client.get(QUEUE)["Location"]
    assert location != "/p/demo/runs/q017-r1/cases/Q-017/"
    assert location != "/p/demo/runs/q017-r2/cases/Q-017/"


def test_another_reviewers_verdicts_do_not_empty_my_queue(
    client, reviewer, second_reviewer, assigned
):
    judge_every_claim(response_for("q017-r1"), second_reviewer)
    client.force_login(reviewer)
    assert client.get(QUEUE)["Location"] == "/p/demo/runs/q017-r1/cases/Q-017/"


def test_a_reopened_case_comes_back_to_the_queue(client, reviewer, assigned):
    for response in assigned:
        judge_every_claim(response, reviewer)
    response_mark_complete(response=assigned[1], author=reviewer, complete=False)
    client.force_login(reviewer)
    assert client.get(QUEUE)["Location"] == "/p/demo/runs/q017-r1/cases/Q-017/"


def test_the_queue_follows_the_page_link_with_htmx_too(client, reviewer, assigned):
    client.force_login(reviewer)
    response = client.get(QUEUE, HTTP_HX_REQUEST="true")
    assert response.status_code == 302
    assert response["Location"] == "/p/demo/runs/q017-r1/cases/Q-017/"


def test_an_assigned_case_never_looked_at_is_in_the_queue(client, lead, reviewer, demo_runs):
    assignment_set(responses=[response_for("pro-plan-r1", "q1")], reviewer=reviewer, lead=lead)
    client.force_login(reviewer)
    assert client.get(QUEUE)["Location"] == "/p/demo/runs/pro-plan-r1/cases/q1/"


def test_a_case_whose_decomposition_is_not_complete_stays_in_the_queue(
    lead, reviewer, replay_response
):
    assignment_set(responses=[replay_response], reviewer=reviewer, lead=lead)
    claim = claim_create(response=replay_response, author=reviewer, text="A.", spans=[FINAL_SALE])
    judge(claim, reviewer)
    membership = Membership.objects.get(user=reviewer)
    assert next_in_queue(membership=membership).response_id == replay_response.pk


def test_a_withdrawn_claim_does_not_keep_a_case_in_the_queue(lead, reviewer, replay_response):
    assignment_set(responses=[replay_response], reviewer=reviewer, lead=lead)
    kept = claim_create(response=replay_response, author=reviewer, text="A.", spans=[FINAL_SALE])
    dropped = claim_create(response=replay_response, author=reviewer, text="B.", spans=[[0, 5]])
    claim_revise(claim=dropped, author=reviewer, seen_claim_seq=1, withdrawn=True, reason="No.")
    judge(kept, reviewer)
    response_mark_complete(response=replay_response, author=reviewer)
    assert next_in_queue(membership=Membership.objects.get(user=reviewer)) is None
