from __future__ import annotations

import html

from django.urls import reverse

from evidence.canonical import text_sha256
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def case_url(run_id: str, case_id: str) -> str:
    return reverse("case_detail", args=["demo", run_id, case_id])


def test_run_page_lists_its_cases_with_status(
    client, reviewer, demo_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    with django_assert_max_num_queries(5):
        response = client.get(reverse("run_detail", args=["demo", "pro-plan-r1"]))
    assert response.status_code == 200
    rows = response.context["responses"]
    assert [r.case.case_id for r in rows] == ["q1", "q2", "q3"]
    assert [r.retrieved_count for r in rows] == [3, 3, 3]
    assert b"How many users does the Pro plan include?" in response.content
    assert b"unreviewed" in response.content


def test_an_unknown_run_or_case_is_404(client, reviewer, demo_runs):
    client.force_login(reviewer)
    assert client.get(reverse("run_detail", args=["demo", "nope"])).status_code == 404
    assert client.get(case_url("q017-r1", "nope")).status_code == 404
    assert client.get(case_url("q017-r1", "P7-Q1")).status_code == 404


def test_case_page_shows_query_answer_markers_and_ranked_passages(client, reviewer, demo_runs):
    client.force_login(reviewer)
    response = client.get(case_url("q017-r1", "Q-017"))
    content = response.content.decode()
    assert "Can I return a final-sale item after 30 days" in content
    assert '<mark class="marker" title="D-01@returns-v4#p04">[D-01]</mark>' in content
    assert content.index('title="rank">#1<') < content.index('title="rank">#2<')
    assert "D-01@returns-v4#p04" in content
    assert (
        text_sha256(
            "Items bought directly from the example store can be returned within 30 calendar days "
            "of delivery. Final-sale items are excluded."
        )[:12]
        in content
    )
    assert "decomposition complete" in content
    assert "seed-protocol (imported)" in content


def test_case_page_marks_a_superseded_passage(client, reviewer, demo_runs):
    client.force_login(reviewer)
    content = client.get(case_url("policy-r1", "pol-1")).content.decode()
    assert "superseded by policy-7@v3#p12" in content
    assert content.count("badge cite") == 1


def test_case_page_query_count_does_not_grow_with_claims_or_passages(
    client, reviewer, django_assert_max_num_queries
):
    client.force_login(reviewer)
    import_bytes(bundle_bytes(*synthetic_bundle(run_id="small", cases=1, passages=2, claims=1)))
    import_bytes(
        bundle_bytes(
            *synthetic_bundle(
                run_id="large", cases=1, passages=20, claims=30, revisions=5, snapshot="other@1"
            )
        )
    )
    with django_assert_max_num_queries(11) as small:
        assert client.get(case_url("small", "case-0")).status_code == 200
    with django_assert_max_num_queries(11) as large:
        response = client.get(case_url("large", "case-0"))
    assert len(small.captured_queries) == len(large.captured_queries)
    assert len(response.context["page"].cards) == 30
    assert len(response.context["page"].retrieved) == 20


def test_untrusted_text_is_escaped_everywhere(client, reviewer):
    client.force_login(reviewer)
    lines = synthetic_bundle(run_id="xss", cases=1, passages=1, claims=1)
    payload = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    lines[1]["text"] = payload
    lines[1]["title"] = payload
    lines[1]["sha256"] = text_sha256(payload)
    lines[2]["query"] = payload
    lines[3]["text"] = payload + " The limit is 10 units [1]. "
    lines[3]["citations"] = []
    lines[3]["claims"][0]["spans"] = []
    lines[3]["claims"][0]["judgements"][0]["reason"] = payload
    import_bytes(bundle_bytes(*lines))
    content = client.get(case_url("xss", "case-0")).content.decode()
    assert "<script>alert" not in content
    assert "<img src=x" not in content
    assert html.escape(payload, quote=False).replace('"', "&quot;") in content
