"""The stored figures of an imported run, made from each batch's rows as they are written.

The import used to read its whole run back once written (`run_tallies_store`, a third of
an import's time). Every row those figures read is in hand when a batch is written: the
responses, their ranked retrieval and citations, the claims' first revisions and their
verdicts, and the facts of every passage they name. So each batch's `ClaimTally` and
`ResponseTally` rows are made from them, through the same rules as the reference
(`cards.metrics.one_response_figures`, `cards.services.tallies.claim_tally`,
`.claim_hints`, `.response_tally`), and the run's own row once the last batch is in.
`tests/cards/test_tallies.py` recomputes every row of imported runs from scratch and
compares.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

from cards.figures import ref_document
from cards.metrics import claim_state, one_response_figures, verdict_of
from cards.prechecks import PassageFacts
from cards.services.tallies import (
    RunTallies,
    claim_hints,
    claim_tally,
    response_tally,
)
from cards.verdicts import Source
from evidence.models import Expectation
from ingest.bulk import RowWriter
from ingest.responses import ResponseRows
from ingest.rules import ResponseSeen

_DEFAULT = Source()


class Known(NamedTuple):
    """What the figures read of a passage the batch names (`ingest.writer`)."""

    pk: int
    facts: PassageFacts
    doc_id: str


def known(pk: int, ref: str, doc_id: str, status: str, numbers: str) -> Known:
    return Known(pk, PassageFacts(ref, frozenset(numbers.split()), status), doc_id)


class ImportTallies:
    """A run's stored rows, written batch by batch with its other rows."""

    def __init__(self, *, rows: RowWriter, run_pk: int) -> None:
        self.rows = rows
        self.tallies = RunTallies(run_pk=run_pk)
        self.held: tuple | None = None  # the batch written last, its rows not made yet

    def hold(
        self, pending: list[ResponseSeen], batch: ResponseRows, passages: dict[str, Known]
    ) -> None:
        """Keep a batch of responses, whose passages are `passages` (by ref), for `make`;
        what it needs of the database is read now."""
        self.held = (pending, batch, passages, _expectations(pending))

    def make(self) -> None:
        """The rows of the batch held, written. Needs no database but to write them: the
        import makes them while PostgreSQL stores the batch (`RowWriter.send`), and they go
        with the next one, once the rows they name are stored."""
        if self.held is not None:
            held, self.held = self.held, None
            self.add(*held)

    def add(
        self, pending: list[ResponseSeen], batch: ResponseRows, passages: dict[str, Known],
        expectations: dict[int, dict],
    ) -> None:  # fmt: skip
        """The rows of a batch of responses, whose passages are `passages` (by ref)."""
        run_pk = self.tallies.run_pk
        by_pk = {k.pk: k.facts for k in passages.values()}
        facts_by_ref = {ref: k.facts for ref, k in passages.items()}
        # An imported passage's ref is doc_id@version#chunk_id (the rules refuse another):
        # the document of a ref is its prefix, but for a passage stored otherwise.
        doc_of = {
            ref: k.doc_id
            for ref, k in passages.items()
            if k.doc_id and k.doc_id != ref_document(ref)
        }
        retrievals = _by(batch.retrievals)
        citations = _by(batch.citations)
        claims = _by(batch.claims)
        verdicts = _by(batch.verdicts, key="claim_id")
        revisions = {row.claim_id: row for row in batch.claim_revisions}
        reviewed = {row.response_id for row in batch.reviews}  # each one complete
        response_rows, claim_rows, states = [], [], []
        for seen, response in zip(pending, batch.responses, strict=True):
            expectation = expectations[seen.case.expectation_pk]
            ranked = sorted(retrievals.get(response.id, ()), key=lambda row: row.rank)
            ranked_facts = [by_pk[row.passage_id] for row in ranked]
            cited = [
                (by_pk[c.passage_id].ref, c.start, c.end) for c in citations.get(response.id, ())
            ]
            figures = one_response_figures(
                text=response.text, abstained=response.abstained,
                complete=True if response.id in reviewed else None, expectation=expectation,
                claims=[], ranked=ranked_facts, cited=cited, passages=facts_by_ref,
                doc_of=doc_of, drifted=frozenset(), source=_DEFAULT,
            )  # fmt: skip
            response_rows.append(
                response_tally(
                    response_pk=response.id,
                    run_pk=run_pk,
                    figures=figures,
                    facts=expectation["required_facts"],
                    gaps=expectation["known_gaps"],
                    cited_refs=[ref for ref, _, _ in cited],
                )  # fmt: skip
            )
            for claim in claims.get(response.id, ()):
                r = revisions[claim.id]
                state = claim_state(
                    claim.key, r.kind, r.text, r.citations, r.facts, r.gaps, r.withdrawn
                )
                # Newest first, as the figures read a claim's verdicts.
                state.verdicts = [
                    verdict_of(v.annotator, v.origin, v.support, v.association,
                               v.citation_relevance, v.diagnosis, v.created_at)
                    for v in reversed(verdicts.get(claim.id, ()))
                ]  # fmt: skip
                states.append((claim.id, response.id, state))
        retrieved = {
            pk: {by_pk[row.passage_id].ref for row in rows} for pk, rows in retrievals.items()
        }
        hints = claim_hints(states, facts_by_ref, retrieved)
        for claim_pk, response_pk, state in states:
            claim_rows.append(
                {
                    "claim_id": claim_pk,
                    "run_id": run_pk,
                    "response_id": response_pk,
                    **claim_tally(state, hints[claim_pk]),
                }
            )
        # Claims' rows first: a response's row is summed into the run's as it is made.
        for model, names, rows in (
            self.tallies.claims(claim_rows),
            self.tallies.responses(response_rows),
        ):
            self.rows.write(model, names, rows)

    def finish(self) -> None:
        """The run's own row, once every response's is made."""
        self.rows.write(*self.tallies.run())


def _by(rows: Iterable[NamedTuple], key: str = "response_id") -> dict[int, list]:
    """Rows grouped by `key`, each group in the order its rows were made."""
    groups: dict[int, list] = defaultdict(list)
    for row in rows:
        groups[getattr(row, key)].append(row)
    return groups


def _expectations(pending: list[ResponseSeen]) -> dict[int, dict]:
    """Each response's expectation by id, decoded: from its case line when this batch read
    it, else (a case of an earlier batch) from the database."""
    found: dict[int, dict] = {}
    for seen in pending:
        if seen.case.document is not None:
            found[seen.case.expectation_pk] = seen.case.document
    missing = {seen.case.expectation_pk for seen in pending} - found.keys()
    for pk, facts, relevant, gaps in Expectation.objects.filter(pk__in=missing).values_list(
        "pk", "required_facts", "relevant_refs", "known_gaps"
    ):
        found[pk] = {"required_facts": facts, "relevant_refs": relevant, "known_gaps": gaps}
    return found
