from __future__ import annotations

import gzip

import pytest
from django.urls import reverse

from replay.models import Run
from tests.conftest import FIXTURES, PASSWORD, bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def upload(client, name: str, data: bytes, **extra):
    return client.post(
        reverse("bundle_upload", args=["demo"]),
        {"bundle": _named(name, data), **extra},
        **({"HTTP_HX_REQUEST": "true"} if extra.pop("htmx", False) else {}),
    )


def _named(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def test_anonymous_visitors_are_sent_to_log_in(client, project):
    response = client.get(reverse("project_detail", args=["demo"]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_login_page_logs_a_member_in(client, reviewer):
    response = client.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(reverse("home")).status_code == 200


def test_home_lists_only_my_projects(client, reviewer, outsider):
    client.force_login(reviewer)
    response = client.get(reverse("home"))
    assert b"/p/demo/" in response.content
    assert b"/p/elsewhere/" not in response.content


def test_project_page_lists_runs_with_counts(
    client, reviewer, demo_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    with django_assert_max_num_queries(4):
        response = client.get(reverse("project_detail", args=["demo"]))
    assert response.status_code == 200
    runs = {run.run_id: run for run in response.context["runs"]}
    assert set(runs) == {
        "p7-answer-a", "p7-answer-b", "p7-answer-c", "policy-r1", "pro-plan-r1",
        "q017-r1", "q017-r2", "q017-r3", "resi-r1",
    }  # fmt: skip
    assert (runs["q017-r1"].response_count, runs["q017-r1"].reviewed_count) == (1, 1)
    assert (runs["q017-r1"].claim_count, runs["q017-r3"].reviewed_count) == (4, 0)
    assert (runs["pro-plan-r1"].response_count, runs["pro-plan-r1"].reviewed_count) == (3, 0)


def test_project_page_query_count_does_not_grow_with_runs(
    client, reviewer, django_assert_max_num_queries
):
    client.force_login(reviewer)
    for i in range(12):
        import_bytes(bundle_bytes(*synthetic_bundle(run_id=f"r{i}", cases=3)))
    with django_assert_max_num_queries(4):
        response = client.get(reverse("project_detail", args=["demo"]))
    assert len(response.context["runs"]) == 12


def test_a_lead_sees_the_import_link_and_a_reviewer_does_not(client, reviewer, lead, demo_runs):
    client.force_login(lead)
    assert reverse("bundle_upload", args=["demo"]).encode() in client.get("/p/demo/").content
    client.force_login(reviewer)
    assert reverse("bundle_upload", args=["demo"]).encode() not in client.get("/p/demo/").content


def test_a_reviewer_may_not_import(client, reviewer):
    client.force_login(reviewer)
    response = client.post(reverse("bundle_upload", args=["demo"]), {})
    assert response.status_code == 403
    assert Run.objects.count() == 0


def test_a_lead_imports_a_bundle_by_plain_form_post(client, lead):
    client.force_login(lead)
    data = (FIXTURES / "q017-r1.jsonl").read_bytes()
    response = client.post(
        reverse("bundle_upload", args=["demo"]), {"bundle": _named("q017-r1.jsonl", data)}
    )
    assert response.status_code == 302
    assert response["Location"] == "/p/demo/runs/q017-r1/"
    run = Run.objects.get(run_id="q017-r1")
    assert run.imported_by == lead
    assert run.source_name == "q017-r1.jsonl"


def test_a_lead_imports_a_gzipped_bundle_through_htmx(client, lead):
    client.force_login(lead)
    data = gzip.compress((FIXTURES / "q017-r2.jsonl").read_bytes())
    response = client.post(
        reverse("bundle_upload", args=["demo"]),
        {"bundle": _named("q017-r2.jsonl.gz", data)},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/p/demo/runs/q017-r2/"
    assert Run.objects.filter(run_id="q017-r2").exists()


def test_a_refused_upload_lists_every_problem_and_stores_nothing(client, lead):
    client.force_login(lead)
    data = bundle_bytes(*synthetic_bundle(cases=1)) + b'{"kind": "case"}\nnot json\n'
    response = client.post(
        reverse("bundle_upload", args=["demo"]), {"bundle": _named("bad.jsonl", data)}
    )
    assert response.status_code == 400
    problems = response.context["problems"]
    assert any("/case_id: is required" in p for p in problems)
    assert any("not valid JSON" in p for p in problems)
    assert b"Refused: nothing was stored" in response.content
    assert Run.objects.count() == 0


def test_a_refused_htmx_upload_renders_only_the_result_partial(client, lead):
    client.force_login(lead)
    response = client.post(
        reverse("bundle_upload", args=["demo"]),
        {"bundle": _named("bad.jsonl", b"\xff\xfe\n")},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400
    content = response.content.decode()
    assert content.lstrip().startswith('<section id="result"')
    assert "not valid UTF-8" in content
    assert "<html" not in content


def test_a_dry_run_upload_reports_and_stores_nothing(client, lead):
    client.force_login(lead)
    data = (FIXTURES / "p7-answer-a.jsonl").read_bytes()
    response = client.post(
        reverse("bundle_upload", args=["demo"]),
        {"bundle": _named("a.jsonl", data), "dry_run": "on"},
    )
    assert response.status_code == 200
    assert b"Dry run passed: p7-answer-a" in response.content
    assert Run.objects.count() == 0


def test_an_oversized_upload_is_refused_before_reading(client, lead, settings):
    settings.BUNDLE_UPLOAD_MAX_BYTES = 10
    client.force_login(lead)
    response = client.post(
        reverse("bundle_upload", args=["demo"]), {"bundle": _named("big.jsonl", b"x" * 11)}
    )
    assert response.status_code == 400
    assert b"uploads are limited to 10 bytes" in response.content


PROJECT_URLS = {
    "p/<slug:slug>/": "/p/demo/",
    "p/<slug:slug>/import/": "/p/demo/import/",
    "p/<slug:slug>/queue/": "/p/demo/queue/?run=q017-r1&case=Q-017",
    "p/<slug:slug>/work/": "/p/demo/work/",
    "p/<slug:slug>/members/": "/p/demo/members/",
    "p/<slug:slug>/settings/": "/p/demo/settings/",
    "p/<slug:slug>/compare/": "/p/demo/compare/?a=q017-r1&b=q017-r2",
    "p/<slug:slug>/drift/": "/p/demo/drift/",
    "p/<slug:slug>/audit/": "/p/demo/audit/?download=1",
    "p/<slug:slug>/runs/<str:run_id>/": "/p/demo/runs/q017-r1/",
    "p/<slug:slug>/runs/<str:run_id>/assign/": "/p/demo/runs/q017-r1/assign/",
    "p/<slug:slug>/runs/<str:run_id>/assign/deal/": "/p/demo/runs/q017-r1/assign/deal/",
    "p/<slug:slug>/runs/<str:run_id>/unblind/": "/p/demo/runs/q017-r1/unblind/",
    "p/<slug:slug>/runs/<str:run_id>/disagreements/": "/p/demo/runs/q017-r1/disagreements/",
    "p/<slug:slug>/runs/<str:run_id>/figures/": "/p/demo/runs/q017-r1/figures/",
    "p/<slug:slug>/runs/<str:run_id>/figures.csv": "/p/demo/runs/q017-r1/figures.csv",
    "p/<slug:slug>/runs/<str:run_id>/figures.json": "/p/demo/runs/q017-r1/figures.json",
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/": "/p/demo/runs/q017-r1/cases/Q-017/",
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/claims/": (
        "/p/demo/runs/q017-r1/cases/Q-017/claims/"
    ),
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/claims/suggest/": (
        "/p/demo/runs/q017-r1/cases/Q-017/claims/suggest/"
    ),
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/claims/<str:key>/card/": (
        "/p/demo/runs/q017-r1/cases/Q-017/claims/C-017-1/card/"
    ),
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/claims/<str:key>/revise/": (
        "/p/demo/runs/q017-r1/cases/Q-017/claims/C-017-1/revise/"
    ),
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/claims/<str:key>/attach/": (
        "/p/demo/runs/q017-r1/cases/Q-017/claims/C-017-1/attach/"
    ),
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/claims/<str:key>/verdict/": (
        "/p/demo/runs/q017-r1/cases/Q-017/claims/C-017-1/verdict/"
    ),
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/complete/": (
        "/p/demo/runs/q017-r1/cases/Q-017/complete/"
    ),
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/submit/": (
        "/p/demo/runs/q017-r1/cases/Q-017/submit/"
    ),
    "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/unblind/": (
        "/p/demo/runs/q017-r1/cases/Q-017/unblind/"
    ),
}


@pytest.mark.parametrize("url", PROJECT_URLS.values())
def test_an_outsider_gets_404_on_every_page_of_another_project(client, outsider, demo_runs, url):
    client.force_login(outsider)
    assert client.get(url).status_code in {404, 405}
    assert client.post(url).status_code in {404, 405}
    assert client.get(url, HTTP_HX_REQUEST="true").status_code in {404, 405}


def test_every_url_pattern_is_covered_by_the_outsider_test():
    from django.urls import URLResolver, get_resolver

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern)

    project_patterns = {p for p in walk(get_resolver().url_patterns) if p.startswith("p/")}
    assert project_patterns == set(PROJECT_URLS)


def test_pages_send_a_strict_content_security_policy(client, reviewer):
    client.force_login(reviewer)
    policy = client.get(reverse("home"))["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "object-src 'none'" in policy


SAMPLES = FIXTURES.parent / "tests" / "ingest" / "samples"


def test_the_upload_page_offers_the_formats_it_converts(
    client, lead, django_assert_max_num_queries
):
    client.force_login(lead)
    with django_assert_max_num_queries(6):
        response = client.get(reverse("bundle_upload", args=["demo"]))
    assert b'<option value="ragas">' in response.content
    assert b'<option value="bundle" selected>' in response.content


def test_a_lead_uploads_a_ragas_export_converted_then_imported(client, lead):
    client.force_login(lead)
    data = (SAMPLES / "ragas-result.jsonl").read_bytes()
    response = upload(client, "eval-nov.jsonl", data, source_format="ragas")
    assert response.status_code == 302
    assert response["Location"] == "/p/demo/runs/eval-nov/"
    run = Run.objects.get(run_id="eval-nov")
    assert run.responses.count() == 3


def test_a_converted_upload_may_name_its_run(client, lead):
    client.force_login(lead)
    data = (SAMPLES / "alce-asqa.json").read_bytes()
    response = upload(
        client, "x.json", data, source_format="alce", run_id="alce-asqa-1", htmx=True
    )
    assert response["HX-Redirect"] == "/p/demo/runs/alce-asqa-1/"


def test_a_refused_conversion_names_the_files_own_records_and_stores_nothing(client, lead):
    client.force_login(lead)
    data = b'{"query": "q", "answer": "a", "contexts": [{"text": ""}]}\n'
    response = upload(client, "s.jsonl", data, source_format="jsonl-simple", htmx=True)
    assert response.status_code == 400
    assert response.context["problems"] == [
        "line 1: /contexts/0: a context needs a non-empty text"
    ]
    assert Run.objects.count() == 0
