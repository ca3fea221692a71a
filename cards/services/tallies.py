"""The stored figures (`ClaimTally`, `ResponseTally`, `RunTally`), kept current by every write.

Each write that changes what the default-source figures read calls one of these in its
own transaction: a verdict or an adjudication (`verdict_chosen`, one UPDATE of its claim's
row, under the claim lock the save holds already), a claim split, rewrite, relink or
withdrawal (`claims_refresh`), a review mark (`response_reviewed`), an import
(`run_tallies_store`). No row here is shared by two claims, so saves on different claims
of one response never wait for each other (docs/decisions.md, "Stored figures").

`claim_tally` is the one rule that turns a claim's revisions into its row; the reference
test recomputes every row with it from scratch and compares.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import Q

from cards.figures import (
    ClaimState,
    Totals,
    as_stored,
    chooser,
    retrieval_figures,
    retrieval_totals,
    stored_retrieval,
)
from cards.metrics import (
    STATE_COLUMNS,
    VERDICT_COLUMNS,
    Lockstep,
    claim_state,
    doc_exceptions,
    response_rows,
    verdict_of,
)
from cards.models import ClaimRevision, ClaimTally, ResponseTally, RunTally, VerdictRevision
from cards.prechecks import PassageFacts
from cards.progress import is_reviewed
from cards.rules import default_association
from cards.verdicts import Source
from evidence.fields import decoded
from replay.models import Response, Retrieval, Run

CHUNK = 2000
USEFUL = frozenset({"necessary", "redundant"})
TALLY_FIELDS = (
    "response", "current", "kind", "support", "attached", "diagnosis", "judged_citations",
    "useful_citations", "facts", "gaps",
)  # fmt: skip
RESPONSE_FIELDS = ("run", "reviewed", "fact_ids", "gap_ids", "retrieval")
_DEFAULT = chooser(Source())


def claim_tally(claim: ClaimState) -> dict[str, Any]:
    """What the default-source figures read of a claim (its newest revision, its verdicts
    newest first): the fields of its `ClaimTally`, but the response."""
    view = _DEFAULT(claim)
    return {
        "current": not claim.withdrawn,
        "kind": claim.kind,
        **verdict_fields(
            support=view.support if view else "",
            association=view.association if view else default_association(claim.citations),
            diagnosis=view.diagnosis if view else "",
            relevance=view.relevance if view else {},
            citations=claim.citations,
        ),
        "facts": list(claim.facts),
        "gaps": list(claim.gaps),
    }


def verdict_fields(
    *, support: str, association: str, diagnosis: str, relevance: dict[str, str],
    citations: Iterable[str],
) -> dict[str, Any]:  # fmt: skip
    """The fields of a `ClaimTally` that its chosen verdict decides."""
    # metrics.md: citation precision counts the relevance of the claim's own citations only.
    labels = [label for ref, label in relevance.items() if ref in set(citations)]
    return {
        "support": support,
        "attached": association == "attached",
        "diagnosis": diagnosis,
        "judged_citations": len(labels),
        "useful_citations": sum(label in USEFUL for label in labels),
    }


def verdict_chosen(*, claim_pk: int, fields: dict[str, Any]) -> None:
    """A verdict that the default source now counts was saved: its claim's row follows.

    One UPDATE of the claim's own row, under the claim lock the save holds: no other save
    waits for it. A claim without a row (made before the rows existed) gets its row whole.
    """
    if not ClaimTally.objects.filter(claim_id=claim_pk).update(**fields):
        claims_refresh(claim_pks=[claim_pk])


def claims_refresh(*, claim_pks: list[int]) -> None:
    """Recompute the rows of these claims from their revisions (a claim write)."""
    _store_claims(Q(claim_id__in=claim_pks))


def response_reviewed(*, response: Response, complete: bool) -> None:
    """A review mark was saved: the response's `reviewed` follows (metrics.md)."""
    reviewed = is_reviewed(complete=complete, abstained=response.abstained, text=response.text)
    if not ResponseTally.objects.filter(response=response).update(reviewed=reviewed):
        responses_store(responses=Response.objects.filter(pk=response.pk))


def run_tallies_store(*, run: Run) -> None:
    """Every stored row of a run, computed from scratch: after its import, or to rebuild."""
    _store_claims(Q(claim__response__run=run))
    responses_store(responses=Response.objects.filter(run=run))
    totals = Totals()
    for retrieval in (
        ResponseTally.objects.filter(run=run)
        .order_by("response")
        .values_list("retrieval", flat=True)
    ):
        totals.add({"status": "unreviewed", **stored_retrieval(retrieval)})
    RunTally.objects.update_or_create(
        run=run, defaults={"retrieval": retrieval_totals(totals.result())}
    )


def tallies_rebuild() -> None:
    """Every stored row of every run, from scratch (the migration that adds them)."""
    for run in Run.objects.order_by("pk"):
        run_tallies_store(run=run)


def responses_store(*, responses) -> None:
    """The `ResponseTally` of each response, from the response, its expectation, its last
    review mark and its ranked retrieval."""
    rows = response_rows(responses, "pk", "run_id")
    ranked = Lockstep(
        Retrieval.objects.filter(response__in=responses.values("pk"))
        .order_by("response_id", "rank")
        .values_list("response_id", "passage__ref")
        .iterator(chunk_size=CHUNK)
    )
    doc_of_run: dict[int, dict[str, str]] = {}
    tallies = []
    for pk, run_id, text, abstained, complete, facts, relevant, gaps in rows.iterator(
        chunk_size=CHUNK
    ):
        if run_id not in doc_of_run:
            doc_of_run[run_id] = doc_exceptions(Run.objects.get(pk=run_id))
        facts, relevant, gaps = decoded(facts), decoded(relevant), decoded(gaps)
        refs = [PassageFacts(ref, frozenset(), "") for _, ref in ranked.take(pk)]
        figures = retrieval_figures(refs, list(dict.fromkeys(relevant)), facts, doc_of_run[run_id])
        tallies.append(
            ResponseTally(
                response_id=pk,
                run_id=run_id,
                reviewed=is_reviewed(complete=complete, abstained=abstained, text=text),
                fact_ids=[f["fact_id"] for f in facts],
                gap_ids=[g["gap_id"] for g in gaps],
                retrieval=[[name, as_stored(value)] for name, value in figures.items()],
            )
        )
        if len(tallies) >= CHUNK:
            _upsert(
                ResponseTally, tallies, ("run", "reviewed", "fact_ids", "gap_ids", "retrieval")
            )
            tallies = []
    _upsert(ResponseTally, tallies, RESPONSE_FIELDS)


def _store_claims(scope: Q) -> None:
    tallies = [
        ClaimTally(claim_id=claim_pk, response_id=response_pk, **claim_tally(state))
        for claim_pk, response_pk, state in _claim_states(scope)
    ]
    for start in range(0, len(tallies), CHUNK):
        _upsert(ClaimTally, tallies[start : start + CHUNK], TALLY_FIELDS)


def _upsert(model, rows: list, fields: Iterable[str]) -> None:
    if rows:
        model.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=[model._meta.pk.name],
            update_fields=list(fields),
        )


def _claim_states(scope: Q) -> Iterator[tuple[int, int, ClaimState]]:
    """(claim, response, state) of each claim in `scope`: its newest revision, its verdicts
    newest first; two reads in claim order, walked together."""
    revisions = (
        ClaimRevision.objects.filter(scope)
        .order_by("claim_id", "-seq")
        .values_list("claim_id", "claim__response_id", *STATE_COLUMNS)
        .iterator(chunk_size=CHUNK)
    )
    verdicts = Lockstep(
        VerdictRevision.objects.filter(scope)
        .order_by("claim_id", "-seq")
        .values_list("claim_id", *VERDICT_COLUMNS)
        .iterator(chunk_size=CHUNK)
    )
    for claim_pk, rows in itertools.groupby(revisions, key=lambda row: row[0]):
        _, response_pk, *columns = next(rows)  # the newest revision
        state = claim_state(*columns)
        state.verdicts = [verdict_of(*verdict) for _, *verdict in verdicts.take(claim_pk)]
        yield claim_pk, response_pk, state
