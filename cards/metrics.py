"""The figures of metrics.md for a run, read from the database in one streaming pass.

The arithmetic is in cards.figures; this module reads the rows and feeds them in.

Responses, ranked retrieval, citations, claim revisions and verdicts are each
read once, in response order, and merged here; passages are read per batch of
1,000 responses (their number tokens were stored at import, so no passage text
is loaded), so memory does not grow with the run. A fixed number of queries
for a run of up to 1,000 responses, and three more (passages, claim-cited
passages when any, drift) for each further batch.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Case, Count, F, Q, StringAgg, Sum, TextField, Value, When
from django.db.models.functions import Cast, Left, StrIndex

from cards.blind import sightings
from cards.figures import (
    CLAIM_FIGURES,
    ClaimState,
    Totals,
    Verdict,
    response_figures,
    stored_retrieval,
    to_json,
)
from cards.models import (
    ClaimKind,
    ClaimRevision,
    ClaimTally,
    ResponseTally,
    RunTally,
    VerdictRevision,
)
from cards.prechecks import ClaimFacts, PassageFacts, ResponseFacts, prechecks
from cards.progress import is_reviewed, latest_review_complete
from cards.stats import Proportion
from cards.verdicts import LABELS, NO_CONSENSUS, Source
from evidence.drift import drifted_from, drifted_refs_of
from evidence.fields import as_text, decoded
from evidence.models import Passage
from replay.models import Citation, Response, Retrieval, Run

CHUNK = 2000
# What the figures read of a claim revision (`claim_state`) and of a verdict (`verdict_of`).
STATE_COLUMNS = (
    "claim__key", "kind", "text", as_text("citations"), as_text("facts"), as_text("gaps"),
    "withdrawn",
)  # fmt: skip
VERDICT_COLUMNS = (
    "annotator", "origin", "support", "association", as_text("citation_relevance"),
    "diagnosis", "created_at",
)  # fmt: skip
# Responses whose passages are read together (iter_response_figures).
BATCH = 1000


def _grouped(rows: Iterator[tuple], key_index: int = 0) -> Iterator[tuple[Any, list[tuple]]]:
    for key, group in itertools.groupby(rows, key=lambda row: row[key_index]):
        yield key, list(group)


def claim_state(key, kind, text, cited, facts, gaps, withdrawn) -> ClaimState:
    """A claim's newest revision, from the columns of STATE_COLUMNS."""
    return ClaimState(
        key, kind, text, decoded(cited), decoded(facts), decoded(gaps), bool(withdrawn)
    )


def verdict_of(annotator, origin, support, association, relevance, diagnosis, at) -> Verdict:
    """A verdict, from the columns of VERDICT_COLUMNS."""
    return Verdict(annotator, origin, support, association, decoded(relevance), diagnosis, at)


def response_rows(responses, *first: str):
    """Each response's `first` columns, then its text, abstention, last review mark and
    expectation (required facts, relevant refs, known gaps: JSON text), in id order."""
    return (
        responses.annotate(review_complete=latest_review_complete())
        .order_by("pk")
        .values_list(
            *first,
            "text",
            "abstained",
            "review_complete",
            as_text("expectation__required_facts"),
            as_text("expectation__relevant_refs"),
            as_text("expectation__known_gaps"),
        )  # fmt: skip
    )


class Lockstep:
    """Walks several iterators ordered by response id in step with the responses."""

    def __init__(self, rows: Iterator[tuple]):
        self.groups = _grouped(rows)
        self.pending: tuple[Any, list[tuple]] | None = next(self.groups, None)

    def take(self, response_id: int) -> list[tuple]:
        while self.pending is not None and self.pending[0] < response_id:
            self.pending = next(self.groups, None)
        if self.pending is not None and self.pending[0] == response_id:
            rows = self.pending[1]
            self.pending = next(self.groups, None)
            return rows
        return []


@dataclass
class RunFigures:
    run_id: str
    source: Source
    per_response: Sequence[dict[str, Any]]
    totals: dict[str, Any]
    # `cards.dashboard.precheck_counts`, when summed from the stored rows already.
    hint_counts: dict[str, int] | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "verdicts_from": self.source.label,
            "per_response": [to_json(r) for r in self.per_response],
            "run": to_json(self.totals),
        }


def run_metrics(
    *,
    run: Run,
    source: Source = Source(),  # noqa: B008
) -> RunFigures:
    """Every figure of metrics.md for every response of the run, and the run totals.

    The default source's are read from the stored rows (`stored_run_figures`); another
    source's (an annotator, consensus) are computed from the revisions.
    """
    if source.mode == "default":
        return stored_run_figures(run=run)
    return streamed_run_metrics(run=run, source=source)


def streamed_run_metrics(*, run: Run, source: Source) -> RunFigures:
    """`run_metrics` computed from the revisions in one streaming pass, whatever the source:
    the reference the stored figures are tested against."""
    per_response, totals = [], Totals()
    with gc_paused():
        for figures in iter_response_figures(run=run, source=source):
            per_response.append(figures)
            totals.add(figures)
    return RunFigures(run.run_id, source, per_response, totals.result())


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection during a pass that makes many objects and no cycles
    (issue 12): the 10,000 responses of a run made the collector walk every object the
    pass had kept so far, again and again. It runs again, as before, afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def iter_response_figures(*, run: Run, source: Source) -> Iterator[dict[str, Any]]:
    """Each response's figures, one at a time.

    The responses are read in batches of BATCH, with the passages they need (what they
    retrieved or marked, what their claims cite, and which of those drifted): memory does
    not grow with the run, for a few queries per batch.
    """
    responses = response_rows(Response.objects.filter(run=run), "pk", "case__case_id")
    doc_of = doc_exceptions(run)
    retrievals = Lockstep(
        Retrieval.objects.filter(response__run=run)
        .order_by("response_id", "rank")
        .values_list("response_id", "passage_id")
        .iterator(chunk_size=CHUNK)
    )
    citations = Lockstep(
        Citation.objects.filter(response__run=run)
        .order_by("response_id", "position")
        .values_list("response_id", "passage_id", "start", "end")
        .iterator(chunk_size=CHUNK)
    )
    revisions = Lockstep(
        ClaimRevision.objects.filter(claim__response__run=run)
        .order_by("claim__response_id", "claim__position", "claim_id", "-seq")
        .values_list("claim__response_id", "claim_id", *STATE_COLUMNS)
        .iterator(chunk_size=CHUNK)
    )
    verdicts = Lockstep(
        VerdictRevision.objects.filter(claim__response__run=run)
        .order_by("claim__response_id", "claim_id", "-seq")
        .values_list("claim__response_id", "claim_id", *VERDICT_COLUMNS)
        .iterator(chunk_size=CHUNK)
    )
    clock = sightings(run=run)
    for batch in itertools.batched(responses.iterator(chunk_size=CHUNK), BATCH):
        read = []
        for response in batch:
            pk = response[0]
            claims: dict[int, ClaimState] = {}
            for _, claim_id, *columns in revisions.take(pk):
                if claim_id not in claims:  # newest revision first
                    claims[claim_id] = claim_state(*columns)
            for _, claim_id, *columns in verdicts.take(pk):
                if claim_id in claims:
                    claims[claim_id].verdicts.append(verdict_of(*columns))
            ranked_ids = [pid for _, pid in retrievals.take(pk)]
            read.append((response, list(claims.values()), ranked_ids, citations.take(pk)))
        passages = _batch_passages(run, read)
        # Refs are unique within the run's snapshot, so one map serves the batch's checks.
        facts_by_ref = {facts.ref: facts for facts in passages.values()}
        drifted = frozenset(
            drifted_refs_of(
                snapshot_id=run.snapshot_id,
                project_id=run.project_id,
                refs={passages[pid].ref for *_, rows in read for _, pid, _, _ in rows},
            )
        )
        for (
            (pk, case_id, text, abstained, complete, facts, relevant, gaps),
            claim_list,
            ranked_ids,
            cited_rows,
        ) in read:
            sighted = clock.of(pk)
            for claim in claim_list:
                claim.sighted = sighted
            ranked = [passages[pid] for pid in ranked_ids]
            facts, relevant, gaps = decoded(facts), decoded(relevant), decoded(gaps)
            expectation = {"required_facts": facts, "relevant_refs": relevant, "known_gaps": gaps}
            reviewed = is_reviewed(complete=complete, abstained=abstained, text=text)
            figures = response_figures(
                reviewed=reviewed, expectation=expectation,
                claims=claim_list, ranked=ranked, doc_of=doc_of, source=source,
            )  # fmt: skip
            hints = prechecks(
                ResponseFacts(
                    answer=text,
                    marker_spans=[(s, e) for _, _, s, e in cited_rows if s is not None],
                    cited_refs=[passages[pid].ref for _, pid, _, _ in cited_rows],
                    retrieved=ranked,
                    passages=facts_by_ref,
                    relevant_refs=relevant,
                    drifted_refs=drifted,
                    claims=[
                        ClaimFacts(c.key, c.kind, c.text, c.citations)
                        for c in claim_list
                        if not c.withdrawn
                    ],
                )
            )
            yield {"case_id": case_id, **figures, "prechecks": hints.as_dict()}


def _batch_passages(run: Run, read: list[tuple]) -> dict[int, PassageFacts]:
    """The facts of the passages a batch of responses retrieved or marked, by id, and of
    those their claims cite, by ref (one query, a second when a claim cites a passage no
    response of the batch retrieved or marked)."""
    # The batch is a range of the run's response ids: subqueries, not lists of ids.
    scope = Q(response__run=run, response_id__gte=read[0][0][0], response_id__lte=read[-1][0][0])
    retrieved = Retrieval.objects.filter(scope).values("passage_id")
    marked = Citation.objects.filter(scope).values("passage_id")
    found = _passages(Passage.objects.filter(Q(pk__in=retrieved) | Q(pk__in=marked)))
    known = {facts.ref for facts in found.values()}
    # A bundle's claim may cite any passage it declares (bundle.md), and a reviewer any
    # passage of the run's snapshot: without these, such a claim's pre-checks would read
    # no evidence.
    cited = sorted(
        {ref for _, claims, _, _ in read for claim in claims for ref in claim.citations} - known
    )
    for start in range(0, len(cited), CHUNK):
        found.update(
            _passages(
                Passage.objects.filter(
                    snapshot_id=run.snapshot_id, ref__in=cited[start : start + CHUNK]
                )
            )
        )
    return found


def _passages(queryset) -> dict[int, PassageFacts]:
    return {
        pk: PassageFacts(ref, frozenset(numbers.split()), status)
        for pk, ref, status, numbers in queryset.values_list(
            "pk", "ref", "version_status", "numbers"
        )
    }


def doc_exceptions(run: Run) -> dict[str, str]:
    """The document of each ref the figures read, where it is not the ref's own prefix
    (`doc@version#chunk`): never for an imported passage (bundle.schema.json: a ref is
    doc_id@version#chunk_id, and a part holds no `@`), so usually empty. One query; a
    second when there is such a passage, and a third to know whether a claim cites it.

    Which passages count, as when every passage of the run was read at once: those a
    response of the run retrieved or marked, and those of its snapshot a claim cites.
    """
    at = StrIndex("ref", Value("@"))
    prefix = Case(When(at=0, then=F("ref")), default=Left("ref", F("at") - 1))
    retrieved = Retrieval.objects.filter(response__run=run).values("passage_id")
    marked = Citation.objects.filter(response__run=run).values("passage_id")
    rows = list(
        Passage.objects.filter(
            Q(pk__in=retrieved) | Q(pk__in=marked) | Q(snapshot_id=run.snapshot_id)
        )
        .exclude(doc_id="")
        .annotate(at=at)
        .annotate(prefix=prefix)
        .exclude(doc_id=F("prefix"))
        .values_list("pk", "ref", "doc_id")
    )
    if not rows:
        return {}
    named = set(
        Passage.objects.filter(pk__in=[pk for pk, _, _ in rows])
        .filter(Q(pk__in=retrieved) | Q(pk__in=marked))
        .values_list("pk", flat=True)
    )
    claim_refs: set[str] = set()
    if len(named) < len(rows):
        for cited in (
            ClaimRevision.objects.filter(claim__response__run=run)
            .exclude(citations=[])
            .order_by()  # no ordering column in the DISTINCT
            .values_list(as_text("citations"), flat=True)
            .distinct()
            .iterator(chunk_size=CHUNK)
        ):
            claim_refs.update(decoded(cited))
    return {ref: doc for pk, ref, doc in rows if pk in named or ref in claim_refs}


# What a response's claim figures need of its stored claim rows (`ClaimTally`), summed in
# the database: counts over its current factual claims, and the facts that its supported
# ones report and the gaps its honest abstentions declare, as JSON arrays joined by ",".
_FACTUAL = Q(current=True, kind=ClaimKind.FACTUAL)
_CLAIM_SUMS = {
    "n": Count("pk", filter=_FACTUAL),
    **{label: Count("pk", filter=_FACTUAL & Q(support=label)) for label in LABELS},
    "unreviewed": Count("pk", filter=_FACTUAL & Q(support="")),
    # Not named after a column: a later filter on `attached` would read this sum.
    "with_citation": Count("pk", filter=_FACTUAL & Q(attached=True)),
    "supported_attached": Count("pk", filter=_FACTUAL & Q(attached=True, support="supported")),
    "judged": Sum("judged_citations", filter=_FACTUAL),
    "useful": Sum("useful_citations", filter=_FACTUAL),
    "invented": Count(
        "pk",
        filter=_FACTUAL & (~Q(gaps=[]) | Q(support="unsupported", diagnosis="not_in_collection")),
    ),
    "covered": StringAgg(
        Cast("facts", TextField()), Value(","), filter=_FACTUAL & Q(support="supported")
    ),
    # metrics.md: a gap is honestly missed by an abstention claim not judged unsupported.
    "honest": StringAgg(
        Cast("gaps", TextField()),
        Value(","),
        filter=Q(current=True, kind=ClaimKind.ABSTENTION) & ~Q(support="unsupported"),
    ),
}


def stored_run_figures(*, run: Run) -> RunFigures:
    """The default source's figures of a run, read from the stored rows.

    The run totals and the pre-check counts are sums over every response's stored rows;
    `per_response` reads each response's retrieval figures and pre-checks only when asked
    (a page of 50 reads 50). Equal, figure by figure, to what `run_metrics` computes from
    the revisions: the reference test holds the two together.
    """
    sums = {
        row.pop("response_id"): row
        for row in ClaimTally.objects.filter(run=run)
        .values("response_id")
        .order_by()
        .annotate(**_CLAIM_SUMS)
    }
    totals = Totals()
    figures_of: dict[int, dict[str, Any]] = {}
    for pk, reviewed, fact_ids, gap_ids in (
        ResponseTally.objects.filter(run=run)
        .order_by("response")
        .values_list("response_id", "reviewed", as_text("fact_ids"), as_text("gap_ids"))
        .iterator(chunk_size=CHUNK)
    ):
        figures = stored_claim_figures(
            reviewed=reviewed, fact_ids=decoded(fact_ids), gap_ids=decoded(gap_ids),
            sums=sums.get(pk),
        )  # fmt: skip
        figures_of[pk] = figures
        totals.add(figures)
    result = totals.result()
    stored = RunTally.objects.filter(run=run).values_list("retrieval", flat=True).first() or {}
    for part in ("undefined", "micro", "macro"):
        result[part].pop("context_precision", None)
        result[part].update(
            (name, Proportion(*value) if part == "micro" else value)
            for name, value in stored.get(part, ())
        )
    # Drift is asked now, not stored: another snapshot of the project may arrive any time.
    drifted = frozenset(
        drifted_from(project_id=run.project_id, snapshot_id=run.snapshot_id).values_list(
            "ref", flat=True
        )
    )
    per_response = StoredResponses(figures_of, drifted)
    return RunFigures(
        run.run_id, Source(), per_response, result, _hint_counts(run, per_response, drifted)
    )


# The pre-check codes of a response and of a claim (cards.prechecks), but drift.
RESPONSE_HINTS = (
    "number_not_in_evidence", "relevant_not_retrieved", "cites_superseded_version",
    "citation_not_retrieved",
)  # fmt: skip
CLAIM_HINTS = (
    "claim_without_citation", "number_not_in_evidence", "cites_superseded_version",
    "citation_not_retrieved",
)  # fmt: skip


def _hint_counts(run: Run, responses: StoredResponses, drifted: frozenset[str]) -> dict:
    """`cards.dashboard.precheck_counts` of the run, summed over its stored rows: responses
    with each response code, current claims with each claim code (two queries), and the
    responses citing a drifted ref (reading their cited refs only when a ref drifted)."""

    def with_code(model, codes, **scope) -> dict[str, int]:
        return (
            model.objects.filter(run=run, **scope)
            .annotate(codes=Cast("hints", TextField()))
            .aggregate(
                **{code: Count("pk", filter=Q(codes__contains=f'"{code}"')) for code in codes}
            )
        )

    counts = with_code(ResponseTally, RESPONSE_HINTS)
    if drifted:
        counts["passage_drift"] = sum(
            1
            for refs in ResponseTally.objects.filter(run=run).values_list(
                as_text("cited_refs"), flat=True
            )
            if not drifted.isdisjoint(decoded(refs))
        )
    for code, count in with_code(ClaimTally, CLAIM_HINTS, current=True).items():
        counts[f"{code} (claims)"] = count
    return dict(sorted((code, count) for code, count in counts.items() if count))


class StoredResponses(Sequence):
    """A run's per-response figures as `run_metrics` lists them, read from the stored rows
    when asked: a slice reads the rows of its responses only (two queries)."""

    def __init__(self, claim_figures: dict[int, dict[str, Any]], drifted: frozenset[str]):
        self.claim_figures = claim_figures
        self.pks = list(claim_figures)
        self.drifted = drifted

    def __len__(self) -> int:
        return len(self.pks)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._read(self.pks[index])
        return self._read([self.pks[index]])[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in itertools.batched(self.pks, CHUNK):
            yield from self._read(batch)

    def _read(self, pks: Sequence[int]) -> list[dict[str, Any]]:
        claims: dict[int, dict[str, list[str]]] = {pk: {} for pk in pks}
        for pk, key, hints in (
            ClaimTally.objects.filter(response_id__in=pks, current=True)
            .exclude(hints=[])
            .order_by("response_id", "claim__position", "claim_id")
            .values_list("response_id", "claim__key", "hints")
        ):
            claims[pk][key] = hints
        rows = {
            pk: row
            for pk, *row in ResponseTally.objects.filter(response_id__in=pks).values_list(
                "response_id", "response__case__case_id", "retrieval", "hints", "cited_refs"
            )
        }
        out = []
        for pk in pks:
            case_id, retrieval, hints, cited = rows[pk]
            response = dict(hints)
            if drifted := [ref for ref in cited if ref in self.drifted]:
                response["passage_drift"] = drifted
            out.append(
                {
                    "case_id": case_id,
                    **self.claim_figures[pk],
                    **stored_retrieval(retrieval),
                    "prechecks": {"response": response, "claims": claims[pk]},
                }
            )
        return out


def stored_claim_figures(
    *, reviewed: bool, fact_ids: list[str], gap_ids: list[str], sums: dict[str, Any] | None
) -> dict[str, Any]:
    """A response's claim figures (`cards.figures.claim_figures`, default source) from the
    sums of its stored claim rows."""
    s = sums or {**dict.fromkeys(_CLAIM_SUMS, 0), "covered": None, "honest": None}
    n = s["n"]
    if not reviewed:
        return {
            "status": "unreviewed",
            "claims": n,
            "verdicts": None,
            **dict.fromkeys(CLAIM_FIGURES),
            "invented_over_gap": None,
        }
    supported = s["supported"]
    verdicts = {label: s[label] for label in LABELS}
    verdicts["unreviewed"] = s["unreviewed"]
    verdicts[NO_CONSENSUS] = 0
    covered = {f for facts in _joined(s["covered"]) for f in facts}
    honest = {g for gaps in _joined(s["honest"]) for g in gaps}
    return {
        "status": "reviewed" if n else "abstention",
        "claims": n,
        "verdicts": verdicts,
        "citation_presence": Proportion(s["with_citation"], n),
        "support": Proportion(supported, n),
        "support_or_partial": Proportion(supported + s["partial"], n),
        "support_assessed": Proportion(
            supported, max(n - s["not_assessable"] - s["unreviewed"], 0)
        ),
        "coverage": Proportion(sum(1 for f in fact_ids if f in covered), len(fact_ids)),
        "citation_recall": Proportion(s["supported_attached"], n),
        "citation_precision": Proportion(s["useful"] or 0, s["judged"] or 0),
        "honest_misses": Proportion(sum(1 for g in gap_ids if g in honest), len(gap_ids)),
        "invented_over_gap": s["invented"],
    }


def _joined(arrays: str | None) -> list[list[str]]:
    """JSON arrays joined by "," (StringAgg), as a list of lists."""
    return json.loads(f"[{arrays}]") if arrays else []
