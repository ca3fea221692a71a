from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from cards.models import Claim
from cards.services.verdicts import verdict_save
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def figures_url(run_id: str, suffix: str = "figures") -> str:
    name = {"figures": "run_figures", "csv": "run_figures_csv", "json": "run_figures_json"}[suffix]
    return reverse(name, args=["demo", run_id])


def test_the_dashboard_shows_counts_before_percentages_and_undefined_as_undefined(
    client, reviewer, demo_runs
):
    client.force_login(reviewer)
    response = client.get(figures_url("resi-r1") + "?source=annotator:seed-protocol")
    content = response.content.decode()
    assert response.status_code == 200
    assert "0 / 3" in content  # support
    assert "Citation precision" in content
    assert "undefined" in content  # citation precision has no judged citation
    assert "<svg" in content and "<script" not in content.split("</main>")[0].split("<main")[1]
    assert "Claims of one answer are not independent" in content


def test_the_source_switch_changes_the_verdicts_used(client, reviewer, demo_runs):
    client.force_login(reviewer)
    default = client.get(figures_url("q017-r1")).context["figures"]
    imported = client.get(figures_url("q017-r1") + "?source=annotator:seed-protocol").context[
        "figures"
    ]
    assert default.totals["verdicts"]["unreviewed"] == 4
    assert imported.totals["verdicts"]["unsupported"] == 3


def test_csv_and_json_carry_the_same_figures(client, reviewer, demo_runs):
    client.force_login(reviewer)
    data = client.get(
        figures_url("p7-answer-a", "json") + "?source=annotator:seed-protocol"
    ).json()
    assert data["per_response"][0]["support"]["k"] == 1
    text = client.get(figures_url("p7-answer-a", "csv") + "?source=annotator:seed-protocol")
    rows = list(csv.reader(io.StringIO(text.content.decode())))
    assert rows[0] == ["verdicts_from", "annotator:seed-protocol"]
    header, first = rows[1], rows[2]
    assert first[header.index("support_k")] == "1"
    assert first[header.index("support_n")] == "3"
    assert first[header.index("citation_precision_n")] == "3"


def test_the_sample_size_helper_answers_in_place(client, reviewer, demo_runs):
    client.force_login(reviewer)
    response = client.get(
        figures_url("q017-r1") + "?helper=1&margin=3&confidence=95", HTTP_HX_REQUEST="true"
    )
    content = response.content.decode()
    assert content.lstrip().startswith('<section class="panel" id="sample-size"')
    assert "<strong>1068</strong>" in content


def test_the_dashboard_query_count_is_constant(client, reviewer, django_assert_max_num_queries):
    client.force_login(reviewer)
    import_bytes(bundle_bytes(*synthetic_bundle(run_id="small", cases=2, claims=1)))
    import_bytes(
        bundle_bytes(
            *synthetic_bundle(run_id="large", cases=40, claims=6, revisions=2, snapshot="s2")
        )
    )
    # 17: the figures read from the stored rows take 9 (claim sums, responses, the run's
    # retrieval totals, whether the project has another snapshot and then its drift, the
    # counts of response and claim hints, and the page's 50 responses and their claims'
    # hints); one asks whether anybody here judged the run (to offer the imported verdicts
    # if not); 2 read the state of the run, under which its roster is kept (one more, the
    # first time), and on PostgreSQL one more waits for its writes in flight first
    # (cards.run_writes). The agreement panel is loaded after the page, from its own URL.
    with django_assert_max_num_queries(18) as small:
        client.get(figures_url("small"))
    with django_assert_max_num_queries(18) as large:
        client.get(figures_url("large"))
    assert len(small.captured_queries) == len(large.captured_queries)


def test_a_second_view_of_the_dashboard_reads_the_state_and_its_page_only(
    client, reviewer, demo_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    first = client.get(figures_url("q017-r1")).content.decode().split("<main")[1]
    # 4 for every request, 2 for the state of the run (3 on PostgreSQL: cards.run_writes),
    # 2 for the page's responses (their rows and their claims' hints): the roster, the
    # figures and the offer are kept.
    with django_assert_max_num_queries(9):
        again = client.get(figures_url("q017-r1")).content.decode()
    assert again.split("<main")[1] == first  # and nothing but the state read again


def test_figures_kept_for_a_state_are_read_again_after_a_verdict(client, reviewer, demo_runs):
    client.force_login(reviewer)
    verdicts = client.get(figures_url("q017-r1")).context["figures"].totals["verdicts"]
    assert (verdicts["unreviewed"], verdicts["supported"]) == (4, 0)
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-2")
    verdict_save(
        claim=claim, author=reviewer, support="supported", reason="D-01 gives 30 days.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip
    verdicts = client.get(figures_url("q017-r1")).context["figures"].totals["verdicts"]
    assert (verdicts["unreviewed"], verdicts["supported"]) == (3, 1)


def test_figures_kept_for_a_state_are_read_again_after_a_new_snapshot(client, reviewer, project):
    from tests.conftest import import_fixture

    import_fixture("q017-r1.jsonl")
    client.force_login(reviewer)
    assert "passage_drift" not in client.get(figures_url("q017-r1")).context["prechecks"]
    import_fixture("q017-r3.jsonl")  # a newer snapshot: D-01 has another text there
    assert client.get(figures_url("q017-r1")).context["prechecks"]["passage_drift"] == 1


@pytest.mark.parametrize("source", ["consensus", "annotator:seed-protocol"])
def test_a_source_computed_on_demand_shows_what_its_whole_figures_show(
    client, reviewer, demo_runs, monkeypatch, source
):
    import cards.views.figures
    from cards.metrics import run_metrics

    client.force_login(reviewer)
    for run_id in ("q017-r1", "p7-answer-a", "resi-r1"):
        for query in ({"source": source}, {"source": source, "page": "2"}):
            kept = client.get(figures_url(run_id), query).content.decode()
            with monkeypatch.context() as patch:
                patch.setattr(
                    cards.views.figures,
                    "page_figures",
                    lambda *, run, source, state: run_metrics(run=run, source=source),
                )
                whole = client.get(figures_url(run_id), query).content.decode()
            assert kept.split("<main")[1] == whole.split("<main")[1]


def test_a_source_computed_on_demand_is_computed_once_per_state(
    client, reviewer, demo_runs, monkeypatch
):
    import cards.dashboard

    client.force_login(reviewer)
    url = figures_url("q017-r1") + "?source=consensus"
    first = client.get(url).context["figures"].totals
    with monkeypatch.context() as patch:
        patch.setattr(cards.dashboard, "run_metrics", lambda **kwargs: 1 / 0)
        assert client.get(url).context["figures"].totals == first
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-2")
    verdict_save(
        claim=claim, author=reviewer, support="supported", reason="D-01 gives 30 days.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip
    assert client.get(url).context["figures"].totals != first


def agreement_url(run_id: str) -> str:
    return reverse("run_agreement", args=["demo", run_id])


def bob_finds_every_claim_unsupported(second_reviewer, run_id: str = "q017-r1") -> None:
    for claim in Claim.objects.filter(response__run__run_id=run_id):
        verdict_save(
            claim=claim, author=second_reviewer, support="unsupported", reason="bob reads it so.",
            seen_claim_seq=1, seen_own_seq=None,
        )  # fmt: skip


def test_the_agreement_panel_shows_agreement_between_chosen_annotators(
    client, lead, second_reviewer, demo_runs
):
    bob_finds_every_claim_unsupported(second_reviewer)
    client.force_login(lead)
    response = client.get(
        agreement_url("q017-r1"), {"annotator": ["bob", "seed-protocol"]}, HTTP_HX_REQUEST="true"
    )
    agreement = response.context["agreement"]
    assert agreement.annotators == ["bob", "seed-protocol"]
    assert (agreement.raw.k, agreement.raw.n) == (3, 4)  # seed-protocol says partial on C-017-2
    content = response.content.decode()
    assert content.lstrip().startswith('<div id="agreement">')
    assert "all agree on <strong>3 / 4</strong>" in content
    assert "95 % interval 0.30 – 0.95" in content  # Wilson for 3/4 (cli.md's example)
    assert "Cohen" in content and "read both reasons and adjudicate" in content


def test_the_figures_page_loads_its_agreement_panel_after_it_with_a_link_that_works_alone(
    client, lead, demo_runs
):
    client.force_login(lead)
    page = client.get(figures_url("q017-r1"), {"annotator": ["seed-protocol", "nobody"]})
    assert "agreement" not in page.context
    link = agreement_url("q017-r1") + "?annotator=seed-protocol"
    content = page.content.decode()
    assert f'<a href="{link}" hx-get="{link}" hx-trigger="load" hx-target="#agreement"' in content
    # Without JavaScript the link opens the panel as a page of its own.
    alone = client.get(link)
    assert alone.status_code == 200
    assert alone.context["agreement"].annotators == ["seed-protocol"]
    text = alone.content.decode()
    assert "<h1>Agreement on " in text and 'class="crumbs"' in text
    assert f'action="{agreement_url("q017-r1")}"' in text  # its form stays on that page


def test_the_agreement_panel_is_computed_once_per_state_of_the_run(
    client, lead, second_reviewer, demo_runs, monkeypatch
):
    from cards import agreement

    client.force_login(lead)
    first = client.get(agreement_url("q017-r1"), HTTP_HX_REQUEST="true").context["agreement"]
    assert first.claims == 0  # only seed-protocol labelled the run
    monkeypatch.setattr(agreement, "run_agreement", lambda **kwargs: 1 / 0)
    again = client.get(agreement_url("q017-r1"), HTTP_HX_REQUEST="true").context["agreement"]
    assert again.as_json() == first.as_json()


@pytest.mark.parametrize("change", ["verdict", "withdrawal", "review mark", "member"])
def test_a_change_after_a_cached_view_shows_the_new_agreement(
    client, lead, second_reviewer, outsider, demo_runs, change
):
    from cards.run_state import runs_state
    from cards.services.claims import claim_revise
    from cards.services.reviews import response_mark_complete
    from evidence.models import Membership, Project, Role
    from evidence.services import membership_set
    from replay.models import Run

    def state() -> str:
        return runs_state(runs=[Run.objects.get(run_id="q017-r1")], scope="figures")

    bob_finds_every_claim_unsupported(second_reviewer)
    client.force_login(lead)
    old_state = state()
    chosen = {"annotator": ["bob", "seed-protocol"]}
    before = client.get(agreement_url("q017-r1"), chosen).context["agreement"]
    assert (before.raw.k, before.raw.n) == (3, 4)
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-2")
    if change == "verdict":
        verdict_save(
            claim=claim, author=second_reviewer, support="partial", reason="bob reads it again.",
            seen_claim_seq=1, seen_own_seq=claim.verdicts.get(annotator="bob").seq,
        )  # fmt: skip
        expected = (4, 4)
    elif change == "withdrawal":
        claim_revise(claim=claim, author=lead, seen_claim_seq=1, withdrawn=True, reason="Dup.")
        expected = (3, 3)
    elif change == "review mark":
        # Nothing an open project counts changes (a blind one's sightings would): the key does.
        response_mark_complete(response=claim.response, author=second_reviewer)
        expected = (3, 4)
    else:
        # An account named like an imported annotator makes the bare name the account's.
        outsider.username = "seed-protocol"
        outsider.save()
        membership_set(project=Project.objects.get(slug="demo"), user=outsider, role=Role.REVIEWER)
        assert Membership.objects.filter(user=outsider).exists()
        expected = (0, 0)
    after = client.get(agreement_url("q017-r1"), chosen).context["agreement"]
    assert (after.raw.k, after.raw.n) == expected
    assert state() != old_state


def test_the_agreement_panel_query_count_is_constant(
    client, reviewer, django_assert_max_num_queries
):
    client.force_login(reviewer)
    import_bytes(bundle_bytes(*synthetic_bundle(run_id="small", cases=2, claims=1)))
    import_bytes(
        bundle_bytes(
            *synthetic_bundle(run_id="large", cases=40, claims=6, revisions=2, snapshot="s2")
        )
    )
    # 9 when computed: 4 for every request (session, user, membership, run), 2 for the
    # state of the run (its members; its newest claim revision, verdict and review mark;
    # 3 on PostgreSQL, which first waits for the writes in flight: cards.run_writes), the
    # roster, the verdicts of the run and its claims' current revisions.
    with django_assert_max_num_queries(10) as small:
        client.get(reverse("run_agreement", args=["demo", "small"]), HTTP_HX_REQUEST="true")
    with django_assert_max_num_queries(10) as large:
        client.get(reverse("run_agreement", args=["demo", "large"]), HTTP_HX_REQUEST="true")
    assert len(small.captured_queries) == len(large.captured_queries)
    # 6 when kept (7 on PostgreSQL): the state only.
    with django_assert_max_num_queries(7):
        client.get(reverse("run_agreement", args=["demo", "large"]), HTTP_HX_REQUEST="true")


def test_the_per_case_table_pages_through_every_case(client, lead):
    import_bytes(bundle_bytes(*synthetic_bundle(run_id="many", cases=51, passages=1, claims=1)))
    client.force_login(lead)
    first = client.get(figures_url("many")).content.decode()
    # {% querystring %} writes the "?" itself: "??page=2" would lose the page number.
    assert 'href="?page=2#cases-h"' in first
    second = client.get(figures_url("many"), {"page": "2"})
    assert second.context["cases"].number == 2
    assert 'href="?page=1#cases-h"' in second.content.decode()


def test_a_run_nobody_here_judged_offers_its_imported_verdicts_in_one_click(
    client, reviewer, demo_runs
):
    client.force_login(reviewer)
    response = client.get(figures_url("q017-r1"))
    offer = response.context["offer"]
    assert offer.runs == ["q017-r1"]
    assert offer.annotators == [("seed-protocol", "annotator:seed-protocol")]
    link = figures_url("q017-r1") + "?source=annotator%3Aseed-protocol"
    content = response.content.decode()
    assert "No reviewer of this project has judged this run yet" in content
    assert f'href="{link}"' in content
    followed = client.get(link)
    assert followed.context["offer"] is None
    assert followed.context["source"].label == "annotator:seed-protocol"
    assert followed.context["figures"].totals["verdicts"]["unreviewed"] == 0


def test_no_offer_once_a_reviewer_judged_or_for_another_source(client, reviewer, demo_runs):
    client.force_login(reviewer)
    assert client.get(figures_url("q017-r1") + "?source=consensus").context["offer"] is None
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-2")
    verdict_save(
        claim=claim, author=reviewer, support="supported", reason="D-01 gives 30 days.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip
    assert client.get(figures_url("q017-r1")).context["offer"] is None


def test_a_run_judged_by_nobody_at_all_says_to_review_it(client, reviewer, demo_runs):
    client.force_login(reviewer)
    response = client.get(figures_url("q017-r3"))
    assert response.context["offer"].annotators == []
    assert "Nothing was judged on import either" in response.content.decode()
