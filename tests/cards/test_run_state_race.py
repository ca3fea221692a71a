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
import time
from collections.abc import Callable

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from cards.models import (
    Claim,
    ClaimRevision,
    ResponseReview,
    ResponseTally,
    Unblinding,
    VerdictRevision,
)
from cards.run_state import runs_state
from cards.run_writes import LOCKS, writes_settled
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


def _mark_untallied(claim: Claim, person) -> None:
    """A review mark on a response without its stored row (made by the mark itself)."""
    ResponseTally.objects.filter(response=claim.response).delete()
    _mark(claim, person)


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
    then `read` in a third thread; `slow` is let go once `read` has ended or is seen
    waiting for a lock (so the reader reads before the slow write commits unless it
    waits for it); what `read` gave."""
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
        deadline = time.monotonic() + 30
        while reader.is_alive() and not _a_lock_is_awaited() and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        release.set()
        writer.join(timeout=30)
    reader.join(timeout=30)
    assert errors == []
    assert seen, "the reader never read"
    return seen[0]


def _a_lock_is_awaited() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND locktype = 'advisory'"
            " AND classid = %s AND database = (SELECT oid FROM pg_database"
            " WHERE datname = current_database()))",
            [LOCKS],
        )
        return cursor.fetchone()[0]


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


# A response without its stored row is rebuilt with the whole run's rows by its mark, which
# every other write to the run then waits for: no race to stage. Each path, that one too,
# must still announce itself before its first row lock and its first insert.
ORDERED = {**WRITES, "review mark, no stored row": _mark_untallied}


@pytest.mark.parametrize("write", [name for name in ORDERED if name != "unblinding"])
def test_every_write_announces_itself_before_it_locks_or_inserts(project, write):
    import_fixture("pro-plan.jsonl")
    run = Run.objects.get(run_id="pro-plan-r1")
    person = member("writer", Role.LEAD)
    response = Response.objects.filter(run=run).order_by("pk").first()
    claim = claim_create(response=response, author=person, text="A claim.", spans=[[0, 4]])
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        ORDERED[write](Claim.objects.get(pk=claim.pk), person)
        with connection.cursor() as cursor:  # taken, not only asked for of no row
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND mode = 'ShareLock' AND classid = %s AND pid = pg_backend_pid()",
                [LOCKS],
            )
            assert cursor.fetchone()[0] == 1
    statements = [q["sql"] for q in queries.captured_queries]
    announced = next(
        i for i, sql in enumerate(statements) if "pg_advisory_xact_lock_shared" in sql
    )
    first = next(
        i for i, sql in enumerate(statements) if "FOR UPDATE" in sql or sql.startswith("INSERT")
    )
    assert announced <= first, statements[: first + 1]


def test_readers_lock_the_keys_in_the_keys_order():
    """Two readers must take their locks in one order, that of the keys themselves (a run's
    id modulo the int4 range), or two could wait for each other."""
    with CaptureQueriesContext(connection) as queries, writes_settled([2, 2**31]):
        pass
    [lock] = [q["sql"] for q in queries.captured_queries if "pg_advisory_xact_lock(" in q["sql"]]
    assert lock.index(f"{LOCKS}, 1)") < lock.index(f"{LOCKS}, 2)")  # 2³¹ is key 1
