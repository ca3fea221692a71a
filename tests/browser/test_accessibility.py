"""axe-core on every kind of page: no serious or critical violation (WCAG 2.1 A and AA)."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe

from tests.browser.conftest import ROOT, log_in
from tests.browser.test_figures_judges import a_reviewer_finds_c017_2_supported

pytestmark = pytest.mark.browser

AXE = Axe()
OPTIONS = {
    # WCAG 2.0 and 2.1, levels A and AA, and axe's best practices.
    "runOnly": {
        "type": "tag",
        "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"],
    },
    "resultTypes": ["violations"],
}
SERIOUS = {"serious", "critical"}

PAGES = {
    "project": "/p/demo/",
    "run": "/p/demo/runs/q017-r1/",
    "case": "/p/demo/runs/q017-r1/cases/Q-017/",
    "my work": "/p/demo/work/",
    "figures, nobody judged": "/p/demo/runs/q017-r1/figures/",
    "figures": "/p/demo/runs/q017-r1/figures/?source=annotator:seed-protocol",
    "agreement": "/p/demo/runs/q017-r1/figures/agreement/",
    "compare, nobody judged": "/p/demo/compare/?a=q017-r1&b=q017-r2",
    "compare": "/p/demo/compare/?a=q017-r1&b=q017-r3&source=annotator:seed-protocol",
    "import": "/p/demo/import/",
    "audit": "/p/demo/audit/",
    "jobs": "/p/demo/jobs/",
    "account": "/account/",
}


def serious_violations(page) -> list[str]:
    """What axe finds serious or critical on the page as it is now, one line each."""
    results = AXE.run(page, options=OPTIONS)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + "; ".join(" ".join(node["target"]) for node in v["nodes"][:5])
        for v in results.response["violations"]
        if v["impact"] in SERIOUS
    ]


def test_the_login_page_has_no_serious_violation(page):
    page.goto("/login/")
    assert serious_violations(page) == []


@pytest.mark.parametrize("path", PAGES.values(), ids=PAGES.keys())
def test_a_page_has_no_serious_violation(page, path):
    log_in(page, "lead")
    page.goto(path)
    assert page.locator("h1").count() == 1  # the page itself, not an error page
    assert serious_violations(page) == []


def test_a_reviewer_splitting_a_case_meets_no_serious_violation(page):
    log_in(page, "alice")
    page.goto("/p/demo/runs/q017-r3/cases/Q-017/")
    page.get_by_text("Suggest a split").first.click()
    page.locator("[data-suggestion]").first.wait_for()
    assert serious_violations(page) == []


def test_the_upload_page_with_a_format_chosen_and_a_refusal_meets_no_serious_violation(page):
    log_in(page, "lead")
    page.goto("/p/demo/import/")
    page.get_by_label("File format").select_option("ragas")
    page.get_by_label("Run id").fill("axe-ragas")
    assert serious_violations(page) == []
    bad = ROOT / "tests" / "ingest" / "samples" / "alce-asqa.json"  # not Ragas JSONL
    page.get_by_label("File", exact=True).set_input_files(str(bad))
    page.get_by_role("button", name="Import").click()
    page.get_by_role("heading", name="Refused: nothing was stored").wait_for()
    assert serious_violations(page) == []


def test_the_figures_page_with_judges_against_people_meets_no_serious_violation(
    page, live, tmp_path
):
    url = a_reviewer_finds_c017_2_supported(page, live, tmp_path)
    page.goto(f"{url.split('cases/')[0]}figures/")
    judges = page.get_by_role("region", name="Judges against people")
    judges.get_by_text("where seed-protocol and the people differ").click()  # the list shown
    judges.get_by_role("link", name="Q-017 · C-017-2").wait_for()
    assert serious_violations(page) == []


def test_an_export_jobs_status_and_page_meet_no_serious_violation(page):
    log_in(page, "lead")
    page.goto("/p/demo/audit/")
    page.locator("input[name=run][value=q017-r2]").check()
    page.get_by_role("button", name="Export package").click()
    page.locator("#package-id").wait_for(timeout=30_000)
    assert serious_violations(page) == []
    page.goto("/p/demo/jobs/")
    page.locator("tbody a").first.click()
    page.get_by_role("heading", name="Package ready").wait_for()
    assert serious_violations(page) == []


def test_axe_does_report_a_serious_violation(page):
    """The check above could pass by checking nothing: an unlabelled field must be caught."""
    page.goto("/login/")
    login = page.locator("form[action='/login/']")  # the header's language switch is a form too
    login.evaluate("form => form.append(document.createElement('select'))")
    assert any(line.startswith("select-name (critical)") for line in serious_violations(page))
