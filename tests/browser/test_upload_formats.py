"""A lead imports another tool's file from the upload page: chosen format, converted, imported."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ROOT, log_in

pytestmark = pytest.mark.browser

SAMPLES = ROOT / "tests" / "ingest" / "samples"


def test_a_lead_chooses_ragas_from_the_keyboard_imports_a_sample_and_reaches_the_run(page):
    run_id = f"ragas-{uuid.uuid4().hex[:6]}"
    log_in(page, "lead")
    page.goto("/p/demo/import/")
    choice = page.get_by_label("File format")
    expect(choice).to_have_value("bundle")
    for _ in range(30):  # reached with Tab alone, from the top of the page
        page.keyboard.press("Tab")
        if choice.evaluate("el => el === document.activeElement"):
            break
    expect(choice).to_be_focused()
    page.keyboard.press("ArrowDown")  # the next format: Ragas
    expect(choice).to_have_value("ragas")

    page.get_by_label("Run id").fill(run_id)
    page.get_by_label("Collection snapshot", exact=False).fill(f"kb-{run_id}")
    page.get_by_label("File", exact=True).set_input_files(str(SAMPLES / "ragas-result.jsonl"))
    page.get_by_role("button", name="Import").click()

    # The import job's state comes into the page in place, then its run is a link away.
    result = page.locator("#result")
    expect(result).to_contain_text(f"Imported run {run_id}", timeout=20_000)
    expect(result).to_contain_text("3 responses")
    result.get_by_role("link", name=run_id).click()
    page.wait_for_url(f"**/p/demo/runs/{run_id}/")
    expect(page.get_by_role("link", name=re.compile(r"^q-"))).to_have_count(3)
    # The snapshot typed on the upload page is the run's, not the format's default.
    expect(page.locator("dd.mono", has_text=f"kb-{run_id}")).to_have_count(1)
    assert page.console_problems == [] and page.failed_requests == []


JSONL_SIMPLE_WITH_TWO_PROBLEMS = (
    '{"query": "q1", "answer": "a", "contexts": [{"text": "t"}]}\n'
    '{"query": "q2", "answer": "a", "contexts": [{"text": ""}]}\n'
    "{oops\n"
)


def test_a_malformed_file_of_a_chosen_format_is_refused_in_place_line_by_line(
    server_page, server, tmp_path
):
    page = server_page
    bad = tmp_path / "simple-bad.jsonl"
    bad.write_text(JSONL_SIMPLE_WITH_TWO_PROBLEMS, encoding="utf-8")
    run_id = f"simple-{uuid.uuid4().hex[:6]}"
    log_in(page, "lead")
    page.goto("/p/demo/import/")
    page.get_by_label("File format").select_option(
        label="Minimal JSONL (query, answer, contexts), converted first"
    )
    page.get_by_label("Run id").fill(run_id)
    page.get_by_label("File", exact=True).set_input_files(str(bad))
    page.get_by_role("button", name="Import").click()

    result = page.locator("#result")
    expect(result).to_contain_text("Refused: nothing was stored", timeout=20_000)
    expect(result.get_by_role("listitem")).to_have_text(
        [
            "line 2: /contexts/0: a context needs a non-empty text",
            re.compile(r"^line 3: not valid JSON"),
        ]
    )
    # The page is intact: the same page, every choice as it was, ready to send again.
    assert page.url == f"{server.url}/p/demo/import/"
    expect(page.get_by_role("heading", name="Import a bundle", level=1)).to_be_visible()
    expect(page.get_by_label("File format")).to_have_value("jsonl-simple")
    expect(page.get_by_label("Run id")).to_have_value(run_id)
    expect(page.get_by_role("button", name="Import")).to_be_enabled()
    # The upload was accepted as a job; the job refused the file.
    assert page.failed_requests == []
    assert page.console_problems == []
    # Nothing was stored under that run id.
    assert page.request.get(f"/p/demo/runs/{run_id}/").status == 404
