"""The state of a run, which keys every cached figure and comparison, changes with every
committed write, even one that commits after a later write was read (cards.run_writes).

A row's id is given when it is inserted, not when its transaction commits: a write in a
slow transaction gets a lower id than one made after it by someone else and committed
first. A state read between the two commits, kept as the key of figures computed without
the slow write, would still be the key once it commits, and the figures would stay stale
until the next write. Each write path is tried: a slow write holds its transaction open
while another of the same kind, on another case of the run, commits; then the state is
read, and the figures it would key are counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, transaction

from cards.models import Claim, ClaimRevision, ResponseReview, Unblinding, VerdictRevision
from cards.run_state import runs_state
from cards.services.claims import claim_create, claim_revise
from cards.services.reviews import response_mark_complete, unblinding_create
from cards.services.verdicts import verdict_save
from evidence.models import Project, Role
from replay.models import Response, Run
from tests.cards.conftest import member
from tests.conftest import import_fixture

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: two writers at once (SQLite has one writer at a time)",
    ),
    pytest.mark.django_db(transaction=True),
]


def _verdict(claim: Claim, person) -> None:
    verdict_save(
        claim=claim, author=person, support="supported", reason="It says so.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip


def _split(claim: Claim, person) -> None:
    claim_create(response=claim.response, author=person, text="Another claim.", spans=[[0, 4]])


def _revise(claim: Claim, person) -> None:
    claim_revise(claim=claim, author=person, seen_claim_seq=1, reason="Clearer.", text="Reworded.")


def _mark(claim: Claim, person) -> None:
    response_mark_complete(response=claim.response, author=person)


def _unblind(claim: Claim, person) -> None:
    unblinding_create(run=claim.response.run, lead=person, response=claim.response)


WRITES: dict[str, Callable[[Claim, object], None]] = {
    "verdict": _verdict,
    "claim split": _split,
    "claim revised": _revise,
    "review mark": _mark,
    "unblinding": _unblind,
}


def race[T](*, slow: Callable[[], None], fast: Callable[[], None], read: Callable[[], T]) -> T:
    """`slow` in a transaction held open in a thread of its own; meanwhile `fast` here, and
    then `read` in a third thread (it may wait for `slow`: then `slow` is let go after a
    second); what `read` gave."""
    inserted, release, errors, seen = threading.Event(), threading.Event(), [], []

    def slow_write() -> None:
        try:
            with transaction.atomic():
                slow()
                inserted.set()
                release.wait(timeout=30)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            inserted.set()
        finally:
            connection.close()

    writer = threading.Thread(target=slow_write)
    writer.start()
    try:
        assert inserted.wait(timeout=30)
        fast()
        reader = threading.Thread(target=lambda: seen.append(_closing(read)))
        reader.start()
        reader.join(timeout=1)  # a reader may wait for the slow write to commit
    finally:
        release.set()
        writer.join(timeout=30)
    reader.join(timeout=30)
    assert errors == []
    assert seen, "the reader never read"
    return seen[0]


def _closing[T](read: Callable[[], T]) -> T:
    try:
        return read()
    finally:
        connection.close()  # the thread's own connection


@pytest.mark.parametrize("write", WRITES)
def test_a_write_committed_after_a_later_one_changes_the_state(project, write):
    import_fixture("pro-plan.jsonl")
    run = Run.objects.get(run_id="pro-plan-r1")
    slow_person, fast_person = (member(name, Role.LEAD) for name in ("slow", "fast"))
    if write == "unblinding":
        Project.objects.filter(pk=run.project_id).update(blind_review=True)
    first, second = (
        claim_create(response=response, author=slow_person, text="A claim.", spans=[[0, 4]])
        for response in Response.objects.filter(run=run).order_by("pk")[:2]
    )
    _, base = _state_and_count(run)
    state, count = race(
        slow=lambda: WRITES[write](Claim.objects.get(pk=first.pk), slow_person),
        fast=lambda: WRITES[write](Claim.objects.get(pk=second.pk), fast_person),
        read=lambda: _state_and_count(run),
    )
    final_state, final_count = _state_and_count(run)
    assert final_count == base + 2  # both writes are in
    # The same key must mean the same rows: what the reader computed under its key is
    # served under the final key whenever the two are equal.
    assert state != final_state or count == final_count


def _state_and_count(run: Run) -> tuple[str, int]:
    """The state, then what figures computed under it would read (as the pages do)."""
    state = runs_state(runs=[run], scope="figures")
    count = sum(
        model.objects.filter(**{path: run}).count()
        for model, path in (
            (ClaimRevision, "claim__response__run"),
            (VerdictRevision, "claim__response__run"),
            (ResponseReview, "response__run"),
            (Unblinding, "run"),
        )
    )
    return state, count


def test_a_snapshot_committed_after_a_later_one_changes_the_state(project):
    """Snapshots arrive with imports, whose transactions last: the state counts them rather
    than wait for them (a newer snapshot may make a cited passage drift)."""
    import_fixture("pro-plan.jsonl")
    run = Run.objects.get(run_id="pro-plan-r1")
    state = race(
        slow=lambda: import_fixture("q017-r1.jsonl"),
        fast=lambda: import_fixture("policy-7.jsonl"),
        read=lambda: runs_state(runs=[run], scope="figures"),
    )
    assert runs_state(runs=[run], scope="figures") != state
