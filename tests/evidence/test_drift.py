"""evidence.drift: the one definition of drift (metrics.md `passage_drift`, the comparison's
`passage_drift` reason, the drift page and the import summary all read it)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from evidence.canonical import text_sha256
from evidence.drift import (
    drift_between,
    drifted_from,
    drifted_refs_of,
    newer_drift,
    project_drifted_refs,
)
from evidence.models import Passage, Project, Snapshot

pytestmark = pytest.mark.django_db


def _passage(snapshot: Snapshot, ref: str, text: str) -> Passage:
    doc, rest = ref.split("@")
    version, chunk = rest.split("#")
    return Passage.objects.create(
        snapshot=snapshot, ref=ref, doc_id=doc, version=version, chunk_id=chunk, text=text,
        sha256=text_sha256(text),
    )  # fmt: skip


@pytest.fixture
def snapshots():
    project = Project.objects.create(slug="p", name="P")
    old = Snapshot.objects.create(project=project, name="2026-01")
    new = Snapshot.objects.create(project=project, name="2026-02")
    _passage(old, "D@v1#a", "Returns within 30 days.")
    _passage(new, "D@v1#a", "Returns within 14 days.")  # drifted
    _passage(old, "D@v1#b", "Same text.")
    _passage(new, "D@v1#b", "Same text.")  # identical: not drift
    _passage(new, "D@v1#c", "Only in the new snapshot.")  # nothing to differ from
    elsewhere = Project.objects.create(slug="q", name="Q")
    _passage(Snapshot.objects.create(project=elsewhere, name="x"), "D@v1#b", "Other project.")
    return project, old, new


def test_a_ref_with_another_text_in_another_snapshot_is_drift(snapshots):
    project, old, new = snapshots
    rows = drifted_from(project_id=project.pk, snapshot_id=old.pk)
    assert [(p.ref, p.snapshot_id, p.mine) for p in rows] == [
        ("D@v1#a", new.pk, text_sha256("Returns within 30 days."))
    ]


def test_the_same_text_a_missing_ref_and_another_project_are_not_drift(snapshots):
    project, old, new = snapshots
    assert drifted_refs_of(
        snapshot_id=new.pk, project_id=project.pk, refs=["D@v1#a", "D@v1#b", "D@v1#c"]
    ) == {"D@v1#a"}
    assert drifted_refs_of(snapshot_id=new.pk, project_id=project.pk, refs=[]) == set()


def test_drift_between_two_snapshots_names_both_hashes_in_order(snapshots):
    project, old, new = snapshots
    assert drift_between(snapshot_a=old.pk, snapshot_b=new.pk, project_id=project.pk) == {
        "D@v1#a": (text_sha256("Returns within 30 days."), text_sha256("Returns within 14 days."))
    }
    assert drift_between(snapshot_a=old.pk, snapshot_b=old.pk, project_id=project.pk) == {}


def test_drift_between_two_snapshots_can_be_asked_about_some_refs_only(snapshots):
    project, old, new = snapshots
    ask = {"snapshot_a": old.pk, "snapshot_b": new.pk, "project_id": project.pk}
    assert list(drift_between(**ask, refs=["D@v1#a", "D@v1#b"])) == ["D@v1#a"]
    assert drift_between(**ask, refs=["D@v1#b", "D@v1#c"]) == {}
    assert drift_between(**ask, refs=[]) == {}


def test_a_projects_drifted_refs_are_those_with_several_texts(snapshots):
    project, _, _ = snapshots
    assert list(project_drifted_refs(project_id=project.pk)) == ["D@v1#a"]


def test_newer_drift_names_the_newest_snapshot_that_changed_a_text_and_not_an_older_one(
    snapshots,
):
    project, old, new = snapshots
    refs = ["D@v1#a", "D@v1#b", "D@v1#c", "D@v1#z"]
    newest = Snapshot.objects.create(project=project, name="2026-03")
    _passage(newest, "D@v1#a", "Returns within 7 days.")
    _passage(newest, "D@v1#b", "Same text.")
    # Snapshots made in one transaction share a creation time: order them as time would.
    for months, snapshot in enumerate([old, new, newest]):
        Snapshot.objects.filter(pk=snapshot.pk).update(
            created_at=old.created_at + timedelta(days=31 * months)
        )
    assert newer_drift(project_id=project.pk, snapshot_id=old.pk, refs=refs) == {
        "D@v1#a": "2026-03"
    }
    assert newer_drift(project_id=project.pk, snapshot_id=newest.pk, refs=refs) == {
        "D@v1#a": ""
    }  # only older snapshots differ: drift, nothing newer to look at
    assert newer_drift(project_id=project.pk, snapshot_id=new.pk, refs=[]) == {}
    assert set(newer_drift(project_id=project.pk, snapshot_id=new.pk, refs=refs)) == (
        drifted_refs_of(snapshot_id=new.pk, project_id=project.pk, refs=refs)
    )
