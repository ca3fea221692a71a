"""Figures and comparisons of runs nobody here judged offer the imported verdicts in one click."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import fresh_run, log_in

pytestmark = pytest.mark.browser


def run_id_of(case_url: str) -> str:
    return case_url.split("/runs/")[1].split("/")[0]


def test_the_figures_of_a_run_nobody_judged_open_the_imported_verdicts_in_one_click(
    server_page, server, tmp_path
):
    page = server_page
    run_id = run_id_of(fresh_run(server, tmp_path, "q017-r1.jsonl"))
    log_in(page, "lead")
    page.goto(f"/p/demo/runs/{run_id}/figures/")
    expect(
        page.get_by_role("heading", name="No reviewer of this project has judged")
    ).to_be_visible()
    # The agreement panel loads after the page: let it arrive (and be judged) before leaving.
    expect(page.locator("#agreement a[hx-get]")).to_have_count(0)
    page.get_by_role("link", name="Show the figures of seed-protocol").click()
    page.wait_for_url(re.compile(r"source=annotator%3Aseed-protocol"))
    expect(page.locator("#source")).to_have_value("annotator:seed-protocol")
    expect(page.get_by_role("heading", name="Verdicts (annotator: seed-protocol)")).to_be_visible()
    expect(page.get_by_text("No reviewer of this project has judged")).to_have_count(0)
    assert page.console_problems == [] and page.failed_requests == []


def test_a_comparison_nobody_judged_opens_the_imported_verdicts_in_one_click(
    server_page, server, tmp_path
):
    page = server_page
    before = run_id_of(fresh_run(server, tmp_path, "q017-r1.jsonl"))
    after = run_id_of(fresh_run(server, tmp_path, "q017-r2.jsonl"))
    log_in(page, "lead")
    page.goto(f"/p/demo/compare/?a={before}&b={after}&show=improvements")
    band = page.get_by_role("region", name="Summary")
    expect(band).to_contain_text("improved or regressed: not known until both runs are judged")
    expect(band).to_contain_text("1 with a fact nobody judged")
    page.get_by_role("link", name="Compare the verdicts of seed-protocol").click()
    page.wait_for_url(re.compile(r"source=annotator%3Aseed-protocol"))
    expect(page.locator("#show")).to_have_value("improvements")  # the other choices stay
    expect(band).to_contain_text("▲ 1 with an improved fact")
    expect(page.get_by_text("G2 unsupported → supported ▲ improved")).to_be_visible()
    assert page.console_problems == [] and page.failed_requests == []
