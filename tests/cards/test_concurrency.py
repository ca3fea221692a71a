"""Many people saving on one claim at once: nothing lost, no number used twice, the chain intact.

Real threads, each with its own PostgreSQL connection, started together by a
barrier so their transactions overlap. The claim row lock (SELECT … FOR UPDATE)
is what serialises them; the cross-table seq trigger would turn a race into an
IntegrityError, which the threads would report.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection

from cards.models import Claim, ClaimRevision, Support, VerdictRevision
from cards.services.claims import claim_create, claim_revise
from cards.services.guards import StaleCard
from cards.services.verdicts import verdict_save
from tests.cards.conftest import FINAL_SALE, assert_chain_holds, member

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason=(
            "needs PostgreSQL: row locks and one connection per thread; SQLite's in-memory "
            "test database is one connection and BEGIN IMMEDIATE serialises every writer anyway"
        ),
    ),
    pytest.mark.django_db(transaction=True),
]

PEOPLE = 8
SAVES_EACH = 5
LABELS = Support.values


def run_together(work: Callable[[int], None], count: int) -> None:
    """Run work(0) … work(count - 1) in threads released at the same moment; re-raise errors."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def runner(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            work(index)
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread below
            errors.append(exc)
        finally:
            connection.close()  # each thread opened its own connection

    threads = [threading.Thread(target=runner, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    assert errors == []


def test_concurrent_verdicts_are_each_stored_once_in_one_contiguous_chain(claim):
    people = [member(f"reviewer{i}") for i in range(PEOPLE)]
    saved: list[tuple[str, int]] = []

    def save_several(index: int) -> None:
        person, own = people[index], None
        mine = Claim.objects.get(pk=claim.pk)
        for n in range(SAVES_EACH):
            verdict = verdict_save(
                claim=mine, author=person, support=LABELS[(index + n) % 4],
                reason=f"{person.username} save {n}", seen_claim_seq=1, seen_own_seq=own,
            )  # fmt: skip
            own = verdict.seq
            saved.append((verdict.reason, verdict.seq))

    run_together(save_several, PEOPLE)

    total = PEOPLE * SAVES_EACH
    verdicts = list(VerdictRevision.objects.filter(claim=claim).order_by("seq"))
    assert len(saved) == len(verdicts) == total
    expected = {f"reviewer{i} save {n}" for i in range(PEOPLE) for n in range(SAVES_EACH)}
    assert sorted(v.reason for v in verdicts) == sorted(expected)
    assert (
        sorted(seq for _, seq in saved) == [v.seq for v in verdicts] == list(range(2, total + 2))
    )
    assert assert_chain_holds(claim) == total + 1
    for person in people:
        own = [v for v in verdicts if v.author_id == person.pk]
        assert [v.reason for v in own] == [f"{person.username} save {n}" for n in range(5)]
        assert [v.supersedes_id for v in own] == [None, *(v.pk for v in own[:-1])]


def test_concurrent_rewrites_and_verdicts_share_one_counter(claim, lead):
    people = [member(f"reviewer{i}") for i in range(PEOPLE - 1)]
    refused_as_stale: list[str] = []

    def work(index: int) -> None:
        mine = Claim.objects.get(pk=claim.pk)
        if index == 0:
            seen = 1
            for n in range(SAVES_EACH):
                seen = claim_revise(
                    claim=mine, author=lead, seen_claim_seq=seen, text=f"Text {n}.",
                    reason=f"Rewrite {n}.",
                ).seq  # fmt: skip
            return
        person, own = people[index - 1], None
        for n in range(SAVES_EACH):
            while True:  # a stale card is reloaded and saved again, as a person would
                seen = ClaimRevision.objects.filter(claim=claim).order_by("-seq").first().seq
                try:
                    own = verdict_save(
                        claim=mine, author=person, support="partial",
                        reason=f"{person.username} save {n}", seen_claim_seq=seen,
                        seen_own_seq=own,
                    ).seq  # fmt: skip
                    break
                except StaleCard:
                    refused_as_stale.append(person.username)

    run_together(work, PEOPLE)

    verdicts = VerdictRevision.objects.filter(claim=claim)
    assert verdicts.count() == (PEOPLE - 1) * SAVES_EACH
    assert ClaimRevision.objects.filter(claim=claim).count() == SAVES_EACH + 1
    assert len(set(verdicts.values_list("reason", flat=True))) == (PEOPLE - 1) * SAVES_EACH
    assert assert_chain_holds(claim) == (PEOPLE - 1) * SAVES_EACH + SAVES_EACH + 1


def test_a_stale_save_under_contention_stores_nothing(claim):
    people = [member(f"reviewer{i}") for i in range(PEOPLE)]
    outcomes: list[str] = []

    def save_twice_from_one_form(index: int) -> None:
        # Two windows of the same person, both loaded before either saved.
        mine = Claim.objects.get(pk=claim.pk)
        for window in range(2):
            try:
                verdict_save(
                    claim=mine, author=people[index], support="supported",
                    reason=f"window {window}", seen_claim_seq=1, seen_own_seq=None,
                )  # fmt: skip
                outcomes.append("saved")
            except StaleCard:
                outcomes.append("stale")

    run_together(save_twice_from_one_form, PEOPLE)

    assert sorted(outcomes) == ["saved"] * PEOPLE + ["stale"] * PEOPLE
    assert VerdictRevision.objects.filter(claim=claim).count() == PEOPLE
    assert assert_chain_holds(claim) == PEOPLE + 1


def test_concurrent_splits_of_one_answer_get_distinct_keys(replay_response):
    people = [member(f"reviewer{i}") for i in range(PEOPLE)]

    def split(index: int) -> None:
        claim_create(
            response=replay_response, author=people[index], text=f"Claim by {index}.",
            spans=[FINAL_SALE],
        )  # fmt: skip

    run_together(split, PEOPLE)

    claims = Claim.objects.filter(response=replay_response)
    assert sorted(claims.values_list("key", flat=True)) == sorted(
        f"c{i}" for i in range(1, PEOPLE + 1)
    )
    assert sorted(claims.values_list("position", flat=True)) == list(range(1, PEOPLE + 1))
