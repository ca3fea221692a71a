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
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.core.cache import cache
from django.db.models import Case, Count, F, Q, StringAgg, Sum, TextField, Value, When
from django.db.models.functions import Cast, Left, StrIndex

from cards.blind import sightings
from cards.figures import (
    CLAIM_FIGURES,
    ClaimState,
    Totals,
    Verdict,
    claim_figures,
    new_sum,
    response_figures,
    stored_retrieval,
    to_json,
)
from cards.models import (
    ClaimKind,
    ClaimRevision,
    ClaimTally,
    ResponseReview,
    ResponseTally,
    RunTally,
    VerdictRevision,
)
from cards.prechecks import ClaimFacts, PassageFacts, ResponseFacts, prechecks
from cards.progress import is_reviewed, latest_review_complete
from cards.run_state import TIMEOUT, runs_key
from cards.stats import Proportion
from cards.verdicts import LABELS, NO_CONSENSUS, Source
from evidence.drift import drifted_from, drifted_refs_of
from evidence.fields import as_text, decoded
from evidence.models import Passage, Snapshot
from evidence.rows import plain_rows
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
    return streamed_run_metrics(run=run, source=source, stored=True)


def kept_run_metrics(*, run: Run, source: Source, state: str) -> RunFigures:
    """`run_metrics` in this state of the run (`cards.run_state.runs_state`): the default
    source's grown from what was read in an earlier state (`grown_run_figures`). Another
    source's are computed on each call: 10,000 responses' figures pickle to megabytes, and
    reading them back would cost what computing them does."""
    if source.mode != "default":
        return run_metrics(run=run, source=source)
    return grown_run_figures(run=run, state=state)


def streamed_run_metrics(*, run: Run, source: Source, stored: bool = False) -> RunFigures:
    """`run_metrics` computed from the revisions in one streaming pass, whatever the source:
    the reference the stored figures are tested against. With `stored`, what no source
    changes (retrieval figures, pre-checks) is read from the stored rows instead."""
    per_response, totals = [], Totals()
    with gc_paused():
        for figures in iter_response_figures(run=run, source=source, stored=stored):
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


def iter_response_figures(
    *, run: Run, source: Source, claims: bool = True, drift: bool = True, stored: bool = False
) -> Iterator[dict[str, Any]]:
    """Each response's figures, one at a time.

    The responses are read in batches of BATCH, with the passages they need (what they
    retrieved or marked, what their claims cite, and which of those drifted): memory does
    not grow with the run, for a few queries per batch. Without `claims` no claim is read
    (the claim figures are those of a response without claims), without `drift` no ref
    drifted: what an import stores needs neither (cards.services.tallies).

    With `stored`, each response's retrieval figures and pre-checks, which do not depend on
    the source, are read from its stored rows (`ResponseTally`, `ClaimTally`), as the
    default source's are: no passage, retrieval or citation is read (issue 12, another
    source within 2 s: they were a third of the pass).
    """
    if stored:
        yield from _with_stored_rest(run=run, source=source)
        return
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
    for batch in itertools.batched(_claim_lists(run, claims=claims), BATCH):
        read = []
        for response, claim_list in batch:
            pk = response[0]
            ranked_ids = [pid for _, pid in retrievals.take(pk)]
            read.append((response, claim_list, ranked_ids, citations.take(pk)))
        passages = _batch_passages(run, read)
        # Refs are unique within the run's snapshot, so one map serves the batch's checks.
        facts_by_ref = {facts.ref: facts for facts in passages.values()}
        drifted = frozenset(
            drifted_refs_of(
                snapshot_id=run.snapshot_id,
                project_id=run.project_id,
                refs={passages[pid].ref for *_, rows in read for _, pid, _, _ in rows},
            )
            if drift
            else ()
        )
        for (
            (_, case_id, text, abstained, complete, facts, relevant, gaps),
            claim_list,
            ranked_ids,
            cited_rows,
        ) in read:
            yield {
                "case_id": case_id,
                **one_response_figures(
                    text=text, abstained=abstained, complete=complete,
                    expectation={
                        "required_facts": decoded(facts), "relevant_refs": decoded(relevant),
                        "known_gaps": decoded(gaps),
                    },
                    claims=claim_list, ranked=[passages[pid] for pid in ranked_ids],
                    cited=[(passages[pid].ref, s, e) for _, pid, s, e in cited_rows],
                    passages=facts_by_ref, doc_of=doc_of, drifted=drifted, source=source,
                ),
            }  # fmt: skip


def one_response_figures(
    *, text: str, abstained: bool, complete: bool | None, expectation: dict,
    claims: list[ClaimState], ranked: list[PassageFacts],
    cited: list[tuple[str, int | None, int | None]], passages: dict[str, PassageFacts],
    doc_of: dict[str, str], drifted: frozenset[str], source: Source,
) -> dict[str, Any]:  # fmt: skip
    """One response's figures and pre-checks, from its rows: its text, abstention and last
    review mark, its expectation (decoded), its claims, the passages it retrieved in rank
    order, its citations as (ref, start, end) in order, and the facts of every passage
    they or its claims name, by ref. The one rule for the streaming pass and the import's
    stored rows (ingest.tallies)."""
    reviewed = is_reviewed(complete=complete, abstained=abstained, text=text)
    figures = response_figures(
        reviewed=reviewed, expectation=expectation,
        claims=claims, ranked=ranked, doc_of=doc_of, source=source,
    )  # fmt: skip
    hints = prechecks(
        ResponseFacts(
            answer=text,
            marker_spans=[(s, e) for _, s, e in cited if s is not None],
            cited_refs=[ref for ref, _, _ in cited],
            retrieved=ranked,
            passages=passages,
            relevant_refs=expectation["relevant_refs"],
            drifted_refs=drifted,
            claims=[
                ClaimFacts(c.key, c.kind, c.text, c.citations) for c in claims if not c.withdrawn
            ],
        )
    )
    return {**figures, "prechecks": hints.as_dict()}


def _claim_lists(run: Run, *, claims: bool = True) -> Iterator[tuple[tuple, list[ClaimState]]]:
    """Each response's row (`response_rows`) with its claims, newest revision each, and
    their verdicts, with the moments each annotator could first see another's verdict
    (without `claims`, none: no claim is read)."""
    if not claims:
        for response in _responses(run):
            yield response, []
        return
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
    for response in _responses(run):
        pk = response[0]
        states: dict[int, ClaimState] = {}
        for _, claim_id, *columns in revisions.take(pk):
            if claim_id not in states:  # newest revision first
                states[claim_id] = claim_state(*columns)
        sighted = clock.of(pk)
        for _, claim_id, *columns in verdicts.take(pk):
            if claim_id in states:
                states[claim_id].verdicts.append(verdict_of(*columns))
        for claim in states.values():
            claim.sighted = sighted
        yield response, list(states.values())


def _responses(run: Run) -> Iterator[tuple]:
    responses = response_rows(Response.objects.filter(run=run), "pk", "case__case_id")
    return responses.iterator(chunk_size=CHUNK)


def _with_stored_rest(*, run: Run, source: Source) -> Iterator[dict[str, Any]]:
    """`iter_response_figures` with `stored`: the claim figures computed, the rest read."""
    drifted = _drifted(run)
    stored = Lockstep(
        ResponseTally.objects.filter(run=run)
        .order_by("response_id")
        .values_list("response_id", as_text("retrieval"), as_text("hints"), as_text("cited_refs"))
        .iterator(chunk_size=CHUNK)
    )
    claim_hints = Lockstep(
        ClaimTally.objects.filter(run=run, current=True)
        .exclude(hints=[])
        .order_by("response_id", "claim__position", "claim_id")
        .values_list("response_id", "claim__key", as_text("hints"))
        .iterator(chunk_size=CHUNK)
    )
    for response, claim_list in _claim_lists(run):
        pk, case_id, text, abstained, complete, facts, relevant, gaps = response
        expectation = {
            "required_facts": decoded(facts),
            "relevant_refs": decoded(relevant),
            "known_gaps": decoded(gaps),
        }
        reviewed = is_reviewed(complete=complete, abstained=abstained, text=text)
        [(_, retrieval, hints, cited)] = stored.take(pk)
        # Decoded once per distinct short text (evidence.fields): shared, so copied to change.
        retrieval, hints, cited = decoded(retrieval), dict(decoded(hints)), decoded(cited)
        if passage_drift := [ref for ref in cited if ref in drifted]:
            hints["passage_drift"] = passage_drift
        yield {
            "case_id": case_id,
            **claim_figures(
                reviewed=reviewed, expectation=expectation, claims=claim_list, source=source
            ),
            **stored_retrieval(retrieval),
            "prechecks": {
                "response": hints,
                "claims": {key: decoded(codes) for _, key, codes in claim_hints.take(pk)},
            },
        }


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
# The pre-check codes of its current claims, for the run's counts: JSON arrays joined by ",".
_HINT_SUMS = {
    "hints": StringAgg(
        Cast("hints", TextField()), Value(","), filter=Q(current=True) & ~Q(hints=[])
    ),
}


class ClaimSums(NamedTuple):
    """One response's row of `_CLAIM_SUMS` (a response without claims has none)."""

    n: int = 0
    supported: int = 0
    partial: int = 0
    unsupported: int = 0
    not_assessable: int = 0
    unreviewed: int = 0
    with_citation: int = 0
    supported_attached: int = 0
    judged: int | None = None
    useful: int | None = None
    invented: int = 0
    covered: str | None = None
    honest: str | None = None
    hints: str | None = None  # read for a run's figures only (`_HINT_SUMS`)


NO_CLAIMS = ClaimSums()
# (reviewed, required fact ids, known gap ids, claim sums) of a response.
StoredClaims = tuple[bool, list[str], list[str], ClaimSums]


def stored_run_figures(*, run: Run) -> RunFigures:
    """The default source's figures of a run, read from the stored rows.

    The run totals and the pre-check counts are sums over every response's stored rows;
    `per_response` reads each response's retrieval figures and pre-checks only when asked
    (a page of 50 reads 50). Equal, figure by figure, to what `run_metrics` computes from
    the revisions: the reference test holds the two together.
    """
    return _figures_of(run, _stored_read(run))


@dataclass
class StoredRead:
    """What `stored_run_figures` read of a run, and the totals it summed, in a state of the
    run: kept, to be grown by the writes that follow (`grown_run_figures`)."""

    upto: tuple[int, int, int]  # `RunsState.upto` of the state read (zeros: none)
    imports: tuple  # `RunsState.imports`: an import may make a cited ref drift
    claims: dict[int, StoredClaims]  # in response order
    totals: Totals
    claim_hints: Counter  # "CODE (claims)" → the current claims with that pre-check
    response_hints: dict[str, int]  # the responses with each code: fixed at import, and drift
    retrieval: dict[str, Any]  # RunTally.retrieval: fixed at import
    drifted: frozenset[str]

    def __getstate__(self) -> dict[str, Any]:
        # Kept in the cache: plain tuples for the claim sums, as making 10,000 named tuples
        # again took most of the time to read the figures back (`StoredResponses` and
        # `_accumulator` take either).
        state = dict(self.__dict__)
        state["claims"] = {pk: (*rest, tuple(s)) for pk, (*rest, s) in self.claims.items()}
        return state


def _stored_read(
    run: Run, upto: tuple[int, int, int] = (0, 0, 0), imports: tuple = ()
) -> StoredRead:
    claims = _stored_claims(run)
    totals, claim_hints = Totals(), Counter()
    accumulate = _accumulator(totals, claim_hints)
    for stored in claims.values():
        accumulate(stored, 1)
    retrieval = RunTally.objects.filter(run=run).values_list("retrieval", flat=True).first()
    drifted = _drifted(run)
    return StoredRead(
        upto=upto,
        imports=imports,
        claims=claims,
        totals=totals,
        claim_hints=claim_hints,
        response_hints=_response_hint_counts(run, drifted),
        retrieval=retrieval or {},
        drifted=drifted,
    )


def _stored_claims(run: Run, responses: Sequence[int] | None = None) -> dict[int, StoredClaims]:
    """`StoredClaims` of each response of the run (of these only, when given), in order:
    two queries."""
    sums = stored_claim_sums(runs=[run], responses=responses, hints=True)
    tallies = ResponseTally.objects.filter(run=run)
    if responses is not None:
        tallies = tallies.filter(response_id__in=responses)
    return {
        pk: (bool(reviewed), decoded(fact_ids), decoded(gap_ids), sums.get(pk, NO_CLAIMS))
        for pk, reviewed, fact_ids, gap_ids in plain_rows(
            tallies.order_by("response").values_list(
                "response_id", "reviewed", as_text("fact_ids"), as_text("gap_ids")
            )
        )
    }


def _figures_of(run: Run, read: StoredRead) -> RunFigures:
    result = read.totals.result()
    for part in ("undefined", "micro", "macro"):
        result[part].pop("context_precision", None)
        result[part].update(
            (name, _restored(part, value)) for name, value in read.retrieval.get(part, ())
        )
    counts = Counter(read.response_hints)
    counts.update(read.claim_hints)
    hint_counts = dict(sorted((code, count) for code, count in counts.items() if count))
    per_response = StoredResponses(read.claims, read.drifted)
    return RunFigures(run.run_id, Source(), per_response, result, hint_counts)


def grown_run_figures(*, run: Run, state: str) -> RunFigures:
    """`stored_run_figures` in this state of the run (`cards.run_state.runs_state`), grown
    from what was read in an earlier state: only the responses that a claim revision,
    verdict or review mark saved since then belongs to are read again, by the primary keys
    (`_changed_responses`), and their old sums taken out of the totals and the new ones
    added. What was read is kept under the run alone, with the state it was read in.

    Summing every stored row of a run of 10,000 cases took 0.2 s, after each save. The
    totals are counts, and each macro mean is summed exactly from how many responses have
    each (k, n) (`cards.figures.mean`): taking a response out and adding it back gives
    what adding every response once gives. Read whole again when nothing was kept, when
    the project's imports changed (a cited ref may drift), when the state read is neither
    before nor after this one, or when many responses changed.
    """
    upto = getattr(state, "upto", None)
    if upto is None:  # not a `RunsState`: nothing to grow from
        return stored_run_figures(run=run)
    imports = state.imports  # type: ignore[attr-defined]
    key = runs_key(runs=[run], part=f"figures-read-{READ_VERSION}")
    read: StoredRead | None = cache.get(key)
    if read is not None and read.imports == imports and _at_most(upto, read.upto):
        return _figures_of(run, read)  # read in this state, or a later one
    if read is not None and read.imports == imports and _at_most(read.upto, upto):
        read = _grown(run, read, upto)
    else:
        read = _stored_read(run, upto, imports)
    cache.set(key, read, TIMEOUT)
    return _figures_of(run, read)


def _at_most(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True))


# What a kept `StoredRead` holds: another layout (a shared cache across a deploy) is
# another key.
READ_VERSION = 1
# More responses changed than this share of the run, and than GROW_LEAST: read whole again.
GROW_SHARE, GROW_LEAST = 0.25, 64


def _grown(run: Run, read: StoredRead, upto: tuple[int, int, int]) -> StoredRead:
    changed = _changed_responses(run, read.upto, upto)
    if len(changed) > max(GROW_LEAST, GROW_SHARE * len(read.claims)):
        return _stored_read(run, upto, read.imports)
    fresh = _stored_claims(run, changed)
    if not fresh.keys() <= read.claims.keys():
        # A response without its stored row when it was read: a review mark on it rebuilt
        # every row of the run (`cards.services.tallies.response_reviewed`).
        return _stored_read(run, upto, read.imports)
    accumulate = _accumulator(read.totals, read.claim_hints)
    for pk, stored in fresh.items():
        accumulate(read.claims[pk], -1)
        accumulate(stored, 1)
        read.claims[pk] = stored
    read.upto = upto
    return read


def _changed_responses(
    run: Run, after: tuple[int, int, int], upto: tuple[int, int, int]
) -> list[int]:
    """The responses of the run that a claim revision, verdict or review mark with an id
    above `after` and up to `upto` belongs to: one query, by the primary keys."""
    sources = (
        (ClaimRevision.objects.filter(claim__response__run=run), "claim__response_id"),
        (VerdictRevision.objects.filter(claim__response__run=run), "claim__response_id"),
        (ResponseReview.objects.filter(response__run=run), "response_id"),
    )
    parts = [
        rows.filter(pk__gt=low, pk__lte=high).order_by().values_list(column)
        for (rows, column), low, high in zip(sources, after, upto, strict=True)
        if high > low
    ]
    if not parts:
        return []
    # No ORDER BY: the union would take the first model's ordering, on a column not read.
    rows = parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0].distinct()
    rows = rows.order_by()
    return sorted(pk for (pk,) in rows)


def _accumulator(totals: Totals, claim_hints: Counter | None):
    """A function adding (sign 1) or taking away (sign -1) a response's `StoredClaims` to
    `totals`, as `Totals.add` adds its claim figures, and its claims' pre-check codes to
    `claim_hints`: plain numbers, no dict or Proportion made per response."""
    for name in CLAIM_FIGURES:
        totals.sums.setdefault(name, new_sum())
    accs = [totals.sums[name] for name in CLAIM_FIGURES]
    verdicts = totals.verdicts

    def accumulate(stored: StoredClaims, sign: int) -> None:
        reviewed, fact_ids, gap_ids, s = stored
        totals.responses += sign
        if type(s) is tuple:  # as kept: a plain tuple
            s = ClaimSums._make(s)
        if claim_hints is not None and s.hints:
            for codes in _joined(s.hints):
                for code in codes:
                    claim_hints[f"{code} (claims)"] += sign
        if not reviewed:
            return
        totals.reviewed += sign
        totals.abstentions += sign * (not s.n)
        totals.claims += sign * s.n
        for label in LABELS:
            verdicts[label] += sign * getattr(s, label)
        verdicts["unreviewed"] += sign * s.unreviewed
        totals.invented += sign * s.invented
        pairs = _claim_pairs(fact_ids, gap_ids, s)
        totals.honest_cases += sign * bool(pairs[-1][0])
        for acc, (k, n) in zip(accs, pairs, strict=True):
            acc[4] += sign
            if n:
                acc[0] += sign * k
                acc[1] += sign * n
                acc[2] += sign
                acc[3][k << 32 | n] += sign

    return accumulate


def stored_claim_sums(
    *, runs: Sequence[Run], responses: Sequence[int] | None = None, hints: bool = False
) -> dict[int, ClaimSums]:
    """Each response's `ClaimSums` of these runs (of these responses only, when given),
    summed in the database (one query), with its claims' pre-check codes when `hints`; a
    response without claims has none."""
    rows = ClaimTally.objects.filter(run__in=[run.pk for run in runs])
    if responses is not None:
        rows = rows.filter(response_id__in=responses)
    sums = {**_CLAIM_SUMS, **(_HINT_SUMS if hints else {})}
    fields = [name for name in ClaimSums._fields if name in sums]  # the rest: defaults
    return {
        pk: ClaimSums(*row)
        for pk, *row in plain_rows(
            rows.values("response_id")
            .order_by()
            .annotate(**sums)
            .values_list("response_id", *fields)
        )
    }


def _restored(part: str, value: Any) -> Any:
    """A stored retrieval total as `Totals.result` gives it: a macro mean's keys in their
    order (PostgreSQL's jsonb keeps its keys sorted, not as written)."""
    if part == "micro":
        return Proportion(*value)
    if part == "macro" and value is not None:
        return {"value": value["value"], "cases": value["cases"]}
    return value


def _claim_pairs(fact_ids: list[str], gap_ids: list[str], s: ClaimSums) -> list[tuple]:
    """(k, n) of each of CLAIM_FIGURES, in order, for a reviewed response."""
    n, supported = s.n, s.supported
    covered = {f for facts in _joined(s.covered) for f in facts}
    honest = {g for gaps in _joined(s.honest) for g in gaps}
    return [
        (s.with_citation, n),
        (supported, n),
        (supported + s.partial, n),
        (supported, max(n - s.not_assessable - s.unreviewed, 0)),
        (sum(1 for f in fact_ids if f in covered), len(fact_ids)),
        (s.supported_attached, n),
        (s.useful or 0, s.judged or 0),
        (sum(1 for g in gap_ids if g in honest), len(gap_ids)),
    ]


def stored_claim_totals(responses: Iterable[StoredClaims]) -> Totals:
    """`Totals` fed every response's claim figures, as `Totals.add` adds each response's
    dict, from its stored claim sums (`_accumulator`)."""
    totals = Totals()
    accumulate = _accumulator(totals, None)
    for stored in responses:
        accumulate(stored, 1)
    return totals


def _drifted(run: Run) -> frozenset[str]:
    """The refs cited by the run's answers whose text differs in another snapshot of its
    project: asked when the figures are read, as another snapshot may arrive at any time.
    None without another snapshot (one cheap query; the drift query read every passage)."""
    others = Snapshot.objects.filter(project_id=run.project_id).exclude(pk=run.snapshot_id)
    if not others.exists():
        return frozenset()
    cited = Citation.objects.filter(response__run=run).values("passage__ref")
    return frozenset(
        drifted_from(project_id=run.project_id, snapshot_id=run.snapshot_id)
        .filter(ref__in=cited)
        .values_list("ref", flat=True)
    )


# The pre-check codes of a response (cards.prechecks), but drift.
RESPONSE_HINTS = (
    "number_not_in_evidence", "relevant_not_retrieved", "cites_superseded_version",
    "citation_not_retrieved",
)  # fmt: skip


def _response_hint_counts(run: Run, drifted: frozenset[str]) -> dict[str, int]:
    """The response part of `cards.dashboard.precheck_counts` of the run, summed over its
    stored rows: responses with each response code (one query), and responses citing a
    drifted ref (their cited refs read only when a ref drifted). The claims' codes are
    counted from their sums (`_accumulator`)."""
    counts: dict[str, int] = (
        ResponseTally.objects.filter(run=run)
        .annotate(codes=Cast("hints", TextField()))
        .aggregate(
            **{code: Count("pk", filter=Q(codes__contains=f'"{code}"')) for code in RESPONSE_HINTS}
        )
    )
    if drifted:
        counts["passage_drift"] = sum(
            1
            for refs in ResponseTally.objects.filter(run=run).values_list(
                as_text("cited_refs"), flat=True
            )
            if not drifted.isdisjoint(decoded(refs))
        )
    return counts


class StoredResponses(Sequence):
    """A run's per-response figures as `run_metrics` lists them, read from the stored rows
    when asked: a slice reads the rows of its responses only (two queries)."""

    def __init__(self, claims: dict[int, StoredClaims], drifted: frozenset[str]):
        self.claims = claims
        self.pks = list(claims)
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
        claim_hints: dict[int, dict[str, list[str]]] = {pk: {} for pk in pks}
        for pk, key, hints in (
            ClaimTally.objects.filter(response_id__in=pks, current=True)
            .exclude(hints=[])
            .order_by("response_id", "claim__position", "claim_id")
            .values_list("response_id", "claim__key", "hints")
        ):
            claim_hints[pk][key] = hints
        rows = {
            pk: row
            for pk, *row in ResponseTally.objects.filter(response_id__in=pks).values_list(
                "response_id", "response__case__case_id", "retrieval", "hints", "cited_refs"
            )
        }
        out = []
        for pk in pks:
            case_id, retrieval, hints, cited = rows[pk]
            sums = self.claims[pk][3]
            response = dict(hints)
            if drifted := [ref for ref in cited if ref in self.drifted]:
                response["passage_drift"] = drifted
            out.append(
                {
                    "case_id": case_id,
                    **stored_claim_figures(*self.claims[pk][:3], ClaimSums._make(sums)),
                    **stored_retrieval(retrieval),
                    "prechecks": {"response": response, "claims": claim_hints[pk]},
                }
            )
        return out


def stored_claim_figures(
    reviewed: bool, fact_ids: list[str], gap_ids: list[str], s: ClaimSums
) -> dict[str, Any]:
    """A response's claim figures (`cards.figures.claim_figures`, default source) from the
    sums of its stored claim rows."""
    if not reviewed:
        return {
            "status": "unreviewed",
            "claims": s.n,
            "verdicts": None,
            **dict.fromkeys(CLAIM_FIGURES),
            "invented_over_gap": None,
        }
    verdicts = {label: getattr(s, label) for label in LABELS}
    verdicts["unreviewed"] = s.unreviewed
    verdicts[NO_CONSENSUS] = 0
    pairs = _claim_pairs(fact_ids, gap_ids, s)
    return {
        "status": "reviewed" if s.n else "abstention",
        "claims": s.n,
        "verdicts": verdicts,
        **{name: Proportion(k, n) for name, (k, n) in zip(CLAIM_FIGURES, pairs, strict=True)},
        "invented_over_gap": s.invented,
    }


def _joined(arrays: str | None) -> list[list[str]]:
    """JSON arrays joined by "," (StringAgg), as a list of lists (decoded once per text)."""
    return decoded(f"[{arrays}]") if arrays else []
