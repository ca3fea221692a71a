"""load_demo's second project reviews blind, so a newcomer sees blind review at work."""

from __future__ import annotations

import io

from django.core.management import call_command

from cards.models import Assignment
from evidence.models import Membership, Project
from replay.models import Run


def load_demo() -> str:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def test_the_demo_has_a_project_that_reviews_blind_dealt_to_alice_and_bob(db, monkeypatch):
    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    out = load_demo()
    assert (
        "demo-blind project ready (blind review, cases dealt to alice and bob): "
        "2 run(s) imported, 0 already there"
    ) in out
    project = Project.objects.get(slug="demo-blind")
    assert (project.blind_review, project.reviewers_per_case, project.assignment) == (
        True,
        2,
        "round_robin",
    )
    assert sorted(Run.objects.filter(project=project).values_list("run_id", flat=True)) == [
        "p7-answer-a",
        "q017-r3",
    ]
    assert dict(
        Membership.objects.filter(project=project).values_list("user__username", "role")
    ) == {"lead": "lead", "alice": "reviewer", "bob": "reviewer"}
    dealt = sorted(
        Assignment.objects.filter(response__run__project=project).values_list(
            "response__run__run_id", "reviewer__username"
        )
    )
    assert dealt == [
        ("p7-answer-a", "alice"),
        ("p7-answer-a", "bob"),
        ("q017-r3", "alice"),
        ("q017-r3", "bob"),
    ]
    again = load_demo()
    assert "2 run(s) imported" not in again and "0 run(s) imported, 2 already there" in again
    assert Assignment.objects.filter(response__run__project=project).count() == 4
