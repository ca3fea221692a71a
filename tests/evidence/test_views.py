from __future__ import annotations

import pytest
from django.urls import reverse

from replay.models import Run
from tests.conftest import PASSWORD, bundle_bytes, import_bytes
from tests.factories import synthetic_bundle
from tests.jobs.conftest import named


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


def test_an_oversized_upload_is_refused_before_reading(client, lead, settings):
    settings.BUNDLE_UPLOAD_MAX_BYTES = 10
    client.force_login(lead)
    response = client.post(
        reverse("bundle_upload", args=["demo"]), {"bundle": named("big.jsonl", b"x" * 11)}
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
    "p/<slug:slug>/compare/summary/": "/p/demo/compare/summary/?a=q017-r1&b=q017-r2",
    "p/<slug:slug>/drift/": "/p/demo/drift/",
    "p/<slug:slug>/audit/": "/p/demo/audit/",
    "p/<slug:slug>/audit/export/": "/p/demo/audit/export/",
    "p/<slug:slug>/jobs/": "/p/demo/jobs/",
    "p/<slug:slug>/jobs/<uuid:code>/": "/p/demo/jobs/0b5e6c1e-5f5e-4a8e-9d55-2f1a8f0c9b1d/",
    "p/<slug:slug>/jobs/<uuid:code>/package.zip": (
        "/p/demo/jobs/0b5e6c1e-5f5e-4a8e-9d55-2f1a8f0c9b1d/package.zip"
    ),
    "p/<slug:slug>/runs/<str:run_id>/": "/p/demo/runs/q017-r1/",
    "p/<slug:slug>/runs/<str:run_id>/assign/": "/p/demo/runs/q017-r1/assign/",
    "p/<slug:slug>/runs/<str:run_id>/assign/deal/": "/p/demo/runs/q017-r1/assign/deal/",
    "p/<slug:slug>/runs/<str:run_id>/unblind/": "/p/demo/runs/q017-r1/unblind/",
    "p/<slug:slug>/runs/<str:run_id>/disagreements/": "/p/demo/runs/q017-r1/disagreements/",
    "p/<slug:slug>/runs/<str:run_id>/figures/": "/p/demo/runs/q017-r1/figures/",
    "p/<slug:slug>/runs/<str:run_id>/figures/agreement/": (
        "/p/demo/runs/q017-r1/figures/agreement/"
    ),
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
