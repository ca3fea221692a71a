from __future__ import annotations

from django.urls import reverse


def test_the_side_by_side_page_aligns_claims_and_marks_changes(client, reviewer, demo_runs):
    client.force_login(reviewer)
    url = reverse("run_compare", args=["demo"])
    response = client.get(
        url, {"a": "q017-r1", "b": "q017-r2", "source": "annotator:seed-protocol"}
    )
    content = response.content.decode()
    assert response.status_code == 200
    assert "▲ improved" in content and "verdict changed" in content
    assert '<span class="mono">prompt_version</span> <span class="badge">differs</span>' in content
    assert response.context["summary"] == {
        "pairs": 1, "comparable": 1, "regressions": 0, "improvements": 1, "unreviewed": 0,
        "left_out": 0, "reasons": {},
    }  # fmt: skip


def test_b_defaults_its_a_to_the_declared_baseline(client, reviewer, demo_runs):
    client.force_login(reviewer)
    response = client.get(reverse("run_compare", args=["demo"]), {"b": "q017-r3"})
    assert response.context["a"].run_id == "q017-r1"
    assert response.context["summary"]["reasons"] == {"passage_drift": 1}
    assert "not comparable" in response.content.decode()


def test_the_filters_narrow_the_pairs(client, reviewer, demo_runs):
    client.force_login(reviewer)
    url = reverse("run_compare", args=["demo"])
    base = {"a": "q017-r1", "b": "q017-r3", "source": "annotator:seed-protocol"}
    assert len(client.get(url, base | {"show": "not_comparable"}).context["rows"]) == 1
    assert len(client.get(url, base | {"show": "regressions"}).context["rows"]) == 0
    assert (
        len(client.get(url, base | {"show": "diagnosis:citation_conflicts"}).context["rows"]) == 1
    )


def test_the_drift_page_shows_both_hashes_a_diff_and_the_claims_at_risk(
    client, reviewer, demo_runs
):
    client.force_login(reviewer)
    response = client.get(reverse("project_drift", args=["demo"]))
    [item] = response.context["refs"]
    assert item.ref == "D-01@returns-v4#p04"
    assert [v.snapshot for v in item.versions] == ["store-kb@2026-07", "store-kb@2026-10"]
    content = response.content.decode()
    assert "<del>30</del>" in content and "<ins>14</ins>" in content
    at_risk = {(c["run_id"], c["claim_id"]) for c in item.claims}
    assert at_risk == {
        ("q017-r1", "C-017-1"), ("q017-r1", "C-017-2"),
        ("q017-r2", "C-017-r2-1"), ("q017-r2", "C-017-r2-2"),
    }  # fmt: skip


def test_cards_resting_on_an_old_text_are_flagged_re_review(client, reviewer, demo_runs):
    client.force_login(reviewer)
    page = client.get(reverse("case_detail", args=["demo", "q017-r1", "Q-017"])).context["page"]
    flags = {card.claim.key: card.rereview for card in page.cards}
    assert flags["C-017-1"] == [("D-01@returns-v4#p04", "store-kb@2026-10")]
    assert flags["C-017-3"] == []  # D-02 did not change
    newest = client.get(reverse("case_detail", args=["demo", "q017-r3", "Q-017"]))
    assert "re-review" not in newest.content.decode()


def test_a_whole_card_and_a_saved_one_are_flagged_re_review_too(client, reviewer, demo_runs):
    # Read by the card's own query (cards.selectors.claim_for_member), not the page's.
    client.force_login(reviewer)
    card = reverse("card_detail", args=["demo", "q017-r1", "Q-017", "C-017-1"])
    content = client.get(card, HTTP_HX_REQUEST="true").content.decode()
    assert "has another text in the newer snapshot" in content
    verdict = reverse("verdict_add", args=["demo", "q017-r1", "Q-017", "C-017-1"])
    saved = client.post(
        verdict,
        {"support": "partial", "reason": "Old text.", "seen_claim_seq": 1, "seen_own_seq": ""},
        HTTP_HX_REQUEST="true",
    )
    assert saved.status_code == 200
    assert "has another text in the newer snapshot" in saved.content.decode()


def test_the_side_by_side_page_sees_a_verdict_saved_after_it_was_cached(client, lead, demo_runs):
    from cards.models import Claim
    from cards.services.verdicts import verdict_save

    client.force_login(lead)
    url = reverse("run_compare", args=["demo"])
    query = {"a": "q017-r1", "b": "q017-r2"}  # default source: no reviewer verdict yet
    [before] = client.get(url, query).context["rows"]
    assert before["pair"].facts["G1"].a == "unreviewed"
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-2")
    verdict_save(
        claim=claim, author=lead, support="supported", reason="D-01 gives 30 days.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip
    [after] = client.get(url, query).context["rows"]
    assert after["pair"].facts["G1"].a == "supported"


def test_two_runs_nobody_here_judged_offer_the_imported_verdicts_not_zero_improved(
    client, reviewer, demo_runs
):
    client.force_login(reviewer)
    url = reverse("run_compare", args=["demo"])
    response = client.get(url, {"a": "q017-r1", "b": "q017-r2", "show": "all"})
    assert response.context["offer"].runs == ["q017-r1", "q017-r2"]
    assert response.context["summary"]["improvements"] == 0
    assert response.context["summary"]["unreviewed"] == 1
    content = response.content.decode()
    assert "? not judged" in content and "▲ improved" not in content
    assert "with an improved fact" not in content and "not known until both runs" in content
    link = "?a=q017-r1&amp;b=q017-r2&amp;show=all&amp;source=annotator%3Aseed-protocol"
    assert f'href="{link}"' in content
    followed = client.get(url, {"a": "q017-r1", "b": "q017-r2", "show": "all",
                                "source": "annotator:seed-protocol"})  # fmt: skip
    assert followed.context["offer"] is None
    assert followed.context["summary"]["improvements"] == 1


def test_a_drifted_pair_shows_its_facts_but_not_as_improved(client, reviewer, demo_runs):
    client.force_login(reviewer)
    url = reverse("run_compare", args=["demo"])
    response = client.get(
        url, {"a": "q017-r1", "b": "q017-r3", "source": "annotator:seed-protocol"}
    )
    content = response.content.decode()
    assert "not compared" in content and "▲ improved" not in content
    assert response.context["summary"]["improvements"] == 0


def test_the_comparison_page_takes_a_fixed_number_of_queries(
    client, reviewer, demo_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    url = reverse("run_compare", args=["demo"])
    query = {"a": "q017-r1", "b": "q017-r2"}
    # The first view: 21 at most, of which one reads the order of the pairs (kept under
    # the runs for good), and on PostgreSQL one waits for the runs' writes in flight
    # (cards.run_writes).
    with django_assert_max_num_queries(21):
        assert client.get(url, query).context["offer"] is not None
    # Cached: the session and its user, the membership, the runs, and the state the cache
    # keys are made of (the members, the newest claim revision, verdict and review mark;
    # on PostgreSQL, first a wait for the writes in flight: cards.run_writes).
    with django_assert_max_num_queries(9):
        assert client.get(url, query).context["offer"] is not None


def test_one_judged_run_against_one_nobody_judged_shows_no_invented_regression(
    client, reviewer, demo_runs
):
    from cards.models import Claim
    from tests.cards.conftest import judge

    for claim in Claim.objects.filter(response__run__run_id="q017-r1"):
        judge(claim, reviewer, "supported", "The passage says so.", seen_own_seq=None)
    client.force_login(reviewer)
    response = client.get(reverse("run_compare", args=["demo"]), {"a": "q017-r1", "b": "q017-r2"})
    assert response.context["offer"].runs == ["q017-r2"]
    [pair] = [row["pair"] for row in response.context["rows"]]
    assert {fact: (f.a, f.b, f.change) for fact, f in pair.facts.items()} == dict.fromkeys(
        ("G1", "G2", "G3"), ("supported", "unreviewed", "unreviewed")
    )
    assert response.context["summary"]["regressions"] == 0


def test_the_page_shows_titles_with_their_codes_beside_them(client, reviewer, demo_runs):
    client.force_login(reviewer)
    response = client.get(reverse("run_compare", args=["demo"]), {"a": "q017-r1", "b": "q017-r3"})
    content = response.content.decode()
    assert '<th scope="row" title="support_or_partial">Supported or partial</th>' in content
    assert 'left out (<span title="passage_drift">Passage drift</span>: 1)' in content
    drift = (
        '<span class="small" title="passage_drift">Passage drift</span> <span class="mono small">'
    )
    assert drift + "D-01@returns-v4#p04 " in content
    assert '<span class="mono">G1</span> Unreviewed → Absent' in content
    assert '"diagnosis:qualifier_dropped" >diagnosis: qualifier dropped</option>' in content
    # The data keeps the codes.
    assert response.context["rows"][0]["pair"].reasons[0].startswith("passage_drift: D-01")
