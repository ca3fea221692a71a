"""load_demo: a `demo` project with the bundles in fixtures/, a lead and two reviewers."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from evidence.models import Role
from evidence.services import membership_set, project_create
from ingest.services import BundleInvalid, bundle_import
from replay.models import Run

DEMO_USERS = [("lead", Role.LEAD), ("alice", Role.REVIEWER), ("bob", Role.REVIEWER)]
FIXTURES = Path(settings.BASE_DIR) / "fixtures"


class Command(BaseCommand):
    help = "Create (or refresh) the demo project, its users and runs. Idempotent."

    def handle(self, *args, **options) -> None:
        project = project_create(slug="demo", name="Demo: returns, P7 and policies")
        password = os.environ.get("DEMO_PASSWORD") or secrets.token_urlsafe(9)
        User = get_user_model()
        for username, role in DEMO_USERS:
            user, _ = User.objects.get_or_create(username=username)
            user.set_password(password)
            user.is_staff = role == Role.LEAD
            user.save()
            membership_set(project=project, user=user, role=role)
        have = set(Run.objects.filter(project=project).values_list("run_id", flat=True))
        imported = 0
        for path in sorted(FIXTURES.glob("*.jsonl")):
            run_id = _run_id_of(path)
            if run_id in have:
                continue
            try:
                with path.open("rb") as stream:
                    bundle_import(stream=stream, project_slug="demo", source_name=path.name)
            except BundleInvalid as exc:
                raise CommandError(f"{path.name}: " + "; ".join(exc.lines())) from None
            imported += 1
        self.stdout.write(
            f"demo project ready: {imported} run(s) imported, {len(have)} already there"
        )
        self.stdout.write(
            "demo logins: " + ", ".join(name for name, _ in DEMO_USERS) + f"  password: {password}"
        )


def _run_id_of(path: Path) -> str:
    with path.open("rb") as stream:
        return json.loads(stream.readline()).get("run_id", "")
