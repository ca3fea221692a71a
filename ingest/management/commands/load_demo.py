"""load_demo: a `demo` project with the bundles in fixtures/, a lead and two reviewers, and a
`demo-blind` project that reviews blind, its cases dealt to alice and bob."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from cards.services.assignments import assignment_deal
from evidence.models import AssignmentMode, Project, Role
from evidence.services import membership_set, project_create, project_settings_update
from ingest.services import BundleInvalid, bundle_import
from replay.models import Run

DEMO_USERS = [("lead", Role.LEAD), ("alice", Role.REVIEWER), ("bob", Role.REVIEWER)]
FIXTURES = Path(settings.BASE_DIR) / "fixtures"
# Blind double review: a replay to split and judge, and an answer whose claims are ready.
BLIND_BUNDLES = ("q017-r3.jsonl", "p7-answer-a.jsonl")


class Command(BaseCommand):
    help = "Create (or refresh) the demo projects, their users and runs. Idempotent."

    def handle(self, *args, **options) -> None:
        password = os.environ.get("DEMO_PASSWORD") or secrets.token_urlsafe(9)
        User = get_user_model()
        users = {}
        for username, role in DEMO_USERS:
            user, _ = User.objects.get_or_create(username=username)
            user.set_password(password)
            # A project role never opens the Django admin (docs/decisions.md): it shows
            # every project, so it is for the site's staff alone.
            user.is_staff = False
            user.save()
            users[username] = (user, role)
        project = project_create(slug="demo", name="Demo: returns, P7 and policies")
        _add_members(project, users)
        imported, have = self._load(project, sorted(FIXTURES.glob("*.jsonl")))
        self.stdout.write(f"demo project ready: {imported} run(s) imported, {have} already there")
        blind_new = not Project.objects.filter(slug="demo-blind").exists()
        blind = project_create(slug="demo-blind", name="Demo: blind double review")
        _add_members(blind, users)
        lead = users["lead"][0]
        if blind_new:  # later runs keep what a lead chose on the settings page since
            project_settings_update(
                project=blind, actor=lead, blind_review=True,
                reviewers_per_case=2, assignment=AssignmentMode.ROUND_ROBIN,
                rotation=["alice", "bob"],
            )  # fmt: skip
        imported, have = self._load(blind, [FIXTURES / name for name in BLIND_BUNDLES])
        try:
            for run in Run.objects.filter(project=blind).select_related("project"):
                assignment_deal(run=run, lead=lead)  # idempotent: only cases that lack them
        except ValidationError as exc:  # a lead switched the demo to assigning by hand
            self.stdout.write(f"demo-blind: cases not dealt ({' '.join(exc.messages)})")
        self.stdout.write(
            f"demo-blind project ready (blind review, cases dealt to alice and bob): "
            f"{imported} run(s) imported, {have} already there"
        )
        self.stdout.write(
            "demo logins: " + ", ".join(name for name, _ in DEMO_USERS) + f"  password: {password}"
        )

    def _load(self, project: Project, paths: list[Path]) -> tuple[int, int]:
        have = set(Run.objects.filter(project=project).values_list("run_id", flat=True))
        imported = 0
        for path in paths:
            if _run_id_of(path) in have:
                continue
            try:
                with path.open("rb") as stream:
                    bundle_import(stream=stream, project_slug=project.slug, source_name=path.name)
            except BundleInvalid as exc:
                raise CommandError(f"{path.name}: " + "; ".join(exc.lines())) from None
            imported += 1
        return imported, len(have)


def _add_members(project: Project, users: dict) -> None:
    for user, role in users.values():
        membership_set(project=project, user=user, role=role)


def _run_id_of(path: Path) -> str:
    with path.open("rb") as stream:
        return json.loads(stream.readline()).get("run_id", "")
