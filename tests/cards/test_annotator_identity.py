"""A local account and an imported annotator are two annotators, even with one name.

Project `demo` holds q017-r1 (and its replay q017-r2) as imported, with the judgements
of `seed-protocol` given to an imported annotator named `alice`; the reviewer `alice`,
a local account, then labels three of q017-r1's four claims herself:

| claim   | imported alice | local alice |
|---------|----------------|-------------|
| C-017-1 | unsupported    | unsupported |
| C-017-2 | partial        | supported   |
| C-017-3 | unsupported    | unsupported |
| C-017-4 | unsupported    | —           |
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from cards.agreement import run_agreement
from cards.annotators import Annotator, Roster
from cards.models import Claim, Origin
from cards.oversight import disagreements
from replay.models import Run
from tests.cards.conftest import judge
from tests.conftest import FIXTURES, import_bytes


def import_as_alice(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    import_bytes(data.replace(b'"annotator": "seed-protocol"', b'"annotator": "alice"'))


@pytest.fixture
def imported_alice(project, reviewer) -> Run:
    """q017-r1 and q017-r2 judged by an imported `alice`; the account alice is a member."""
    import_as_alice("q017-r1.jsonl")
    import_as_alice("q017-r2.jsonl")
    return Run.objects.get(run_id="q017-r1")


@pytest.fixture
def namesakes(imported_alice, reviewer) -> Run:
    claims = {c.key: c for c in Claim.objects.filter(response__run=imported_alice)}
    for key, support in [
        ("C-017-1", "unsupported"),
        ("C-017-2", "supported"),
        ("C-017-3", "unsupported"),
    ]:
        judge(claims[key], reviewer, support, f"local alice: {key}", seen_own_seq=None)
    return imported_alice


def call(*args: str) -> dict:
    out = io.StringIO()
    call_command(*args, "--project", "demo", stdout=out)
    return json.loads(out.getvalue())


def test_agreement_counts_the_account_and_its_imported_namesake_as_two(namesakes):
    agreement = run_agreement(run=namesakes)
    assert agreement.annotators == ["alice", "imported:alice"]
    assert agreement.claims == 3
    assert (agreement.raw.k, agreement.raw.n) == (2, 3)
    # observed 2/3; by chance (2·2)/9 = 4/9; κ = (6/9 − 4/9) / (5/9) = 2/5
    assert agreement.kappa == pytest.approx(2 / 5)
    assert agreement.confusion["supported"]["partial"] == 1
    assert agreement.confusion["unsupported"]["unsupported"] == 2
    [disagreement] = agreement.disagreeing
    assert disagreement.labels == {
        "alice": ("supported", "local alice: C-017-2"),
        "imported:alice": ("partial", disagreement.labels["imported:alice"][1]),
    }


def test_run_agreement_names_them_distinctly_in_its_json(namesakes):
    agreement = call("run_agreement", "q017-r1", "--annotators", "alice", "imported:alice")
    assert agreement["annotators"] == ["alice", "imported:alice"]
    assert (agreement["claims"], agreement["disagreements"]) == (3, 1)
    assert agreement["cohen_kappa"] == 0.4


def test_consensus_needs_a_strict_majority_of_distinct_annotators(namesakes):
    figures = call("run_metrics", "q017-r1", "--consensus")
    verdicts = figures["per_response"][0]["verdicts"]
    # C-017-2: one supported, one partial: no majority of two annotators.
    assert verdicts["no_consensus"] == 1
    assert (verdicts["unsupported"], verdicts["supported"], verdicts["partial"]) == (3, 0, 0)


def test_a_bare_name_is_the_account_and_imported_colon_the_imported_namesake(namesakes):
    local = call("run_metrics", "q017-r1", "--annotator", "alice")
    assert local["verdicts_from"] == "annotator:alice"
    assert local["per_response"][0]["verdicts"]["unreviewed"] == 1  # she left C-017-4
    assert local["per_response"][0]["verdicts"]["supported"] == 1
    imported = call("run_metrics", "q017-r1", "--annotator", "imported:alice")
    assert imported["verdicts_from"] == "annotator:imported:alice"
    assert imported["per_response"][0]["verdicts"]["unreviewed"] == 0
    assert imported["per_response"][0]["verdicts"]["partial"] == 1


def test_a_bare_name_means_the_member_even_before_she_labels_anything(imported_alice):
    figures = call("run_metrics", "q017-r1", "--annotator", "alice")
    assert figures["per_response"][0]["verdicts"]["unreviewed"] == 4
    assert call("run_agreement", "q017-r1")["annotators"] == ["imported:alice"]


def test_compare_runs_takes_the_imported_namesake_by_its_qualified_name(namesakes):
    comparison = call("compare_runs", "q017-r1", "q017-r2", "--annotator", "imported:alice")
    assert comparison["verdicts_from"] == "annotator:imported:alice"
    facts = comparison["pairs"][0]["facts"]
    assert facts["G1"] == {"a": "partial", "b": "supported", "change": "improved"}
    local = call("compare_runs", "q017-r1", "q017-r2", "--annotator", "alice")
    assert local["pairs"][0]["facts"]["G1"]["a"] == "supported"


def test_the_disagreements_list_shows_both_namesakes(namesakes):
    (item,) = disagreements(run=namesakes)
    assert item.claim.key == "C-017-2"
    assert sorted((v.annotator, v.origin) for v in item.verdicts) == [
        ("alice", Origin.IMPORTED),
        ("alice", Origin.REVIEW),
    ]


def test_the_disagreements_page_lists_the_namesakes_as_two(client, namesakes, lead):
    client.force_login(lead)
    content = client.get(reverse("run_disagreements", args=["demo", "q017-r1"])).content.decode()
    assert content.count('<li class="verdict ') == 2
    assert "— alice<div>local alice: C-017-2</div>" in content
    assert '— alice <span class="badge">imported</span><div>The 30-day window exists' in content


def test_the_figures_page_offers_both_namesakes_as_sources(client, namesakes, lead):
    client.force_login(lead)
    url = reverse("run_figures", args=["demo", "q017-r1"])
    page = client.get(url)
    assert page.context["annotators"] == ["alice", "imported:alice"]
    content = page.content.decode()
    assert 'value="annotator:imported:alice"' in content
    chosen = client.get(url, {"source": "annotator:imported:alice"})
    assert chosen.context["figures"].totals["verdicts"]["partial"] == 1
    assert 'value="annotator:imported:alice" selected' in chosen.content.decode()
    panel = reverse("run_agreement", args=["demo", "q017-r1"])
    agreement = client.get(panel, {"annotator": ["alice", "imported:alice"]}).context["agreement"]
    assert (agreement.annotators, agreement.claims) == (["alice", "imported:alice"], 3)


def test_every_name_a_roster_shows_can_be_typed_back():
    roster = Roster(
        accounts=frozenset({"alice", "lead"}),
        annotators=(
            Annotator("alice"),
            Annotator("alice", imported=True),
            Annotator("imported:x", imported=True),
            Annotator("seed-protocol", imported=True),
        ),
    )
    assert roster.names == ["alice", "imported:alice", "imported:imported:x", "seed-protocol"]
    assert [roster.resolve(name) for name in roster.names] == list(roster.annotators)


def test_the_figures_page_keeps_a_chosen_annotator_who_labelled_nothing_selected(
    client, imported_alice, lead
):
    client.force_login(lead)
    url = reverse("run_figures", args=["demo", "q017-r1"])
    page = client.get(url, {"source": "annotator:alice"})
    assert page.context["figures"].totals["verdicts"]["unreviewed"] == 4
    assert '<option value="annotator:alice" selected>' in page.content.decode()


def test_the_side_by_side_page_offers_both_namesakes_and_keeps_the_chosen_one(
    client, namesakes, lead
):
    client.force_login(lead)
    url = reverse("run_compare", args=["demo"])
    page = client.get(url, {"a": "q017-r1", "b": "q017-r2", "source": "annotator:imported:alice"})
    assert page.context["summary"]["improvements"] == 1
    content = page.content.decode()
    assert '<option value="annotator:imported:alice" selected>' in content
    assert '<option value="annotator:alice" >' in content
    nobody = client.get(url, {"a": "q017-r1", "b": "q017-r2", "source": "annotator:lead"})
    assert '<option value="annotator:lead" selected>' in nobody.content.decode()


def test_the_offer_of_imported_verdicts_names_the_namesake_of_an_account(
    client, imported_alice, reviewer
):
    client.force_login(reviewer)
    url = reverse("run_figures", args=["demo", "q017-r1"])
    response = client.get(url)
    assert response.context["offer"].annotators == [("imported:alice", "annotator:imported:alice")]
    followed = client.get(url, {"source": "annotator:imported:alice"})
    assert followed.context["source"].annotator == Annotator("alice", imported=True)
    assert followed.context["offer"] is None
