"""The project settings page: blind review, reviewers per case and how cases are assigned."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from evidence.models import Membership, Project
from evidence.services import project_settings_update

HTMX = {"HTTP_HX_REQUEST": "true"}
URL = "/p/demo/settings/"
ROUND_ROBIN = {
    "blind_review": "on",
    "reviewers_per_case": "2",
    "assignment": "round_robin",
    "rotation": ["alice", "bob"],
}


def flashes(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def rotation() -> list[str]:
    return sorted(
        Membership.objects.filter(in_rotation=True).values_list("user__username", flat=True)
    )


@pytest.fixture
def as_lead(client, lead, reviewer, second_reviewer):
    client.force_login(lead)
    return client


def test_a_lead_sees_the_settings_of_the_project(as_lead, django_assert_max_num_queries):
    with django_assert_max_num_queries(6):
        response = as_lead.get(URL)
    content = response.content.decode()
    assert response.status_code == 200
    assert 'name="blind_review"' in content and 'name="reviewers_per_case"' in content
    assert 'value="round_robin"' in content and 'value="random"' in content
    assert content.count('name="rotation"') == 3  # alice, bob and the lead
    assert reverse("project_settings", args=["demo"]) in as_lead.get("/p/demo/").content.decode()


def test_a_plain_post_saves_and_redirects_with_what_changed(as_lead):
    response = as_lead.post(URL, ROUND_ROBIN)
    assert response.status_code == 302 and response["Location"] == URL
    assert flashes(response) == [
        "Settings saved: blind review on; 2 reviewers per case; assignment round-robin; "
        "dealt to alice, bob."
    ]
    project = Project.objects.get(slug="demo")
    assert (project.blind_review, project.reviewers_per_case, project.assignment) == (
        True,
        2,
        "round_robin",
    )
    assert project.blind_since is not None
    assert rotation() == ["alice", "bob"]
    page = as_lead.get(URL).content.decode()
    assert 'name="blind_review" id="id_blind_review" aria-describedby="blind-help" checked' in page


def test_an_htmx_post_answers_with_the_form_and_its_feedback(as_lead):
    response = as_lead.post(URL, {**ROUND_ROBIN, "assignment": "random"}, **HTMX)
    content = response.content.decode()
    assert response.status_code == 200
    assert content.lstrip().startswith('<form id="settings-form"')
    assert "Settings saved: blind review on; 2 reviewers per case; assignment random" in content
    assert 'value="random" checked' in content
    again = as_lead.post(URL, {**ROUND_ROBIN, "assignment": "random"}, **HTMX)
    assert "Settings saved: nothing changed." in again.content.decode()


def test_dealing_needs_as_many_chosen_reviewers_as_reviewers_per_case(as_lead):
    response = as_lead.post(URL, {**ROUND_ROBIN, "rotation": ["alice"]}, **HTMX)
    assert response.status_code == 400
    assert "Choose at least 2 reviewers to deal per case." in response.content.decode()
    plain = as_lead.post(URL, {**ROUND_ROBIN, "reviewers_per_case": "0"})
    assert plain.status_code == 400
    project = Project.objects.get(slug="demo")
    assert (project.blind_review, project.assignment, rotation()) == (False, "manual", [])


def test_turning_blind_review_on_again_records_when(as_lead):
    as_lead.post(URL, ROUND_ROBIN)
    first = Project.objects.get(slug="demo").blind_since
    as_lead.post(URL, {**ROUND_ROBIN, "blind_review": ""})
    assert Project.objects.get(slug="demo").blind_since == first
    as_lead.post(URL, ROUND_ROBIN)
    assert Project.objects.get(slug="demo").blind_since > first


def test_a_reviewer_may_not_change_the_settings(client, reviewer):
    client.force_login(reviewer)
    assert client.get(URL).status_code == 403
    response = client.post(URL, ROUND_ROBIN)
    assert response.status_code == 403
    assert b"Only a lead of Demo may change the project" in response.content
    assert not Project.objects.get(slug="demo").blind_review
    assert (
        reverse("project_settings", args=["demo"]) not in client.get("/p/demo/").content.decode()
    )


def test_an_outsider_gets_404(client, outsider, project):
    client.force_login(outsider)
    assert client.get(URL).status_code == 404
    assert client.post(URL, ROUND_ROBIN).status_code == 404


def test_the_service_refuses_a_reviewer_and_a_stranger(project, reviewer, lead):
    with pytest.raises(PermissionDenied):
        project_settings_update(
            project=project, actor=reviewer, blind_review=True, reviewers_per_case=1,
            assignment="manual", rotation=[],
        )  # fmt: skip
    with pytest.raises(ValidationError, match="Not a member: mallory"):
        project_settings_update(
            project=project, actor=lead, blind_review=True, reviewers_per_case=1,
            assignment="random", rotation=["mallory"],
        )  # fmt: skip
