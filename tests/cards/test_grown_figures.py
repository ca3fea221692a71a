"""A run's stored figures in a new state are grown from those read before
(`cards.metrics.grown_run_figures`): the responses changed since are read again and their
sums taken out of the totals and added back. They must always be the figures read whole,
and the offer of imported verdicts (`cards.oversight.judged_runs`) what it reads whole."""

from __future__ import annotations

import json
import random
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest
from django.core.cache import cache
from django.urls import reverse

import cards.metrics
from cards.annotators import roster_of
from cards.figures import mean
from cards.metrics import grown_run_figures
from cards.models import Claim, ResponseTally
from cards.oversight import imported_offer, judged_runs
from cards.run_state import runs_state
from cards.services.claims import claim_revise
from cards.services.reviews import response_mark_complete
from cards.verdicts import Source
from replay.models import Run
from tests.cards.conftest import judge, work_over
from tests.cards.test_tallies import assert_stored_figures_are_current, generated_run
from tests.conftest import FIXTURES, bundle_bytes, import_bytes, import_fixture


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()


# What the figures read whole are (`stored_run_figures`), not counted by `reads`.
STORED_READ, FIGURES_OF = cards.metrics._stored_read, cards.metrics._figures_of


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The run ids read whole (`cards.metrics._stored_read`), in order."""
    seen: list[str] = []

    def counted(run, *args):
        seen.append(run.run_id)
        return STORED_READ(run, *args)

    monkeypatch.setattr(cards.metrics, "_stored_read", counted)
    return seen


def grown(run: Run):
    return grown_run_figures(run=run, state=runs_state(runs=[run], scope="test"))


def assert_as_read_whole(run: Run) -> None:
    figures, whole = grown(run), FIGURES_OF(run, STORED_READ(run))
    assert figures.totals == whole.totals
    assert figures.hint_counts == whole.hint_counts
    assert json.dumps(figures.as_json()) == json.dumps(whole.as_json())


def test_grown_figures_are_those_read_whole_after_every_write_of_a_walk(
    project, reviewer, second_reviewer, lead, reads
):
    run = generated_run(cases=8)
    assert_as_read_whole(run)
    rng = random.Random(7)
    for _ in range(60):
        work_over(run, rng, [reviewer, second_reviewer], lead, steps=1)
        assert_as_read_whole(run)
    assert reads == ["generated-r1"]  # read whole once: every state after it was grown
    assert_stored_figures_are_current(run)  # and they are the streamed reference


def test_the_demo_runs_grown_after_verdicts_adjudications_and_marks(
    demo_runs, reviewer, lead, reads
):
    run = Run.objects.get(run_id="q017-r1")
    assert_as_read_whole(run)
    claims = list(Claim.objects.filter(response__run=run).order_by("pk"))
    judge(claims[0], reviewer, "unsupported", diagnosis="not_in_collection")
    assert_as_read_whole(run)
    response_mark_complete(response=claims[0].response, author=reviewer)
    assert_as_read_whole(run)
    judge(claims[-1], lead, "supported", adjudication=True)
    assert_as_read_whole(run)
    response_mark_complete(response=claims[0].response, author=reviewer, complete=False)
    assert_as_read_whole(run)
    assert reads == ["q017-r1"]  # one response, every change grown


def test_every_kind_of_write_between_two_views_is_grown(
    project, reviewer, second_reviewer, lead, reads
):
    """A verdict, a review mark and a claim revision between two views: the responses they
    changed are found in one query over the three tables."""
    run = generated_run(cases=10)
    rng = random.Random(3)
    for _ in range(12):
        work_over(run, rng, [reviewer, second_reviewer], lead, steps=3)
        assert_as_read_whole(run)
    claims = list(Claim.objects.filter(response__run=run).order_by("pk"))
    judge(claims[0], reviewer, "supported")
    response_mark_complete(response=claims[3].response, author=reviewer)
    claim_revise(claim=claims[6], author=reviewer, seen_claim_seq=claims[6].revisions.count(),
                 reason="Withdrawn.", withdrawn=True)  # fmt: skip
    assert_as_read_whole(run)
    assert reads == ["generated-r1"]


def test_the_figures_page_after_a_verdict_and_a_submit(client, reviewer, demo_runs):
    client.force_login(reviewer)
    url = reverse("run_figures", args=["demo", "q017-r1"])
    assert client.get(url).status_code == 200
    claim = Claim.objects.filter(response__run__run_id="q017-r1").first()
    judge(claim, reviewer, "supported")
    response_mark_complete(response=claim.response, author=reviewer)
    answer = client.get(url)
    assert answer.status_code == 200
    assert answer.context["figures"].totals["verdicts"]["supported"] >= 1


def test_a_response_without_its_stored_row_when_read_is_read_whole_after(project, reviewer, reads):
    run = generated_run(cases=8)
    response = run.responses.order_by("pk").first()
    ResponseTally.objects.filter(response=response).delete()  # as before the rows existed
    grown(run)
    response_mark_complete(response=response, author=reviewer)  # rebuilds the run's rows
    assert_as_read_whole(run)
    assert reads == ["generated-r1", "generated-r1"]


def test_passages_added_to_an_existing_snapshot_by_an_import_read_the_run_whole(
    project, reviewer, reads
):
    """An import into a snapshot the project has already adds passages to it: a cited ref
    may drift without any new snapshot. Every import adds a run, which the state counts."""
    import_fixture("q017-r1.jsonl")
    run = Run.objects.get(run_id="q017-r1")
    r3 = [json.loads(line) for line in (FIXTURES / "q017-r3.jsonl").read_text().splitlines()]
    head, d02 = {**r3[0], "run_id": "only-d02"}, r3[2]
    head.pop("baseline_run_id", None)
    assert d02["ref"].startswith("D-02@")
    case = {"kind": "case", "case_id": "Q-099", "query_id": "Q-099", "query": "When?",
            "required_facts": [{"fact_id": "G3", "text": "At the warehouse.",
                                "evidence": [d02["ref"]]}],
            "relevant_refs": [d02["ref"]], "known_gaps": []}  # fmt: skip
    response = {"kind": "response", "case_id": "Q-099", "answer_id": "A-099",
                "text": "At the warehouse.", "citations": [],
                "retrieved": [{"ref": d02["ref"], "rank": 1, "score": 0.9}]}  # fmt: skip
    import_bytes(bundle_bytes(head, d02, case, response))  # store-kb@2026-10, without D-01
    assert "passage_drift" not in grown(run).hint_counts
    import_fixture("q017-r3.jsonl")  # the same snapshot: it adds D-01, with another text
    judge(Claim.objects.filter(response__run=run).first(), reviewer, "supported")
    assert grown(run).hint_counts["passage_drift"] == 1
    assert_as_read_whole(run)
    assert reads == ["q017-r1", "q017-r1"]


def test_the_retrieval_totals_summed_again_are_those_of_the_import(demo_runs):
    from cards.models import RunTally
    from cards.services.tallies import retrieval_totals_store

    for run in Run.objects.filter(project__slug="demo"):
        imported = RunTally.objects.get(run=run).retrieval
        RunTally.objects.filter(run=run).update(retrieval={})
        retrieval_totals_store(run=run)
        assert RunTally.objects.get(run=run).retrieval == imported


def test_a_new_state_reads_only_the_responses_changed_since(
    project, reviewer, reads, django_assert_max_num_queries
):
    run = generated_run(cases=12)
    before = runs_state(runs=[run], scope="test")
    grown_run_figures(run=run, state=before)
    claim = Claim.objects.filter(response__run=run).order_by("pk").last()
    judge(claim, reviewer, "partial")
    state = runs_state(runs=[run], scope="test")
    # The responses changed, then their claim sums and their response rows.
    with django_assert_max_num_queries(3) as queries:
        figures = grown_run_figures(run=run, state=state)
    assert reads == ["generated-r1"]
    changed = queries.captured_queries[0]["sql"]
    assert f'"cards_verdictrevision"."id" > {before.verdicts_upto}' in changed
    assert f'"cards_verdictrevision"."id" <= {state.verdicts_upto}' in changed
    assert "cards_claimrevision" not in changed  # no claim revision since: not asked
    assert f"({claim.response_id})" in queries.captured_queries[1]["sql"]
    assert figures.totals["verdicts"]["partial"] == 1
    with django_assert_max_num_queries(0):  # the same state again: what was read
        assert grown_run_figures(run=run, state=state).totals == figures.totals


def test_a_state_older_than_what_was_read_gets_what_was_read_then(project, reviewer, reads):
    """A request that read its state before another one grew the figures further (both in
    flight at once) gets the newer figures, as reading the stored rows now would give."""
    run = generated_run()
    older = runs_state(runs=[run], scope="test")
    judge(Claim.objects.filter(response__run=run).first(), reviewer, "supported")
    newer = grown(run)
    assert grown_run_figures(run=run, state=older).totals == newer.totals
    assert reads == ["generated-r1"]


def test_another_snapshot_reads_the_run_whole_again(client, reviewer, reads):
    import_fixture("q017-r1.jsonl")
    run = Run.objects.get(run_id="q017-r1")
    assert "passage_drift" not in grown(run).hint_counts
    import_fixture("q017-r3.jsonl")  # a newer snapshot: D-01 has another text there
    assert grown(run).hint_counts["passage_drift"] == 1
    assert reads == ["q017-r1", "q017-r1"]
    assert_as_read_whole(run)


def test_many_changed_responses_read_the_run_whole(project, reviewer, reads, monkeypatch):
    monkeypatch.setattr(cards.metrics, "GROW_SHARE", 0.2)
    monkeypatch.setattr(cards.metrics, "GROW_LEAST", 0)
    run = generated_run(cases=10)
    grown(run)
    for claim in Claim.objects.filter(response__run=run).order_by("pk")[:6:3]:
        judge(claim, reviewer, "supported")  # two responses of ten: grown
    assert_as_read_whole(run)
    for claim in Claim.objects.filter(response__run=run).order_by("pk")[::3]:
        judge(claim, reviewer, "partial")  # every response: read whole
    assert_as_read_whole(run)
    assert reads == ["generated-r1", "generated-r1"]


@pytest.mark.parametrize("seed", range(5))
def test_a_macro_mean_is_the_same_whatever_the_order_and_what_was_taken_away(seed):
    rng = random.Random(seed)
    pairs = [(k, n) for n in (rng.randint(1, 9) for _ in range(200)) for k in [rng.randint(0, n)]]
    exact = sum((Fraction(k, n) for k, n in pairs), Fraction(0)) / len(pairs)
    values = [k << 32 | n for k, n in pairs]  # as `Totals` counts them
    shuffled = rng.sample(values, len(values))
    counts = Counter(values)
    for pair in shuffled[:50]:  # taken away, then added back
        counts[pair] -= 1
    for pair in reversed(shuffled[:50]):
        counts[pair] += 1
    assert mean(counts, len(values)) == mean(Counter(shuffled), len(values))
    decimal = Decimal(exact.numerator) / Decimal(exact.denominator)
    assert mean(counts, len(values)) == float(decimal.quantize(Decimal("0.0001"), ROUND_HALF_UP))


@pytest.mark.parametrize(
    ("values", "defined", "expected"),
    [
        ({(1, 1): 1}, 160, 0.0063),  # 0.00625 exactly: its double is above the tie
        ({(3, 1): 1}, 800, 0.0038),  # 0.00375 exactly: its double is below the tie
        ({(1, 32): 1}, 1, 0.0313),  # 0.03125, a double exactly
        ({(1, 3): 2}, 2, 0.3333),
        ({(2, 3): 1}, 1, 0.6667),
        ({(1, 1): 1, (0, 1): 2}, 3, 0.3333),
    ],
)
def test_a_macro_mean_rounds_a_half_up_at_the_fourth_decimal(values, defined, expected):
    counted = Counter({k << 32 | n: count for (k, n), count in values.items()})
    assert mean(counted, defined) == expected


def test_the_offer_grown_is_the_offer_read_whole(demo_runs, reviewer, lead):
    runs = list(Run.objects.filter(run_id__in=["q017-r1", "q017-r2"]).order_by("run_id"))
    source = Source()

    def offers():
        state = runs_state(runs=runs, scope="test")
        roster = roster_of(runs=runs)
        return (
            imported_offer(runs=runs, roster=roster, source=source, upto=state.verdicts_upto),
            imported_offer(runs=runs, roster=roster, source=source),
        )

    grown_offer, whole = offers()
    assert grown_offer == whole and whole is not None and whole.runs == ["q017-r1", "q017-r2"]
    judge(Claim.objects.filter(response__run=runs[1]).first(), lead, "partial", adjudication=True)
    grown_offer, whole = offers()
    assert grown_offer == whole and whole.runs == ["q017-r1"]
    judge(Claim.objects.filter(response__run=runs[0]).first(), reviewer, "supported")
    assert offers() == (None, None)


def test_the_offer_reads_only_the_verdicts_since_for_runs_not_judged(
    demo_runs, reviewer, django_assert_num_queries
):
    runs = list(Run.objects.filter(run_id__in=["q017-r1", "q017-r2"]).order_by("run_id"))
    before = runs_state(runs=runs, scope="test").verdicts_upto
    assert judged_runs(runs=runs, upto=before) == frozenset()
    judge(Claim.objects.filter(response__run=runs[0]).first(), reviewer, "supported")
    upto = runs_state(runs=runs, scope="test").verdicts_upto
    with django_assert_num_queries(1) as reads:
        assert judged_runs(runs=runs, upto=upto) == {runs[0].pk}
    sql = reads.captured_queries[0]["sql"]
    assert f'"id" > {before}' in sql and f'"id" <= {upto}' in sql
    judge(Claim.objects.filter(response__run=runs[0]).last(), reviewer, "partial")
    newest = runs_state(runs=runs, scope="test").verdicts_upto
    with django_assert_num_queries(1) as reads:  # the judged run is not asked again
        judged_runs(runs=runs, upto=newest)
    assert f"IN ({runs[1].pk})" in reads.captured_queries[0]["sql"]
