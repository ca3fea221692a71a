"""What the run dashboard draws and downloads (cards/dashboard.py)."""

from __future__ import annotations

import csv
import io

from cards.dashboard import figures_csv
from cards.figures import CLAIM_FIGURES
from cards.metrics import run_metrics
from replay.models import Run
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def test_the_csv_columns_are_those_of_every_response_not_only_the_first(project):
    lines = synthetic_bundle(run_id="mixed", cases=2, passages=7, claims=1)
    first = next(line for line in lines if line["kind"] == "response")
    # The first response abstained and retrieved nothing: it has no figure at k = 7.
    first.update(text="", abstained=True, retrieved=[], citations=[], claims=[])
    import_bytes(bundle_bytes(*lines))
    rows = list(csv.reader(io.StringIO(figures_csv(run_metrics(run=Run.objects.get())))))
    header = rows[1]
    abstained, answered = (dict(zip(header, row, strict=True)) for row in rows[2:])
    ks = (1, 2, 3, 4, 5, 7, 10)
    retrieval = [
        f"{name}@{k}"
        for k in ks
        for name in ("passage_recall", "doc_recall", "fact_evidence_recall")
    ]
    assert header[
        header.index("verdicts_no_consensus") + 1 : header.index("invented_over_gap")
    ] == [f"{name}_{part}" for name in (*CLAIM_FIGURES, *retrieval) for part in ("k", "n")]
    assert (answered["passage_recall@7_k"], answered["passage_recall@7_n"]) == ("1", "1")
    assert (abstained["passage_recall@7_k"], abstained["passage_recall@7_n"]) == ("", "")
    assert (abstained["passage_recall@1_k"], abstained["passage_recall@1_n"]) == ("0", "1")
    # Undefined (n = 0) is an empty cell, as it is null in the JSON.
    assert abstained["status"] == "abstention"
    assert (abstained["support_k"], abstained["support_n"]) == ("", "")
    assert (abstained["coverage_k"], abstained["coverage_n"]) == ("0", "1")


def test_a_cell_a_spreadsheet_would_run_is_quoted_in_the_figures_csv(project):
    # A case id may start with "-" (bundle.schema.json's id pattern): a spreadsheet would
    # read `-1-2` as a formula. The figures CSV quotes it as the audit package's cards.csv
    # does (evidence/spreadsheet.py); the JSON keeps the id.
    lines = synthetic_bundle(run_id="ids", cases=1, claims=1)
    for line in lines:
        if line.get("case_id") == "case-0":
            line["case_id"] = "-1-2"
    import_bytes(bundle_bytes(*lines))
    figures = run_metrics(run=Run.objects.get())
    rows = list(csv.reader(io.StringIO(figures_csv(figures))))
    assert [row[0] for row in rows[2:]] == ["'-1-2"]
    assert [r["case_id"] for r in figures.per_response] == ["-1-2"]
