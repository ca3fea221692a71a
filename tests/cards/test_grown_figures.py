"""A run's stored figures in a new state are grown from those read before
(`cards.metrics.grown_run_figures`): the responses changed since are read again and their
sums taken out of the totals and added back. They must always be the figures read whole,
and the offer of imported verdicts (`cards.oversight.judged_runs`) what it reads whole."""

from __future__ import annotations

import json
import random
from collections import Counter
from fractions import Fraction

import pytest
from django.core.cache import cache

import cards.metrics
from cards.annotators import roster_of
from cards.figures import mean
from cards.metrics import grown_run_figures
from cards.models import Claim
from cards.oversight import imported_offer, judged_runs
from cards.run_state import runs_state
from cards.services.reviews import response_mark_complete
from cards.verdicts import Source
from replay.models import Run
from tests.cards.conftest import judge, work_over
from tests.cards.test_tallies import assert_stored_figures_are_current, generated_run
from tests.conftest import import_fixture


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


def test_the_demo_runs_grown_after_verdicts_adjudications_and_marks(demo_runs, reviewer, lead):
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
    values = [(k, n) for n in (rng.randint(1, 9) for _ in range(200)) for k in [rng.randint(0, n)]]
    exact = sum((Fraction(k, n) for k, n in values), Fraction(0)) / len(values)
    shuffled = rng.sample(values, len(values))
    counts = Counter(values)
    for pair in shuffled[:50]:  # taken away, then added back
        counts[pair] -= 1
    for pair in reversed(shuffled[:50]):
        counts[pair] += 1
    assert mean(counts, len(values)) == mean(Counter(shuffled), len(values))
    assert mean(counts, len(values)) == float(round(exact, 4))


def test_a_macro_mean_on_a_tie_rounds_half_to_even():
    assert mean(Counter({(1, 32): 1}), 1) == 0.0312  # 0.03125 exactly
    assert mean(Counter({(3, 32): 1}), 1) == 0.0938  # 0.09375 exactly


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
