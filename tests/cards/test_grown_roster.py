"""A run's roster in a new state is grown from the one read before (cards.run_state): the
verdicts saved since, up to the newest when the state was read, and the members now. It
must always be the roster read whole."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from cards.annotators import roster_of
from cards.models import Claim
from cards.run_state import grown_roster, runs_state
from evidence.models import Membership, Role
from replay.models import Run
from tests.cards.conftest import judge, member


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()


def test_a_grown_roster_is_the_roster_read_whole_after_each_change(demo_runs, reviewer, lead):
    runs = list(Run.objects.filter(run_id__in=["q017-r1", "q017-r2"]).order_by("run_id"))
    assert grown(runs) == roster_of(runs=runs)
    claims = list(Claim.objects.filter(response__run__in=runs).order_by("pk"))
    newcomer = member("newcomer")
    changes = [
        lambda: judge(claims[0], reviewer, "supported"),
        lambda: judge(claims[1], newcomer, "partial"),  # a new author
        lambda: judge(claims[2], lead, "supported", adjudication=True),  # settles, no label
        lambda: Membership.objects.filter(user=newcomer).delete(),  # a former member
        lambda: member("joiner", Role.LEAD),  # a member who never labelled
    ]
    for change in changes:
        change()
        assert grown(runs) == roster_of(runs=runs)
    assert "newcomer" in grown(runs).accounts


def test_a_grown_roster_reads_only_what_was_saved_since(
    demo_runs, reviewer, django_assert_num_queries
):
    runs = [Run.objects.get(run_id="q017-r1")]
    before = runs_state(runs=runs, scope="test").verdicts_upto
    grown_roster(runs=runs, upto=before)
    judge(Claim.objects.filter(response__run__in=runs).first(), reviewer, "supported")
    upto = runs_state(runs=runs, scope="test").verdicts_upto
    with django_assert_num_queries(1) as reads:  # the members and the verdicts since
        grown_roster(runs=runs, upto=upto)
    sql = reads.captured_queries[0]["sql"]
    assert f'"cards_verdictrevision"."id" > {before}' in sql
    assert f'"cards_verdictrevision"."id" <= {upto}' in sql
    with django_assert_num_queries(1):  # nothing new: the members only
        grown_roster(runs=runs, upto=upto)


def test_a_state_older_than_what_was_read_is_given_what_roster_of_reads(demo_runs, reviewer):
    """A request that read its state before another one grew the roster further (both in
    flight at once) gets the roster as read now, as `roster_of` would give it: nothing
    is read again."""
    runs = [Run.objects.get(run_id="q017-r1")]
    older = runs_state(runs=runs, scope="test").verdicts_upto
    judge(Claim.objects.filter(response__run__in=runs).first(), member("later"), "supported")
    grown(runs)  # the newer state grows it first
    assert grown_roster(runs=runs, upto=older) == roster_of(runs=runs)


def test_runs_without_a_verdict_read_the_members_only(project, reviewer):
    from tests.conftest import import_fixture

    import_fixture("pro-plan.jsonl")  # no claims, no verdicts
    runs = [Run.objects.get(run_id="pro-plan-r1")]
    assert runs_state(runs=runs, scope="test").verdicts_upto is None
    assert grown(runs) == roster_of(runs=runs)
    assert "alice" in grown(runs).accounts


def grown(runs):
    return grown_roster(runs=runs, upto=runs_state(runs=runs, scope="test").verdicts_upto)
