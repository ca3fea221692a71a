"""The Django admin shows every project, so it is the site staff's, never a project role's."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse

ADMIN_LINK = f'href="{reverse("admin:index")}"'


@pytest.mark.parametrize("persona", ["reviewer", "lead"])
def test_a_project_role_is_offered_no_admin_link_and_the_admin_refuses_it(
    client, db, request, persona
):
    client.force_login(request.getfixturevalue(persona))
    assert ADMIN_LINK not in client.get(reverse("home")).content.decode()
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_a_lead_cannot_read_a_project_in_the_admin(client, lead, project):
    client.force_login(lead)
    response = client.get(reverse("admin:evidence_project_change", args=[project.pk]))
    assert response.status_code == 302


@pytest.mark.parametrize("superuser", [False, True], ids=["staff", "superuser"])
def test_the_site_staff_is_offered_the_admin(client, db, superuser):
    user = User.objects.create_user("operator", password="x", is_staff=True)
    user.is_superuser = superuser
    user.save()
    client.force_login(user)
    assert ADMIN_LINK in client.get(reverse("home")).content.decode()
    assert client.get(reverse("admin:index")).status_code == 200


def test_the_demo_makes_no_account_staff(db, monkeypatch):
    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    User.objects.create_user("lead", is_staff=True)  # as an older load_demo left it
    call_command("load_demo", stdout=io.StringIO())
    assert not User.objects.filter(is_staff=True).exists()
