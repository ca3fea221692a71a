"""Drift in the import summary: the same ref with another text in another snapshot."""

from __future__ import annotations

from evidence import drift
from evidence.canonical import text_sha256
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def passages_bundle(run_id: str, snapshot: str, count: int, wording: str) -> bytes:
    """A run whose snapshot holds `count` passages, `doc@v1#c0`…, worded by `wording`."""
    lines = synthetic_bundle(run_id=run_id, snapshot=snapshot, cases=0)
    for p in range(count):
        text = f"Passage {p}: {wording}."
        lines.append(
            {
                "kind": "passage", "ref": f"doc@v1#c{p}", "doc_id": "doc", "version": "v1",
                "chunk_id": f"c{p}", "text": text, "sha256": text_sha256(text),
            }
        )  # fmt: skip
    return bundle_bytes(*lines)


def test_drift_names_each_changed_ref_with_both_texts_across_batches(project, monkeypatch):
    monkeypatch.setattr("ingest.services.FLUSH_EVERY_PASSAGES", 3)
    import_bytes(passages_bundle("r1", "kb@1", 7, "the limit is 10 units"))
    summary = import_bytes(passages_bundle("r2", "kb@2", 7, "the limit is 12 units"))
    assert sorted(summary.drift, key=lambda entry: int(entry["ref"].split("#c")[1])) == [
        {
            "ref": f"doc@v1#c{p}",
            "snapshot": "kb@1",
            "sha256": text_sha256(f"Passage {p}: the limit is 10 units."),
            "this_sha256": text_sha256(f"Passage {p}: the limit is 12 units."),
        }
        for p in range(7)
    ]


def test_an_unchanged_text_in_another_snapshot_is_no_drift(project):
    import_bytes(passages_bundle("r1", "kb@1", 3, "the limit is 10 units"))
    assert import_bytes(passages_bundle("r2", "kb@2", 3, "the limit is 10 units")).drift == []


def test_the_summary_lists_at_most_1000_drifted_refs(project):
    import_bytes(passages_bundle("r1", "kb@1", 1001, "the limit is 10 units"))
    summary = import_bytes(passages_bundle("r2", "kb@2", 1001, "the limit is 12 units"))
    assert len(summary.drift) == 1000
    assert len({entry["ref"] for entry in summary.drift}) == 1000


def test_drift_is_not_looked_up_in_a_project_with_one_snapshot(project, monkeypatch):
    calls = []

    def spy(**kwargs):
        calls.append(kwargs["snapshot_id"])
        return drift.drifted_from(**kwargs)

    monkeypatch.setattr("ingest.writer.drifted_from", spy)
    import_bytes(passages_bundle("r1", "kb@1", 3, "the limit is 10 units"))
    import_bytes(passages_bundle("r2", "kb@1", 3, "the limit is 10 units"))
    assert calls == []
    import_bytes(passages_bundle("r3", "kb@2", 3, "the limit is 12 units"))
    assert len(calls) == 1
