"""Drift: the same ref with another text (SHA-256) in another snapshot of the same project.

The one definition every page, figure, comparison and import uses. Drift is
derived, never stored: a snapshot is frozen, so a passage's text never changes
in place; a changed source arrives as a new snapshot with the same ref.
"""

from __future__ import annotations

from collections.abc import Collection

from django.db.models import Count, F, OuterRef, QuerySet, Subquery

from evidence.models import Passage
from evidence.rows import prepared_cursor


def drifted_from(
    *, project_id: int, snapshot_id: int, refs: Collection[str] | None = None
) -> QuerySet[Passage]:
    """Passages of the project's other snapshots whose text differs from this snapshot's text
    of the same ref, annotated with `mine` (this snapshot's SHA-256). One query.

    A ref this snapshot does not hold is not drift from it: there is nothing to differ from.
    """
    mine = Passage.objects.filter(snapshot_id=snapshot_id, ref=OuterRef("ref")).values("sha256")
    others = Passage.objects.filter(snapshot__project_id=project_id).exclude(
        snapshot_id=snapshot_id
    )
    if refs is not None:
        others = others.filter(ref__in=list(refs))
    return (
        others.annotate(mine=Subquery(mine[:1]))
        .filter(mine__isnull=False)
        .exclude(sha256=F("mine"))
    )


def drifted_refs_of(*, snapshot_id: int, project_id: int, refs: Collection[str]) -> set[str]:
    """The refs among `refs` whose text differs in another snapshot of the project."""
    if not refs:
        return set()
    rows = drifted_from(project_id=project_id, snapshot_id=snapshot_id, refs=refs)
    return set(rows.values_list("ref", flat=True))


# `drifted_from` for a few refs, as SQL: the case page and every card ask it on each
# load, and compiling the ORM's subquery cost more CPU than running it. The same rule: a
# passage of another snapshot of the project whose text differs from this snapshot's
# passage of the same ref (none: nothing to differ from).
NEWER_DRIFT = """
SELECT o.ref, s.name, s.created_at > me.created_at
  FROM evidence_passage o
  JOIN evidence_snapshot s ON s.id = o.snapshot_id
  JOIN evidence_passage m ON m.snapshot_id = %s AND m.ref = o.ref
  JOIN evidence_snapshot me ON me.id = m.snapshot_id
 WHERE s.project_id = %s AND o.snapshot_id <> %s AND o.sha256 <> m.sha256 AND o.ref IN ({refs})
 ORDER BY s.created_at, s.id
"""


def newer_drift(*, project_id: int, snapshot_id: int, refs: Collection[str]) -> dict[str, str]:
    """Refs among `refs` whose text differs in another snapshot of the project → the newest
    such snapshot's name when it is newer than this one ("" when only older ones differ).
    One query."""
    refs = sorted(set(refs))
    if not refs:
        return {}
    sql = NEWER_DRIFT.format(refs=", ".join(["%s"] * len(refs)))
    with prepared_cursor() as cursor:
        cursor.execute(sql, [snapshot_id, project_id, snapshot_id, *refs])
        rows = cursor.fetchall()
    drifted: dict[str, str] = {}
    for ref, name, newer in rows:  # oldest first: a newer snapshot's name stays
        drifted[ref] = name if newer else drifted.get(ref, "")
    return drifted


def drift_between(*, snapshot_a: int, snapshot_b: int, project_id: int) -> dict[str, tuple]:
    """Refs held by both snapshots with different texts → (SHA-256 in a, SHA-256 in b)."""
    if snapshot_a == snapshot_b:
        return {}
    rows = drifted_from(project_id=project_id, snapshot_id=snapshot_a).filter(
        snapshot_id=snapshot_b
    )
    return {ref: (old, new) for ref, old, new in rows.values_list("ref", "mine", "sha256")}


def project_drifted_refs(*, project_id: int) -> QuerySet:
    """Every ref of the project with more than one text across its snapshots (`ref` values)."""
    return (
        Passage.objects.filter(snapshot__project_id=project_id)
        .values("ref")
        .annotate(texts=Count("sha256", distinct=True))
        .filter(texts__gt=1)
        .values_list("ref", flat=True)
    )


def drifted_later(*, project_id: int) -> QuerySet[Passage]:
    """Passages of the project whose ref has another text in a newer snapshot (by `created_at`,
    as the case page's re-review flag reads it), annotated with `drifted_at`: when the newest
    such snapshot was stored. One query, over the refs that have several texts only."""
    newer = (
        Passage.objects.filter(
            snapshot__project_id=project_id,
            ref=OuterRef("ref"),
            snapshot__created_at__gt=OuterRef("snapshot__created_at"),
        )
        .exclude(sha256=OuterRef("sha256"))
        .order_by("-snapshot__created_at")
        .values("snapshot__created_at")
    )
    return (
        Passage.objects.filter(
            snapshot__project_id=project_id, ref__in=project_drifted_refs(project_id=project_id)
        )
        .annotate(drifted_at=Subquery(newer[:1]))
        .filter(drifted_at__isnull=False)
    )
