"""A lead sets a project up for blind review, deals a run's cases and unblinds it, in a browser.

Served as `make run` serves it (DEBUG on), in a project of its own so that no other
test's project changes under it.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ROOT, log_in

pytestmark = pytest.mark.browser

SLUG = "lead-settings"
RUN = "q017-r1"
NEW_PROJECT = f"""
from django.contrib.auth.models import User
from evidence.models import Role
from evidence.services import membership_set, project_create
project = project_create(slug="{SLUG}", name="Lead settings")
for name, role in (("lead", Role.LEAD), ("alice", Role.REVIEWER), ("bob", Role.REVIEWER)):
    membership_set(project=project, user=User.objects.get(username=name), role=role)
"""


def test_a_lead_turns_blind_review_on_deals_the_cases_and_unblinds_the_run(page, live):
    live.manage("shell", "-c", NEW_PROJECT)
    live.manage("import_bundle", str(ROOT / "fixtures" / f"{RUN}.jsonl"), "--project", SLUG)
    log_in(page, "lead")

    page.goto(f"/p/{SLUG}/settings/")
    page.get_by_label("Blind review").check()
    page.get_by_label("Reviewers per case").fill("2")
    page.get_by_label("round-robin").check()
    page.get_by_label("alice").check()
    page.get_by_label("bob").check()
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#settings-form")).to_contain_text("Settings saved")
    page.reload()  # what was saved, not only what the swap showed
    expect(page.get_by_label("Blind review")).to_be_checked()
    expect(page.get_by_label("Reviewers per case")).to_have_value("2")
    expect(page.get_by_label("round-robin")).to_be_checked()

    page.goto(f"/p/{SLUG}/runs/{RUN}/assign/")
    page.get_by_role("button", name="Assign unassigned cases").click()
    expect(page.locator(".messages")).to_be_visible()
    expect(page.locator("tbody")).to_contain_text("alice, bob")

    page.goto(f"/p/{SLUG}/runs/{RUN}/")
    page.get_by_role("button", name="Unblind every case of this run").click()
    expect(page.locator(".messages")).to_be_visible()
    expect(page.locator(".badge.ok", has_text="unblinded")).to_be_visible()
    assert page.console_problems == []
    assert page.failed_requests == []
