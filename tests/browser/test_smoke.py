from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from evidence.canonical import text_sha256
from tests.browser.conftest import log_in
from tests.factories import synthetic_bundle

pytestmark = pytest.mark.browser


def test_a_reviewer_logs_in_and_reads_an_unreviewed_case_with_its_hints(page):
    log_in(page, "alice", fresh=True)
    page.get_by_role("link", name="Demo: returns, P7 and policies").click()
    page.get_by_role("link", name="Pro plan questions").click()
    expect(page.get_by_role("heading", name="Cases (3)")).to_be_visible()
    page.get_by_role("link", name="q2").click()
    expect(page.get_by_text("How many users does the Pro plan include?")).to_be_visible()
    expect(page.locator("#review-status")).to_contain_text("unreviewed")
    expect(page.locator(".passage")).to_have_count(3)
    expect(page.locator(".passage").first).to_contain_text("monthly price of 49 euros")
    hints = page.get_by_role("list", name="Pre-checks for this response (hints, not verdicts)")
    expect(hints).to_contain_text("relevant_not_retrieved: users@v1#c1")
    expect(hints).to_contain_text("number_not_in_evidence: 25")
    # A CSP violation (an inline script or style) shows up as a console error.
    assert page.console_problems == []


def test_a_lead_sees_every_problem_of_a_refused_upload_without_leaving_the_page(page, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "passage"}\n{oops\n', encoding="utf-8")
    log_in(page, "lead")
    page.goto("/p/demo/import/")
    page.get_by_label("File", exact=True).set_input_files(str(bad))
    page.get_by_role("button", name="Import").click()
    result = page.locator("#result")
    expect(result).to_contain_text("Refused: nothing was stored")
    expect(result).to_contain_text("line 1: /kind: the first line must be the run")
    expect(result).to_contain_text("line 2: not valid JSON")
    assert page.url.endswith("/p/demo/import/")  # swapped in place by htmx
    assert page.console_problems == []


def test_a_lead_watches_an_import_finish_and_comes_back_to_it(page, tmp_path):
    lines = synthetic_bundle(run_id="watched-r1", cases=2)
    for line in lines:  # cases of its own: the server's database is shared with other tests
        if "case_id" in line:
            line["case_id"] = f"watched-{line['case_id']}"
    bundle = tmp_path / "watched.jsonl"
    bundle.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    log_in(page, "lead")
    page.goto("/p/demo/import/")
    page.get_by_label("File", exact=True).set_input_files(str(bundle))
    page.get_by_role("button", name="Import").click()
    result = page.locator("#result")
    expect(result).to_contain_text("Imported run watched-r1", timeout=20_000)  # polled in place
    page.goto("/p/demo/jobs/")  # left, and back
    page.get_by_role("link", name=re.compile(r"\d{4}-\d\d-\d\d")).first.click()
    expect(page.locator("main")).to_contain_text("Imported run watched-r1")
    page.get_by_role("link", name="watched-r1").click()
    expect(page).to_have_url(re.compile(r"/p/demo/runs/watched-r1/$"))
    assert page.console_problems == []


def test_a_lead_exports_a_package_and_its_id_appears_without_a_reload(page):
    log_in(page, "lead")
    page.goto("/p/demo/audit/")
    page.locator("input[name=run][value=q017-r1]").check()  # copies q017-r1-… may be listed too
    page.get_by_role("button", name="Export package").click()
    package_id = page.locator("#package-id")
    expect(package_id).to_have_text(re.compile(r"^[0-9a-f]{64}$"), timeout=30_000)
    assert page.url.endswith("/p/demo/audit/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the package").click()
    assert download.value.suggested_filename.startswith("audit-demo-")
    assert page.console_problems == []


def test_a_passage_with_script_payloads_renders_inert(page, live, tmp_path):
    payload = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    lines = synthetic_bundle(run_id="xss-r1", cases=1, passages=1, claims=1, snapshot="xss@1")
    lines[1]["text"] = payload
    lines[1]["sha256"] = text_sha256(payload)
    lines[1]["title"] = payload
    lines[2]["query"] = payload
    lines[3]["text"] = payload + " The limit is 10 units [1]. "
    lines[3]["citations"], lines[3]["claims"][0]["spans"] = [], []
    lines[3]["claims"][0]["judgements"][0]["reason"] = payload
    bundle = tmp_path / "xss.jsonl"
    bundle.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    live.manage("import_bundle", str(bundle), "--project", "demo")
    log_in(page, "alice")
    page.goto("/p/demo/runs/xss-r1/cases/case-0/")
    expect(page.locator(".passage-text").first).to_have_text(payload)
    expect(page.locator(".query")).to_have_text(payload)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#answer img").count() == 0
