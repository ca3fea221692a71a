"""My work, the queue and its skip, Submit and next (cards.queue, cards.views.work)."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from cards.models import Claim, ResponseReview
from cards.queue import Status, my_cases, next_in_queue, status_of, work_page
from cards.services.assignments import assignment_set
from cards.services.claims import claim_create, claim_revise
from cards.services.reviews import response_mark_complete, response_submit
from evidence.canonical import text_sha256
from evidence.models import Membership
from replay.models import Response
from tests.cards.conftest import D01, FINAL_SALE, judge, response_for
from tests.conftest import bundle_bytes, import_bytes, import_fixture
from tests.factories import synthetic_bundle

HTMX = {"HTTP_HX_REQUEST": "true"}
WORK = "/p/demo/work/"
QUEUE = "/p/demo/queue/"


def membership(user) -> Membership:
    return Membership.objects.select_related("project", "user").get(
        user=user, project__slug="demo"
    )


def statuses(user, run_id: str | None = None) -> dict[tuple[str, str], str]:
    return {
        (item.run_id, item.case_id): item.status.value
        for item in my_cases(membership=membership(user), run_id=run_id)
    }


def finish(response: Response, user) -> None:
    """Judge every current claim of the response as `user` (split one first if it has none),
    then mark it complete."""
    if not Claim.objects.filter(response=response).exists():
        claim_create(response=response, author=user, text="A claim.", spans=[[0, 5]])
    for claim in Claim.objects.filter(response=response):
        if not claim.revisions.order_by("-seq").first().withdrawn:
            judge(claim, user, "supported", "Judged for my work.")
    response_mark_complete(response=response, author=user)


def case_path(run_id: str, case_id: str) -> str:
    return reverse("case_detail", args=["demo", run_id, case_id])


def flashes(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


@pytest.fixture
def three_runs(project) -> None:
    """q017-r1 (one case, claims C-017-1..4), pro-plan-r1 (q1, q2, q3), q017-r2, in that order."""
    for name in ("q017-r1.jsonl", "pro-plan.jsonl", "q017-r2.jsonl"):
        import_fixture(name)


# --- the status of a case, for me ------------------------------------------------------------


@pytest.mark.parametrize(
    ("reviewed", "judged_all", "started", "drifted_since", "status"),
    [
        (False, False, False, False, Status.TODO),
        (True, False, False, False, Status.TODO),  # someone else's complete decomposition
        (False, True, True, False, Status.IN_PROGRESS),  # judged all, not marked complete
        (True, False, True, False, Status.IN_PROGRESS),  # a claim still lacks my verdict
        (True, True, True, False, Status.DONE),
        (True, True, False, False, Status.DONE),  # nothing to do: an empty abstention
        (True, True, True, True, Status.REREVIEW),
        (False, True, True, True, Status.IN_PROGRESS),  # re-review only ever follows done
    ],
)
def test_the_status_rule(reviewed, judged_all, started, drifted_since, status):
    facts = {"reviewed": reviewed, "judged_all": judged_all, "started": started}
    assert status_of(**facts, drifted_since=drifted_since) == status


def test_my_cases_are_mine_first_then_the_open_ones_by_run_and_position(
    lead, reviewer, second_reviewer, three_runs
):
    assignment_set(
        responses=[response_for("q017-r2"), response_for("pro-plan-r1", "q3")],
        reviewer=reviewer,
        lead=lead,
    )
    assignment_set(
        responses=[response_for("pro-plan-r1", "q1")], reviewer=second_reviewer, lead=lead
    )
    items = my_cases(membership=membership(reviewer))
    assert [(i.run_id, i.case_id, i.assigned) for i in items] == [
        ("pro-plan-r1", "q3", True),
        ("q017-r2", "Q-017", True),
        ("q017-r1", "Q-017", False),
        ("pro-plan-r1", "q2", False),  # q1 is bob's
    ]
    assert all(i.status == Status.TODO for i in items)


def test_a_case_shared_with_another_reviewer_is_mine_too(
    lead, reviewer, second_reviewer, three_runs
):
    q1 = response_for("pro-plan-r1", "q1")
    assignment_set(responses=[q1], reviewer=second_reviewer, lead=lead)
    assignment_set(responses=[q1], reviewer=reviewer, lead=lead)
    assert ("pro-plan-r1", "q1") in statuses(reviewer)


def test_what_others_did_leaves_a_case_to_do_for_me(reviewer, second_reviewer, replay_response):
    claim = claim_create(
        response=replay_response, author=second_reviewer, text="A.", spans=[FINAL_SALE]
    )
    judge(claim, second_reviewer)
    response_mark_complete(response=replay_response, author=second_reviewer)
    assert statuses(reviewer) == {("q017-r3", "Q-017"): "todo"}
    assert statuses(second_reviewer) == {("q017-r3", "Q-017"): "done"}


def test_a_case_is_in_progress_from_my_first_step_until_done(reviewer, replay_response):
    claim = claim_create(response=replay_response, author=reviewer, text="A.", spans=[FINAL_SALE])
    assert statuses(reviewer) == {("q017-r3", "Q-017"): "in-progress"}
    judge(claim, reviewer)
    assert statuses(reviewer) == {("q017-r3", "Q-017"): "in-progress"}  # not marked complete
    response_mark_complete(response=replay_response, author=reviewer)
    assert statuses(reviewer) == {("q017-r3", "Q-017"): "done"}


def test_a_verdict_or_a_reopening_alone_is_a_start(reviewer, three_runs):
    judge(Claim.objects.get(key="C-017-1"), reviewer)
    response_mark_complete(
        response=response_for("pro-plan-r1", "q1"), author=reviewer, complete=False
    )
    mine = statuses(reviewer)
    assert mine[("q017-r1", "Q-017")] == "in-progress"
    assert mine[("pro-plan-r1", "q1")] == "in-progress"
    assert mine[("pro-plan-r1", "q2")] == "todo"


def test_a_claim_added_after_i_finished_takes_the_case_back_to_in_progress(
    reviewer, second_reviewer, replay_response
):
    claim = claim_create(response=replay_response, author=reviewer, text="A.", spans=[FINAL_SALE])
    judge(claim, reviewer)
    response_mark_complete(response=replay_response, author=reviewer)
    claim_create(response=replay_response, author=second_reviewer, text="B.", spans=[[0, 5]])
    assert statuses(reviewer) == {("q017-r3", "Q-017"): "in-progress"}


def test_a_withdrawn_claim_needs_no_verdict(reviewer, replay_response):
    kept = claim_create(response=replay_response, author=reviewer, text="A.", spans=[FINAL_SALE])
    dropped = claim_create(response=replay_response, author=reviewer, text="B.", spans=[[0, 5]])
    claim_revise(claim=dropped, author=reviewer, seen_claim_seq=1, withdrawn=True, reason="No.")
    judge(kept, reviewer)
    response_mark_complete(response=replay_response, author=reviewer)
    assert statuses(reviewer) == {("q017-r3", "Q-017"): "done"}


def test_an_answer_abstained_without_text_is_done_with_nothing_to_do(reviewer, project):
    lines = [
        {
            "kind": "run", "schema": "evidence-bundle/1", "run_id": "silent",
            "created_at": "2026-10-01T12:00:00Z", "collection_snapshot": "s", "system": {},
        },
        {"kind": "passage", "ref": "D@v#1", "doc_id": "D", "version": "v", "chunk_id": "1",
         "text": "Returns within 14 days."},
        {"kind": "case", "case_id": "S-1", "query": "How long?"},
        {"kind": "response", "case_id": "S-1", "text": "", "abstained": True,
         "retrieved": [{"ref": "D@v#1", "rank": 1}]},
    ]  # fmt: skip
    import_bytes(bundle_bytes(*lines))
    assert statuses(reviewer) == {("silent", "S-1"): "done"}


# --- needs re-review: a cited passage drifted after I finished --------------------------------


def test_a_finished_case_needs_re_review_when_a_cited_passage_drifts_after_my_verdicts(
    reviewer, project
):
    import_fixture("q017-r1.jsonl")
    finish(response_for("q017-r1"), reviewer)
    assert statuses(reviewer) == {("q017-r1", "Q-017"): "done"}
    import_fixture("q017-r3.jsonl")  # a newer snapshot: D-01 has another text there
    assert statuses(reviewer) == {("q017-r1", "Q-017"): "rereview", ("q017-r3", "Q-017"): "todo"}


def test_drift_already_there_when_i_judged_asks_for_nothing(reviewer, project):
    import_fixture("q017-r1.jsonl")
    import_fixture("q017-r3.jsonl")
    finish(response_for("q017-r1"), reviewer)
    assert statuses(reviewer, "q017-r1") == {("q017-r1", "Q-017"): "done"}


def test_judging_every_drifted_claim_again_makes_the_case_done_again(reviewer, project):
    import_fixture("q017-r1.jsonl")
    finish(response_for("q017-r1"), reviewer)
    import_fixture("q017-r3.jsonl")
    # C-017-1 and C-017-2 cite D-01; one new verdict is not enough.
    judge(Claim.objects.get(key="C-017-1"), reviewer, "partial", "Read against the new text.")
    assert statuses(reviewer, "q017-r1") == {("q017-r1", "Q-017"): "rereview"}
    judge(Claim.objects.get(key="C-017-2"), reviewer, "partial", "Read against the new text.")
    assert statuses(reviewer, "q017-r1") == {("q017-r1", "Q-017"): "done"}


def test_another_text_in_an_older_snapshot_is_not_re_review(reviewer, project):
    import_fixture("q017-r1.jsonl")
    import_fixture("q017-r3.jsonl")
    response = response_for("q017-r3")
    claim = claim_create(response=response, author=reviewer, text="A.", spans=[FINAL_SALE])
    assert claim.revisions.get().citations == [D01]  # the marker after the span
    judge(claim, reviewer)
    response_mark_complete(response=response, author=reviewer)
    assert statuses(reviewer, "q017-r3") == {("q017-r3", "Q-017"): "done"}


def test_a_case_that_needs_re_review_is_in_my_queue(reviewer, project):
    import_fixture("q017-r1.jsonl")
    finish(response_for("q017-r1"), reviewer)
    assert next_in_queue(membership=membership(reviewer)) is None
    import_fixture("q017-r3.jsonl")
    waiting = next_in_queue(membership=membership(reviewer))
    assert (waiting.run_id, waiting.status) == ("q017-r1", Status.REREVIEW)


# --- the queue: order, skip, wrap ------------------------------------------------------------


def queue_after(user, run_id: str, case_id: str | None = None) -> tuple[str, str] | None:
    item = next_in_queue(membership=membership(user), after=response_for(run_id, case_id))
    return None if item is None else (item.run_id, item.case_id)


def test_the_queue_starts_with_my_first_case_not_done(reviewer, three_runs):
    finish(response_for("q017-r1"), reviewer)
    item = next_in_queue(membership=membership(reviewer))
    assert (item.run_id, item.case_id) == ("pro-plan-r1", "q1")


def test_a_skip_opens_the_case_after_the_current_one_and_wraps_around(reviewer, three_runs):
    finish(response_for("pro-plan-r1", "q2"), reviewer)
    assert queue_after(reviewer, "q017-r1") == ("pro-plan-r1", "q1")
    assert queue_after(reviewer, "pro-plan-r1", "q1") == ("pro-plan-r1", "q3")  # q2 is done
    assert queue_after(reviewer, "pro-plan-r1", "q3") == ("q017-r2", "Q-017")
    assert queue_after(reviewer, "q017-r2") == ("q017-r1", "Q-017")  # wrapped
    # From a done case, the queue goes on from its place.
    assert queue_after(reviewer, "pro-plan-r1", "q2") == ("pro-plan-r1", "q3")


def test_a_skip_from_the_only_case_left_stays_on_it(reviewer, three_runs):
    for run_id, case_id in [("q017-r1", None), ("pro-plan-r1", "q1"), ("pro-plan-r1", "q2"),
                            ("q017-r2", None)]:  # fmt: skip
        finish(response_for(run_id, case_id), reviewer)
    assert queue_after(reviewer, "pro-plan-r1", "q3") == ("pro-plan-r1", "q3")
    finish(response_for("pro-plan-r1", "q3"), reviewer)
    assert queue_after(reviewer, "pro-plan-r1", "q3") is None


def test_a_skip_goes_through_my_assigned_cases_before_the_open_ones(lead, reviewer, three_runs):
    assignment_set(
        responses=[response_for("pro-plan-r1", "q2"), response_for("q017-r2")],
        reviewer=reviewer,
        lead=lead,
    )
    assert queue_after(reviewer, "pro-plan-r1", "q2") == ("q017-r2", "Q-017")
    assert queue_after(reviewer, "q017-r2") == ("q017-r1", "Q-017")
    assert queue_after(reviewer, "pro-plan-r1", "q3") == ("pro-plan-r1", "q2")  # wrapped


def test_a_skip_from_someone_elses_case_goes_on_from_its_place(
    lead, reviewer, second_reviewer, three_runs
):
    assignment_set(
        responses=[response_for("pro-plan-r1", "q2")], reviewer=second_reviewer, lead=lead
    )
    assert queue_after(reviewer, "pro-plan-r1", "q2") == ("pro-plan-r1", "q3")


# --- progress, filters and pages -------------------------------------------------------------


def test_progress_counts_my_done_cases_over_the_run_filter(reviewer, three_runs):
    finish(response_for("pro-plan-r1", "q1"), reviewer)
    judge(Claim.objects.get(key="C-017-1"), reviewer)
    work = work_page(membership=membership(reviewer), run_id=None, status=None, page=None)
    assert (work.done, work.total) == (1, 5)
    assert work.counts == {"todo": 3, "in-progress": 1, "done": 1, "rereview": 0}
    work = work_page(membership=membership(reviewer), run_id="pro-plan-r1", status=None, page=None)
    assert (work.done, work.total) == (1, 3)
    assert [row.item.case_id for row in work.rows] == ["q1", "q2", "q3"]


def test_the_status_filter_shows_only_that_status_and_keeps_the_progress(reviewer, three_runs):
    finish(response_for("pro-plan-r1", "q1"), reviewer)
    work = work_page(membership=membership(reviewer), run_id=None, status="todo", page=None)
    assert [(r.item.run_id, r.item.case_id) for r in work.rows] == [
        ("q017-r1", "Q-017"),
        ("pro-plan-r1", "q2"),
        ("pro-plan-r1", "q3"),
        ("q017-r2", "Q-017"),
    ]
    assert (work.done, work.total, work.status) == (1, 5, "todo")


def test_an_unknown_filter_value_filters_nothing(reviewer, three_runs):
    work = work_page(membership=membership(reviewer), run_id="nope", status="bogus", page="x")
    assert (work.run_id, work.status, work.total, len(work.rows)) == (None, None, 5, 5)


def test_my_work_is_paginated(reviewer, project):
    import_bytes(bundle_bytes(*synthetic_bundle(cases=60, claims=1)))
    first = work_page(membership=membership(reviewer), run_id=None, status=None, page="1")
    second = work_page(membership=membership(reviewer), run_id=None, status=None, page="2")
    assert (len(first.rows), len(second.rows), second.total) == (50, 10, 60)
    assert second.rows[-1].item.case_id == "case-59"


# --- the My work page ------------------------------------------------------------------------


def test_my_work_shows_progress_status_and_whose_each_case_is(client, lead, reviewer, three_runs):
    assignment_set(responses=[response_for("q017-r2")], reviewer=reviewer, lead=lead)
    finish(response_for("q017-r2"), reviewer)
    client.force_login(reviewer)
    response = client.get(WORK)
    assert response.status_code == 200
    html = response.content.decode()
    assert "1 of 5 done" in html
    assert f'href="{case_path("q017-r2", "Q-017")}"' in html
    assert "assigned to you" in html
    assert '<span class="badge ok">done</span>' in html
    assert f'href="{QUEUE}" data-key="n"' in html


def test_my_work_filters_by_run_and_status_through_the_query_string(client, reviewer, three_runs):
    finish(response_for("pro-plan-r1", "q1"), reviewer)
    client.force_login(reviewer)
    response = client.get(WORK, {"run": "pro-plan-r1", "status": "todo"})
    assert [r.item.case_id for r in response.context["work"].rows] == ["q2", "q3"]
    html = response.content.decode()
    assert "1 of 3 done" in html
    assert '<option value="pro-plan-r1" selected>' in html
    assert '<option value="todo" selected>' in html


def test_my_work_pages_keep_the_filters(client, reviewer, project):
    import_bytes(bundle_bytes(*synthetic_bundle(cases=60, claims=1)))
    client.force_login(reviewer)
    html = client.get(WORK, {"run": "synthetic-r1", "status": "todo"}).content.decode()
    assert 'href="?run=synthetic-r1&amp;status=todo&amp;page=2"' in html


def test_the_project_page_links_my_work(client, reviewer, project):
    client.force_login(reviewer)
    assert f'href="{WORK}"' in client.get("/p/demo/").content.decode()


def test_an_outsider_gets_404_on_my_work_the_queue_and_submit(client, outsider, replay_response):
    client.force_login(outsider)
    submit = reverse("case_submit", args=["demo", "q017-r3", "Q-017"])
    assert client.get(WORK).status_code == 404
    assert client.get(QUEUE).status_code == 404
    assert client.post(submit).status_code == 404
    assert client.post(submit, **HTMX).status_code == 404
    assert not ResponseReview.objects.exists()


def drifted_copy(run_id: str, cases: int, snapshot: str) -> list[dict]:
    """A later run over the same cases whose every passage has another text."""
    lines = synthetic_bundle(run_id=run_id, cases=cases, claims=1, snapshot=snapshot)
    for line in lines:
        if line["kind"] == "passage":
            line["text"] += " Changed since."
            line["sha256"] = text_sha256(line["text"])
    return lines


def add_finished_run(reviewer, run_id: str, cases: int) -> None:
    """A run whose cases I finished, then a later snapshot where their passages drifted."""
    import_bytes(bundle_bytes(*synthetic_bundle(run_id=run_id, cases=cases, claims=1,
                                                snapshot=f"{run_id}@1")))  # fmt: skip
    for response in Response.objects.filter(run__run_id=run_id):
        finish(response, reviewer)
    import_bytes(bundle_bytes(*drifted_copy(f"{run_id}-later", cases, f"{run_id}@2")))


@pytest.fixture
def small_pages(monkeypatch):
    """Pages of 5 cases: 13 cases then span three pages, as 130 would span three of 50."""
    monkeypatch.setattr("cards.queue.CASES_PER_PAGE", 5)


def queries_at_two_sizes(reviewer, assert_max, most: int, request, status: int):
    """The responses of `request(run_id)` after 1 and then 13 finished cases (three pages of
    5): each within `most` queries, and the same number of queries both times."""
    counts, responses = [], []
    for run_id, cases in [("small", 1), ("large", 12)]:
        add_finished_run(reviewer, run_id, cases)
        with assert_max(most) as queries:
            response = request(run_id)
        assert response.status_code == status
        counts.append(len(queries.captured_queries))
        responses.append(response)
    assert counts[0] == counts[1], counts
    return responses


def test_my_work_query_count_does_not_grow_with_cases(
    client, reviewer, project, django_assert_max_num_queries, small_pages
):
    client.force_login(reviewer)
    _, response = queries_at_two_sizes(
        reviewer, django_assert_max_num_queries, 8, lambda run_id: client.get(WORK), 200
    )
    assert response.context["work"].counts["rereview"] == 13


# --- the queue view --------------------------------------------------------------------------


def test_next_in_my_queue_from_a_case_skips_it_without_marking_anything(
    client, reviewer, three_runs
):
    client.force_login(reviewer)
    response = client.get(QUEUE, {"run": "q017-r1", "case": "Q-017"})
    assert response.status_code == 302
    assert response["Location"] == case_path("pro-plan-r1", "q1")
    assert not ResponseReview.objects.filter(author=reviewer).exists()
    response = client.get(QUEUE, {"run": "q017-r2", "case": "Q-017"}, **HTMX)
    assert response["Location"] == case_path("q017-r1", "Q-017")  # wrapped


def test_next_from_an_unfinished_assigned_case_never_reloads_it(
    client, lead, reviewer, three_runs
):
    assignment_set(
        responses=[response_for("q017-r1"), response_for("q017-r2")], reviewer=reviewer, lead=lead
    )
    client.force_login(reviewer)
    response = client.get(QUEUE, {"run": "q017-r1", "case": "Q-017"})
    assert response["Location"] == case_path("q017-r2", "Q-017")
    response = client.get(QUEUE, {"run": "q017-r2", "case": "Q-017"})
    assert response["Location"] == case_path("pro-plan-r1", "q1")  # then the open cases


def test_the_case_page_link_and_its_n_key_carry_the_current_case(client, reviewer, three_runs):
    client.force_login(reviewer)
    html = client.get(case_path("q017-r1", "Q-017")).content.decode()
    assert f'href="{QUEUE}?run=q017-r1&amp;case=Q-017" data-key="n"' in html


def test_an_unknown_current_case_starts_the_queue_from_the_beginning(client, reviewer, three_runs):
    client.force_login(reviewer)
    response = client.get(QUEUE, {"run": "q017-r1", "case": "nope"})
    assert response["Location"] == case_path("q017-r1", "Q-017")


def test_skipping_the_last_case_left_stays_on_it_and_says_so(client, reviewer, replay_response):
    client.force_login(reviewer)
    response = client.get(QUEUE, {"run": "q017-r3", "case": "Q-017"})
    assert response["Location"] == case_path("q017-r3", "Q-017")
    assert flashes(response) == ["No other case waits in your queue: this is the last one."]


def test_the_queue_view_query_count_does_not_grow_with_cases(
    client, reviewer, project, django_assert_max_num_queries, small_pages
):
    client.force_login(reviewer)
    queries_at_two_sizes(
        reviewer, django_assert_max_num_queries, 7,
        lambda run_id: client.get(QUEUE, {"run": f"{run_id}-later", "case": "case-0"}), 302,
    )  # fmt: skip


# --- Submit and next -------------------------------------------------------------------------


def submit_url(run_id: str, case_id: str) -> str:
    return reverse("case_submit", args=["demo", run_id, case_id])


@pytest.fixture
def judged(reviewer, three_runs) -> Response:
    """q017-r1's Q-017 with every claim judged by alice, not yet marked complete by her."""
    response = response_for("q017-r1")
    for claim in Claim.objects.filter(response=response):
        judge(claim, reviewer)
    return response


def test_submit_and_next_by_form_post_marks_complete_and_opens_the_next_case(
    client, reviewer, judged
):
    client.force_login(reviewer)
    response = client.post(submit_url("q017-r1", "Q-017"))
    assert response.status_code == 302
    assert response["Location"] == case_path("pro-plan-r1", "q1")
    assert flashes(response) == ["Case Q-017 of q017-r1 submitted."]
    review = ResponseReview.objects.get(author=reviewer)
    assert (review.response, review.author, review.complete) == (judged, reviewer, True)
    assert statuses(reviewer)[("q017-r1", "Q-017")] == "done"


def test_submit_and_next_through_htmx_redirects_the_page(client, reviewer, judged):
    client.force_login(reviewer)
    response = client.post(submit_url("q017-r1", "Q-017"), **HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == case_path("pro-plan-r1", "q1")
    assert ResponseReview.objects.filter(author=reviewer, complete=True).count() == 1


def test_submit_on_the_case_page_posts_with_and_without_htmx(client, reviewer, judged):
    client.force_login(reviewer)
    html = client.get(case_path("q017-r1", "Q-017")).content.decode()
    url = submit_url("q017-r1", "Q-017")
    assert f'action="{url}"' in html
    assert f'hx-post="{url}"' in html
    assert ">Submit and next</button>" in html


def test_a_submit_with_a_claim_i_did_not_judge_is_refused_by_form_post(
    client, reviewer, three_runs
):
    judge(Claim.objects.get(key="C-017-1"), reviewer)
    client.force_login(reviewer)
    response = client.post(submit_url("q017-r1", "Q-017"))
    assert response.status_code == 302
    assert response["Location"] == case_path("q017-r1", "Q-017")
    assert flashes(response) == [
        "Judge every claim before you submit: C-017-2, C-017-3, C-017-4 have no verdict of yours."
    ]
    assert not ResponseReview.objects.filter(author=reviewer).exists()


def test_a_submit_with_a_claim_i_did_not_judge_is_refused_in_place_through_htmx(
    client, reviewer, judged, second_reviewer
):
    claim_create(response=judged, author=second_reviewer, text="New.", spans=[[0, 5]])
    client.force_login(reviewer)
    response = client.post(submit_url("q017-r1", "Q-017"), **HTMX)
    assert response.status_code == 400
    assert "HX-Redirect" not in response
    html = response.content.decode()
    assert html.lstrip().startswith('<form id="submit-next"')
    assert "Judge every claim before you submit: c1 has no verdict of yours." in html
    assert not ResponseReview.objects.filter(author=reviewer).exists()


def test_a_submit_without_any_claim_is_refused_with_the_decomposition_message(
    client, reviewer, replay_response
):
    client.force_login(reviewer)
    response = client.post(submit_url("q017-r3", "Q-017"), **HTMX)
    assert response.status_code == 400
    assert "Split the answer into claims first" in response.content.decode()
    assert not ResponseReview.objects.exists()


def test_submitting_the_last_case_lands_on_the_empty_queue(client, reviewer, replay_response):
    claim = claim_create(response=replay_response, author=reviewer, text="A.", spans=[FINAL_SALE])
    judge(claim, reviewer)
    client.force_login(reviewer)
    response = client.post(submit_url("q017-r3", "Q-017"), follow=True)
    assert response.redirect_chain == [(f"{QUEUE}?run=q017-r3&case=Q-017", 302)]
    html = response.content.decode()
    assert "Your queue is empty" in html
    assert f'href="{WORK}"' in html
    assert "Case Q-017 of q017-r3 submitted." in html


def test_the_service_refuses_a_submit_while_my_verdict_is_missing(reviewer, replay_response):
    claim_create(response=replay_response, author=reviewer, text="A.", spans=[FINAL_SALE])
    with pytest.raises(Exception, match="c1 has no verdict of yours"):
        response_submit(response=replay_response, author=reviewer)


def test_submit_and_next_query_count_does_not_grow_with_cases(
    client, reviewer, project, django_assert_max_num_queries, small_pages
):
    client.force_login(reviewer)
    # 20: 2 of them keep the response's stored `reviewed` (its lock on PostgreSQL, UPDATE).
    queries_at_two_sizes(
        reviewer, django_assert_max_num_queries, 20,
        lambda run_id: client.post(submit_url(run_id, "case-0"), **HTMX), 200,
    )  # fmt: skip
