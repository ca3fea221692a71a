from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError

from evidence.models import Membership, Role
from evidence.services import membership_change, membership_set
from tests.conftest import PASSWORD


@pytest.fixture
def admin(project) -> User:
    user = User.objects.create_user(username="ada", password=PASSWORD)
    membership_set(project=project, user=user, role=Role.ADMIN)
    return user


def test_an_admin_adds_changes_and_removes_a_member(project, admin):
    User.objects.create_user(username="carol")
    assert "carol is now a reviewer" in membership_change(
        project=project, actor=admin, username="carol", role="reviewer"
    )
    membership_change(project=project, actor=admin, username="carol", role="lead")
    assert Membership.objects.get(user__username="carol").role == "lead"
    membership_change(project=project, actor=admin, username="carol", role=None)
    assert not Membership.objects.filter(user__username="carol").exists()


def test_a_lead_may_not_manage_members(project, lead, reviewer):
    with pytest.raises(PermissionDenied):
        membership_change(project=project, actor=lead, username="alice", role="lead")


def test_the_last_admin_cannot_leave_or_be_demoted(project, admin):
    with pytest.raises(ValidationError, match="last admin"):
        membership_change(project=project, actor=admin, username="ada", role="reviewer")
    with pytest.raises(ValidationError, match="last admin"):
        membership_change(project=project, actor=admin, username="ada", role=None)


def test_an_unknown_user_is_named(project, admin):
    with pytest.raises(ValidationError, match="no user 'nobody'"):
        membership_change(project=project, actor=admin, username="nobody", role="reviewer")


def test_the_members_page_lets_an_admin_add_a_member_by_plain_post(client, project, admin):
    User.objects.create_user(username="carol")
    client.force_login(admin)
    response = client.post("/p/demo/members/", {"username": "carol", "role": "lead"})
    assert response.status_code == 302
    assert Membership.objects.get(user__username="carol").role == "lead"
    page = client.get("/p/demo/members/")
    assert b"carol is now a lead" in page.content


def test_the_members_page_refuses_a_reviewer(client, project, reviewer):
    client.force_login(reviewer)
    assert client.get("/p/demo/members/").status_code == 200
    response = client.post("/p/demo/members/", {"username": "alice", "role": "admin"})
    assert response.status_code == 403
    assert Membership.objects.get(user=reviewer).role == "reviewer"
