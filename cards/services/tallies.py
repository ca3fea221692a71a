"""The stored figures (`ClaimTally`, `ResponseTally`, `RunTally`), kept current by every write.

Each write that changes what the default-source figures read calls one of these in its
own transaction: a verdict or an adjudication (`verdict_insert_chosen`, one UPDATE of its claim's
row, under the claim lock the save holds already), a claim split, rewrite, relink or
withdrawal (`claims_refresh`), a review mark (`response_reviewed`), an import
(`ingest.tallies`, batch by batch through `RunTallies` and the rules here), a rebuild
(`run_tallies_store`). No row here is shared by two claims, so saves on different claims
of one response never wait for each other (docs/decisions.md, "Stored figures").

`claim_tally` is the one rule that turns a claim's revisions into its row; the reference
test recomputes every row with it from scratch and compares.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import connection
from django.db.models import Model, Q

from cards.figures import (
    ClaimState,
    Totals,
    as_stored,
    chooser,
    retrieval_totals,
    stored_retrieval,
)
from cards.metrics import (
    STATE_COLUMNS,
    VERDICT_COLUMNS,
    Lockstep,
    claim_state,
    iter_response_figures,
    verdict_of,
)
from cards.models import ClaimRevision, ClaimTally, ResponseTally, RunTally, VerdictRevision
from cards.prechecks import ClaimFacts, PassageFacts, ResponseFacts, claim_prechecks
from cards.progress import is_reviewed
from cards.rules import default_association
from cards.run_writes import announce_write, lock_for_write, ordered
from cards.verdicts import Source
from evidence.canonical import compact_str
from evidence.models import Passage
from evidence.rows import insert, insert_then
from replay.models import Citation, Response, Retrieval, Run

CHUNK = 2000
USEFUL = frozenset({"necessary", "redundant"})
_DEFAULT = chooser(Source())


def claim_tally(claim: ClaimState, hints: list[str]) -> dict[str, Any]:
    """What the default-source figures read of a claim (its newest revision, its verdicts
    newest first, its pre-check codes): the fields of its `ClaimTally` but run and response."""
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
        "hints": hints,
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


def verdict_insert_chosen(
    verdict: VerdictRevision, *, fields: dict[str, Any] | None
) -> VerdictRevision:
    """INSERT a verdict revision; when the default source counts it (`fields`, from
    `verdict_fields`), its claim's row follows in the same round trip (`insert_then`).

    One UPDATE of the claim's own row, under the claim lock the save holds: no other save
    waits for it. A claim without a row (made before the rows existed) gets its row whole.
    """
    if fields is None:
        return insert(verdict)
    params = [*(fields[name] for name in CHOSEN_FIELDS), verdict.claim_id]
    verdict, updated = insert_then(verdict, VERDICT_CHOSEN, params)
    if not updated:
        run = Run.objects.get(responses__claims=verdict.claim_id)
        claims_refresh(run=run, claim_pks=[verdict.claim_id])
    return verdict


# As SQL, prepared (evidence.rows): on the save's hot path, the ORM's UPDATE cost more CPU to
# build than to run, and PostgreSQL planned it again on every save.
CHOSEN_FIELDS = ("support", "attached", "diagnosis", "judged_citations", "useful_citations")
VERDICT_CHOSEN = """
UPDATE cards_claimtally
   SET support = %s, attached = %s, diagnosis = %s, judged_citations = %s,
       useful_citations = %s
 WHERE claim_id = %s"""


def claims_refresh(*, run: Run, claim_pks: list[int]) -> None:
    """Recompute the rows of these claims of `run` from their revisions and evidence."""
    for rows in _claim_rows(run, Q(claim_id__in=claim_pks)):
        ClaimTally.objects.bulk_create(
            [ClaimTally(**row) for row in rows],
            update_conflicts=True,
            unique_fields=["claim"],
            update_fields=[name.removesuffix("_id") for name in CLAIM_NAMES[1:]],
        )


def lock_response_tally(*, response: Response) -> None:
    """Lock the response's row until the transaction ends, before a review mark is stored.

    The newest mark counts: two marks at once must store their rows and update this one in
    the same order, or the row would keep the older mark's answer. SQLite needs no lock
    (one writer at a time).
    """
    # The write announced to its run in the same statement (cards.run_writes); by the
    # response itself when it has no stored row yet (`response_reviewed` then makes it).
    if ordered() and not lock_for_write(
        "cards_responsetally", run_column="run_id", where="response_id = %s",
        params=[response.pk],
    ):  # fmt: skip
        announce_write(response_pk=response.pk)


def response_reviewed(*, response: Response, complete: bool) -> None:
    """A review mark was saved: the response's `reviewed` follows (metrics.md)."""
    reviewed = is_reviewed(complete=complete, abstained=response.abstained, text=response.text)
    if not ResponseTally.objects.filter(response=response).update(reviewed=reviewed):
        run_tallies_store(run=response.run)


Rows = tuple[type[Model], tuple[str, ...], list[tuple]]
CLAIM_NAMES = (
    "claim_id", "run_id", "response_id", "current", "kind", "support", "attached",
    "diagnosis", "judged_citations", "useful_citations", "facts", "gaps", "hints",
)  # fmt: skip
RESPONSE_NAMES = (
    "response_id", "run_id", "reviewed", "fact_ids", "gap_ids", "retrieval", "hints",
    "cited_refs",
)  # fmt: skip
JSON_NAMES = frozenset(
    {"facts", "gaps", "hints", "fact_ids", "gap_ids", "retrieval", "cited_refs"}
)


def run_tallies_store(*, run: Run) -> None:
    """Every stored row of a run, computed from scratch from what is stored, replacing its
    rows: a rebuild (an import makes its rows as it writes: ingest.tallies)."""
    for model in (ClaimTally, ResponseTally, RunTally):
        model.objects.filter(run=run).delete()
    for model, names, rows in run_tally_rows(run=run):
        _insert_rows(model, names, rows)


def run_tally_rows(*, run: Run) -> Iterator[Rows]:
    """The stored rows of a run as (model, field names, rows), a batch at a time; JSON
    values as text, as a bulk writer takes them."""
    tallies = RunTallies(run_pk=run.pk)
    for rows in _claim_rows(run, Q(claim__response__run=run)):
        yield tallies.claims(rows)
    for batch in itertools.batched(_response_rows(run), CHUNK):
        yield tallies.responses(list(batch))
    yield tallies.run()


class RunTallies:
    """A run's stored rows as a bulk writer takes them, made a batch at a time: its claims'
    rows and its responses' (fields as `claim_tally` and `response_tally` give them), then
    the run's own, summed over the responses' rows. The rebuild and the import both make
    them so."""

    def __init__(self, *, run_pk: int) -> None:
        self.run_pk = run_pk
        self.totals = Totals()

    def claims(self, rows: list[dict[str, Any]]) -> Rows:
        return ClaimTally, CLAIM_NAMES, [_as_text(row, CLAIM_NAMES) for row in rows]

    def responses(self, rows: list[dict[str, Any]]) -> Rows:
        for row in rows:
            self.totals.add({"status": "unreviewed", **stored_retrieval(row["retrieval"])})
        return ResponseTally, RESPONSE_NAMES, [_as_text(row, RESPONSE_NAMES) for row in rows]

    def run(self) -> Rows:
        retrieval = compact_str(retrieval_totals(self.totals.result()))
        return RunTally, ("run_id", "retrieval"), [(self.run_pk, retrieval)]


def retrieval_totals_store(*, run: Run) -> None:
    """A run's retrieval totals summed again from its responses' stored rows, as an import
    sums them (`RunTallies`): the migration that rounds macro means exactly."""
    totals = Totals()
    for retrieval in (
        ResponseTally.objects.filter(run=run)
        .order_by("response")
        .values_list("retrieval", flat=True)
        .iterator(chunk_size=CHUNK)
    ):
        totals.add({"status": "unreviewed", **stored_retrieval(retrieval)})
    RunTally.objects.filter(run=run).update(retrieval=retrieval_totals(totals.result()))


def tallies_rebuild() -> None:
    """Every stored row of every run, from scratch (the migration that adds them)."""
    for run in Run.objects.order_by("pk"):
        run_tallies_store(run=run)


def _as_text(row: dict[str, Any], names: tuple[str, ...]) -> tuple:
    """The row's values, its JSON columns as text, written as the import writes its other
    JSON columns (`compact_str`: orjson where it writes what json.dumps would)."""
    return tuple(compact_str(row[name]) if name in JSON_NAMES else row[name] for name in names)


def _insert_rows(model: type[Model], names: tuple[str, ...], rows: list[tuple]) -> None:
    """INSERT the rows of a rebuild."""
    columns = ", ".join(connection.ops.quote_name(model._meta.get_field(n).column) for n in names)
    marks = ", ".join(["%s"] * len(names))
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {model._meta.db_table} ({columns}) VALUES ({marks})",  # noqa: S608
            rows,
        )


def _response_rows(run: Run) -> Iterator[dict[str, Any]]:
    """Each response's `ResponseTally` fields: its retrieval figures and response pre-checks,
    from the streaming computation (the reference), its review state, facts and gaps."""
    responses = (
        Response.objects.filter(run=run)
        .order_by("pk")
        .values_list("pk", "expectation__required_facts", "expectation__known_gaps")
        .iterator(chunk_size=CHUNK)
    )
    cited = Lockstep(
        Citation.objects.filter(response__run=run)
        .order_by("response_id", "position")
        .values_list("response_id", "passage__ref")
        .iterator(chunk_size=CHUNK)
    )
    # The streaming pass, in response order, with neither claims nor drift: retrieval and
    # the response's own pre-checks read neither, and `reviewed` is not a claim figure.
    figures_of = iter_response_figures(run=run, source=Source(), claims=False, drift=False)
    for (pk, facts, gaps), figures in zip(responses, figures_of, strict=True):
        yield response_tally(
            response_pk=pk, run_pk=run.pk, figures=figures, facts=facts, gaps=gaps,
            cited_refs=[ref for _, ref in cited.take(pk)],
        )  # fmt: skip


def response_tally(
    *, response_pk: int, run_pk: int, figures: dict[str, Any], facts: list[dict],
    gaps: list[dict], cited_refs: list[str],
) -> dict[str, Any]:  # fmt: skip
    """A response's `ResponseTally` fields, from its figures (`one_response_figures`, with
    neither claims nor drift), its expectation's facts and gaps, its citations' refs."""
    return {
        "response_id": response_pk,
        "run_id": run_pk,
        "reviewed": figures["status"] != "unreviewed",
        "fact_ids": [f["fact_id"] for f in facts],
        "gap_ids": [g["gap_id"] for g in gaps],
        "retrieval": [
            [name, as_stored(value)]
            for name, value in figures.items()
            if "@" in name or name == "context_precision"
        ],
        "hints": [
            [code, details]
            for code, details in figures["prechecks"]["response"].items()
            if code != "passage_drift"
        ],
        "cited_refs": list(dict.fromkeys(cited_refs)),
    }


def _claim_rows(run: Run, scope: Q) -> Iterator[list[dict[str, Any]]]:
    """The `ClaimTally` fields of the claims of `run` in `scope`, from their revisions and
    evidence, a batch at a time (an import's 50,000 claims never sit in memory together)."""
    for batch in itertools.batched(_claim_states(scope), CHUNK):
        hints = _claim_hints(run, batch)
        yield [
            {
                "claim_id": claim_pk,
                "run_id": run.pk,
                "response_id": response_pk,
                **claim_tally(state, hints[claim_pk]),
            }
            for claim_pk, response_pk, state in batch
        ]


def _claim_hints(run: Run, states: Iterable[tuple[int, int, ClaimState]]) -> dict[int, list[str]]:
    """Each claim's pre-check codes, as the figures' pre-checks give them: from the passages
    of the run's snapshot it cites, and whether its response retrieved them."""
    retrieved: dict[int, set[str]] = defaultdict(set)
    for response_pk, ref in Retrieval.objects.filter(
        response_id__in={response_pk for _, response_pk, _ in states}
    ).values_list("response_id", "passage__ref"):
        retrieved[response_pk].add(ref)
    refs = sorted({ref for _, _, state in states for ref in state.citations})
    passages: dict[str, PassageFacts] = {}
    for start in range(0, len(refs), CHUNK):
        for ref, numbers, status in Passage.objects.filter(
            snapshot_id=run.snapshot_id, ref__in=refs[start : start + CHUNK]
        ).values_list("ref", "numbers", "version_status"):
            passages[ref] = PassageFacts(ref, frozenset(numbers.split()), status)
    return claim_hints(states, passages, retrieved)


def claim_hints(
    states: Iterable[tuple[int, int, ClaimState]], passages: dict[str, PassageFacts],
    retrieved: dict[int, set[str]],
) -> dict[int, list[str]]:  # fmt: skip
    """Each claim's pre-check codes, by claim: from the passages of the run's snapshot it
    cites (`passages`, by ref) and the refs its response retrieved (by response)."""
    facts = ResponseFacts(
        answer="", marker_spans=(), cited_refs=(), retrieved=(), passages=passages,
        relevant_refs=(),
    )  # fmt: skip
    return {
        claim_pk: claim_prechecks(
            ClaimFacts(state.key, state.kind, state.text, state.citations),
            facts,
            retrieved.get(response_pk, set()),
        )
        for claim_pk, response_pk, state in states
    }


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
