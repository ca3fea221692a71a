"""What a comparison reads of two runs: each response as a `Side`, in a fixed number of
queries whatever the number of cases.

Both runs are read by the same queries (one scan of each table, not two), with only the
columns the comparison uses: whether the response counts as reviewed (the database form
of cards.progress's rule), its expectation (read once per expectation, which both runs
usually share), each claim's current revision and all its verdicts. Of the citations,
only those that can make a pair not comparable are read: those to a ref whose text
differs between the two snapshots. Answers are read only for the pairs a page shows.
No retrieval, no passages, no pre-checks: a comparison needs none of them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from types import MappingProxyType
from typing import Any

from django.db.models import BooleanField, DateTimeField, ExpressionWrapper, F, TextField, Value
from django.db.models.functions import Cast

from cards.blind import sightings
from cards.figures import ClaimState, Verdict, VerdictView
from cards.metrics import NO_CLAIMS, StoredClaims, stored_claim_sums
from cards.models import ClaimRevision, ClaimTally, ResponseTally, VerdictRevision
from cards.progress import latest_review_complete, reviewed_condition
from evidence.models import Expectation
from evidence.rows import plain_chunks, plain_rows
from replay.models import Citation, Response, Run

CHUNK = 20000  # rows made into tuples at a time (and, blind, a round trip's rows)
MANY_REFS = 500  # drifted refs from which every citation of the runs is read instead


@dataclass
class Side:
    """One run's response to a case."""

    response_id: int
    expectation_id: int
    # query, required_facts, relevant_refs, known_gaps (decoded JSON, shared: never mutate)
    expectation: dict[str, Any]
    reviewed: bool
    claims: list[ClaimState] = field(default_factory=list)  # by position, withdrawn too
    # Refs the response cites: at least every one whose text differs between the two
    # snapshots (the only ones that can make the pair not comparable).
    cited: set[str] = field(default_factory=set)
    answer: str = ""  # read for the pairs of a page only
    # Read from the stored figures (`read_stored_sides`): the default source's verdict of
    # each claim, in order (its verdicts are not read), and the diagnoses of all of them.
    chosen: list[VerdictView | None] | None = None
    diagnosed: frozenset[str] | None = None

    @property
    def facts(self) -> list[dict]:
        return self.expectation["required_facts"]

    @property
    def relevant(self) -> list[str]:
        return self.expectation["relevant_refs"]

    @property
    def diagnoses(self) -> frozenset[str]:
        """The diagnoses of every verdict of its claims (the page's diagnosis filters)."""
        if self.diagnosed is not None:
            return self.diagnosed
        return frozenset(
            v.diagnosis for claim in self.claims for v in claim.verdicts if v.diagnosis
        )


@functools.lru_cache(maxsize=65536)
def _decoded(text: str | None) -> Any:
    """JSON columns come as text and are decoded once per distinct value: most claims'
    `facts`, `gaps` and citations repeat. Shared results: never mutate them."""
    return None if text is None else json.loads(text)


def _text(name: str) -> Cast:
    # Read as text: Django's per-row JSON converters cost more than the decoding itself.
    return Cast(F(name), output_field=TextField())


def read_sides(
    *,
    runs: Sequence[Run],
    drifted: Collection[str],
    case_ids: Collection[str] | None = None,
    answers: bool = False,
) -> list[dict[str, Side]]:
    """Each run's responses by case id (of `case_ids` only, when given), in run order.

    `drifted`: the refs whose text differs between the runs' snapshots; citations of
    other refs are not read unless `answers` (a page's pairs, whose few citations are
    all read). Five queries, four without drift; more in a project that reviews blind.
    """
    responses = Response.objects.filter(run__in=[run.pk for run in runs])
    if case_ids is not None:  # by the project's unique (project, case_id) index
        responses = responses.filter(
            case__project_id=runs[0].project_id, case__case_id__in=list(case_ids)
        )
    columns = ["pk", "run_id", "case__case_id", "expectation_id", "reviewed"]
    rows = plain_chunks(
        responses.annotate(review_complete=latest_review_complete())
        .annotate(reviewed=ExpressionWrapper(reviewed_condition(), output_field=BooleanField()))
        .order_by("pk")
        .values_list(*columns, *(["text"] if answers else [])),
        CHUNK,
    )
    expected = _expectations(responses)
    by_run: dict[int, dict[str, Side]] = {run.pk: {} for run in runs}
    by_response: dict[int, Side] = {}
    for pk, run_id, case_id, expectation_id, reviewed, *text in rows:
        side = Side(pk, expectation_id, expected[expectation_id], bool(reviewed))
        if text:
            side.answer = text[0]
        by_run[run_id][case_id] = by_response[pk] = side
    scope: dict[str, Any] = (
        {"response__run__in": [run.pk for run in runs]}
        if case_ids is None
        else {"response_id__in": list(by_response)}
    )
    _read_claims(scope, by_run, by_response, runs, some=case_ids is not None)
    if answers or drifted:
        citations = Citation.objects.filter(**scope)
        if not answers and len(drifted) <= MANY_REFS:  # else all: a long IN list costs more
            citations = citations.filter(passage__ref__in=sorted(drifted))
        for response_id, ref in plain_chunks(
            citations.values_list("response_id", "passage__ref"), CHUNK
        ):
            by_response[response_id].cited.add(ref)
    return [by_run[run.pk] for run in runs]


def _read_claims(
    scope: dict[str, Any],
    by_run: dict[int, dict[str, Side]],
    by_response: dict[int, Side],
    runs: Sequence[Run],
    *,
    some: bool,
) -> None:
    """Each response's claims: their newest revisions in position order, with their
    verdicts newest first and, in a project that reviews blind, its clock."""
    claim_scope = {f"claim__{key}": value for key, value in scope.items()}
    # Unordered: sorting 100,000 revisions with their texts spilled to disk on the server
    # (0.2 of its 0.29 s); the newest revision per claim and the order by position are
    # found here instead.
    revisions = (
        ClaimRevision.objects.filter(**claim_scope)
        .order_by()
        .values_list(
            "claim__response_id",
            "claim__position",
            "claim_id",
            "seq",
            "claim__key",
            "kind",
            "text",
            _text("citations"),
            _text("facts"),
            _text("gaps"),
            "withdrawn",
        )  # fmt: skip
    )
    newest: dict[int, tuple] = {}
    for row in plain_chunks(revisions, CHUNK):
        held = newest.get(row[2])
        if held is None or row[3] > held[3]:
            newest[row[2]] = row
    claims: dict[int, ClaimState] = {}
    for response_id, _, claim_id, _, key, kind, text, cited, facts, gaps, withdrawn in sorted(
        newest.values(), key=itemgetter(0, 1, 2)
    ):  # by response, position, claim
        claims[claim_id] = state = ClaimState(
            key, kind, text, _decoded(cited), _decoded(facts), _decoded(gaps), bool(withdrawn)
        )  # SQLite's booleans are 0 and 1 read plain
        by_response[response_id].claims.append(state)
    del newest
    clocks = {
        run.pk: sightings(
            run=run,
            response_ids=[side.response_id for side in by_run[run.pk].values()] if some else None,
        )
        for run in runs
    }
    blind = any(clock.blind for clock in clocks.values())
    verdicts = (
        VerdictRevision.objects.filter(**claim_scope)
        .order_by("claim_id", "-seq")
        .values_list(
            "claim_id",
            "annotator",
            "origin",
            "support",
            "association",
            _text("citation_relevance"),
            "diagnosis",
            # Only blind review reads when a verdict was saved (cards.blind).
            "created_at" if blind else Value(None, output_field=DateTimeField()),
        )  # fmt: skip
    )
    for (
        claim_id,
        name,
        origin,
        support,
        association,
        relevance,
        diagnosis,
        at,
    ) in verdicts.iterator(chunk_size=CHUNK) if blind else plain_chunks(verdicts, CHUNK):
        state = claims.get(claim_id)
        if state is not None:
            state.verdicts.append(
                Verdict(name, origin, support, association, _decoded(relevance), diagnosis, at)
            )
    if blind:
        for run_pk, clock in clocks.items():
            for side in by_run[run_pk].values():
                sighted = clock.of(side.response_id)
                for state in side.claims:
                    state.sighted = sighted


def read_stored_sides(
    *, runs: Sequence[Run], drifted: Collection[str]
) -> tuple[list[dict[str, Side]], dict[int, StoredClaims]]:
    """`read_sides` of every response of the runs for the default source, from the stored
    figures (`ClaimTally`, `ResponseTally`) instead of every revision and verdict: each
    claim's key, kind, facts, gaps, withdrawal and chosen label, no text (`claim_texts`
    reads those a comparison needs), and each response's claim sums for the figures.

    Five queries, whatever the number of cases: the responses, their expectations, the
    claims' stored rows, the claim sums, the diagnoses of their verdicts.
    """
    run_ids = [run.pk for run in runs]
    rows = plain_rows(
        ResponseTally.objects.filter(run__in=run_ids)
        .order_by("response")
        .values_list(
            "response_id",
            "run_id",
            "response__case__case_id",
            "response__expectation_id",
            "reviewed",
            _text("fact_ids"),
            _text("gap_ids"),
            _text("cited_refs"),
        )  # fmt: skip
    )
    expected = _expectations(Response.objects.filter(run__in=run_ids))
    sums = stored_claim_sums(runs=runs)
    by_run: dict[int, dict[str, Side]] = {pk: {} for pk in run_ids}
    by_response: dict[int, Side] = {}
    stored: dict[int, StoredClaims] = {}
    for pk, run_id, case_id, expectation_id, reviewed, fact_ids, gap_ids, cited in rows:
        side = Side(pk, expectation_id, expected[expectation_id], bool(reviewed))
        # Only the refs that drifted can make a pair not comparable (as `read_sides`).
        side.cited = {ref for ref in _decoded(cited) if ref in drifted} if drifted else set()
        side.chosen, side.diagnosed = [], frozenset()
        by_run[run_id][case_id] = by_response[pk] = side
        stored[pk] = (
            bool(reviewed),
            _decoded(fact_ids),
            _decoded(gap_ids),
            sums.get(pk, NO_CLAIMS),
        )
    claims = plain_rows(
        ClaimTally.objects.filter(run__in=run_ids)
        .order_by("response_id", "claim__position", "claim_id")
        .values_list(
            "response_id",
            "claim__key",
            "kind",
            "current",
            "support",
            "attached",
            "diagnosis",
            _text("facts"),
            _text("gaps"),
        )  # fmt: skip
    )
    # 100,000 claims for two runs of 10,000 cases: what is the same in many is made once.
    # Their verdicts are not read (a tuple: appending to it fails, never shared silently)
    # and the chosen label of each (support, association, diagnosis) is one object.
    views: dict[tuple, VerdictView] = {}
    for response_id, key, kind, current, support, attached, diagnosis, facts, gaps in claims:
        side = by_response[response_id]
        side.claims.append(
            ClaimState(
                key,
                kind,
                "",
                _NONE,
                _decoded(facts),
                _decoded(gaps),
                not current,
                _NONE,
                _NO_SIGHT,
            )
        )
        if not support:
            side.chosen.append(None)
            continue
        pattern = (support, attached, diagnosis)
        view = views.get(pattern)
        if view is None:
            association = "attached" if attached else "missing"
            view = views[pattern] = VerdictView(support, association, {}, diagnosis)
        side.chosen.append(view)
    diagnosed = plain_rows(
        VerdictRevision.objects.filter(claim__response__run__in=run_ids)
        .exclude(diagnosis="")
        .order_by()
        .values_list("claim__response_id", "diagnosis")
        .distinct()
    )
    for response_id, diagnosis in diagnosed:
        side = by_response[response_id]
        side.diagnosed = side.diagnosed | {diagnosis}
    return [by_run[pk] for pk in run_ids], stored


_NONE: Any = ()  # no citations, no verdicts read: an empty tuple shared by every claim
_NO_SIGHT: Any = MappingProxyType({})


def claim_texts(*, sides: Collection[Side]) -> dict[tuple[int, str], str]:
    """(response id, claim key) → the text of the claim's newest revision, for these
    responses (read from the stored figures, whose claims come without text): a query per
    1,000 responses, by the index of their claims."""
    ids = sorted({side.response_id for side in sides})
    texts: dict[tuple[int, str], tuple[int, str]] = {}
    for start in range(0, len(ids), 1000):
        rows = (
            ClaimRevision.objects.filter(claim__response_id__in=ids[start : start + 1000])
            .order_by()
            .values_list("claim__response_id", "claim__key", "seq", "text")
        )
        for response_id, key, seq, text in plain_rows(rows):
            held = texts.get((response_id, key))
            if held is None or seq > held[0]:
                texts[response_id, key] = (seq, text)
    return {at: text for at, (_, text) in texts.items()}


def _expectations(responses) -> dict[int, dict[str, Any]]:
    """The expectations of these responses by pk, decoded (shared: never mutate)."""
    return {
        pk: {
            "query": query,
            "required_facts": _decoded(facts),
            "relevant_refs": _decoded(relevant),
            "known_gaps": _decoded(gaps),
        }
        for pk, query, facts, relevant, gaps in Expectation.objects.filter(
            pk__in=responses.values("expectation_id")
        ).values_list(
            "pk", "query", _text("required_facts"), _text("relevant_refs"), _text("known_gaps")
        )
    }
