"""Reads of the case review page: the page, one card, the refs a claim may cite.

The suggested split is in `cards.suggestions`; a lead's reads (assignments,
disagreements, the imported annotators offered) in `cards.oversight`."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Prefetch
from django.http import Http404

from cards.blind import Sighted, hidden_from, sightings
from cards.models import Claim, ClaimRevision, Diagnosis, Origin, Support, VerdictRevision
from cards.prechecks import (
    ClaimFacts,
    PassageFacts,
    Prechecks,
    ResponseFacts,
    claim_prechecks,
    prechecks,
)
from cards.progress import LATEST_REVIEW_COMPLETE_SQL
from cards.rules import refs_for_spans
from cards.verdicts import current as current_verdict
from cards.verdicts import is_informed, newest_labels
from evidence.drift import newer_drift
from evidence.models import Case, Expectation, Membership, Passage
from evidence.recent import Recent
from evidence.rows import Columns, instances, prepared_cursor
from replay.models import Citation, Response, Retrieval, Run
from replay.selectors import MEMBERSHIP, OTHER_SNAPSHOTS, PROJECT, RUN, SNAPSHOT


@dataclass
class Piece:
    """A run of answer text between two boundaries (a marker edge or a claim-span edge)."""

    start: int
    text: str
    citation: Citation | None = None
    claims: list[str] = field(default_factory=list)
    support: str = ""

    @property
    def support_label(self) -> str:
        """The support shown to a reader (translated); `support` stays the code."""
        return Support(self.support).label if self.support else ""


@dataclass
class HistoryEntry:
    seq: int
    kind: str  # "claim" or "verdict"
    row: ClaimRevision | VerdictRevision
    informed: bool = False  # a verdict saved once its author could see others' (blind review)
    # A newer revision of the same line replaced it: the claim's, or the same annotator's
    # verdicts (a lead's adjudications and own verdicts are two lines).
    superseded: bool = False


class ClaimLine(NamedTuple):
    """A claim as a compact card names it."""

    pk: int
    key: str


class RevisionLine(NamedTuple):
    """A claim's current revision, the columns a compact card and the page read."""

    seq: int
    sha256: str
    text: str
    kind: str
    spans: list[list[int]]
    citations: list[str]
    withdrawn: bool


class VerdictLine(NamedTuple):
    """A verdict revision, the columns a compact card, the labels and the blind-review
    clock read (cards.verdicts reads rows by these names)."""

    pk: int
    claim_id: int
    seq: int
    sha256: str
    author_id: int | None
    annotator: str
    origin: str
    support: str
    contradicts: bool
    reason: str
    created_at: datetime

    def get_support_display(self) -> str:
        return Support(self.support).label


class VerdictRecord(NamedTuple):
    """A verdict revision, every column, as a whole card reads it: a claim judged hundreds of
    times gave a card of hundreds of verdicts, and a model instance cost five times a tuple.
    The fields of `VerdictRevision`, in its order (`pk` for `id`); the citations' relevance
    as its JSON text, decoded only where a form shows it (`citation_relevance`)."""

    pk: int
    claim_id: int
    seq: int
    author_id: int | None
    annotator: str
    origin: str
    association: str
    support: str
    contradicts: bool
    reason: str
    diagnosis: str
    citation_relevance_json: str
    note: str
    stated_at: datetime | None
    supersedes_id: int | None
    created_at: datetime
    prev_sha256: str | None
    sha256: str

    @property
    def citation_relevance(self) -> dict[str, str]:
        return json.loads(self.citation_relevance_json)

    def get_support_display(self) -> str:
        return Support(self.support).label

    def get_diagnosis_display(self) -> str:
        return Diagnosis(self.diagnosis).label if self.diagnosis else self.diagnosis


# A verdict as a card holds it: a model row (the page's whole cards), every column as a
# tuple (one card, a save's answer), or the few a compact card shows.
type AnyVerdict = VerdictRevision | VerdictRecord | VerdictLine


# The newest history entries a whole card shows until asked for all (`?history=all`).
HISTORY_SHOWN = 20


@dataclass
class Card:
    claim: Claim | ClaimLine
    revision: ClaimRevision | RevisionLine
    verdicts: list[AnyVerdict]  # visible to the viewer, newest first
    current: AnyVerdict | None  # the one that colours the card
    mine: AnyVerdict | None  # the viewer's newest review verdict
    mine_adjudication: AnyVerdict | None  # the viewer's newest adjudication
    history: list[HistoryEntry]
    head_seq: int  # of the chain as the viewer sees it (a blind reviewer: without others')
    attached: list[Passage]
    hints: list[str]
    rereview: list[tuple[str, str]] = field(default_factory=list)  # (ref, newer snapshot)
    # Refs of the markers the claim's spans take (cards.rules.refs_for_spans), offered for
    # one-click attaching while the claim cites nothing.
    offered_refs: list[str] = field(default_factory=list)
    # Each other annotator's newest verdict the viewer may see (none while blind), newest
    # first: the header shows them beside the viewer's own.
    others: list[AnyVerdict] = field(default_factory=list)
    disagree: bool = False  # the annotators' labels differ in support: a lead adjudicates
    blind: bool = False  # others' verdicts on this case are hidden from the viewer
    informed: set[int] = field(default_factory=set)  # verdicts saved after seeing others'
    full: bool = False  # shown whole (forms, passages, history), not as a compact stub
    # Built from the page's narrow read (lines, not model rows: no history, no older
    # revisions): it can only be shown compact.
    lines: bool = False
    # Each annotator's newest verdict (per origin) the viewer may see, newest first: the
    # card's list of verdicts (the history holds the superseded ones).
    lines_newest: list[AnyVerdict] = field(default_factory=list)
    # How many history entries a whole card shows, newest first (None: all of them). A
    # claim judged hundreds of times made every save answer with hundreds of entries.
    history_limit: int | None = HISTORY_SHOWN
    # A whole card's verdicts and history entries, rendered and joined (cards.views.card_cache).
    others_html: str = ""
    verdicts_html: str = ""
    history_html: str = ""

    @property
    def withdrawn(self) -> bool:
        return self.revision.withdrawn

    @property
    def history_shown(self) -> list[HistoryEntry]:
        if self.history_limit is None:
            return self.history
        return self.history[: self.history_limit]

    @property
    def history_hidden(self) -> int:
        return len(self.history) - len(self.history_shown)

    @property
    def reason_line(self) -> str:
        """The first line of the current verdict's reason: what a compact card shows."""
        reason = self.current.reason.strip() if self.current else ""
        return reason.splitlines()[0] if reason else ""


@dataclass
class ReviewPage:
    response: Response
    membership: Membership
    pieces: list[Piece]
    unplaced_citations: list[Citation]
    retrieved: list[Retrieval]
    cited_only: list[Passage]
    claim_cited_only: list[Passage]  # cited by a current claim, neither retrieved nor marked
    cited_refs: set[str]
    relevant_refs: set[str]
    expected_refs: set[str]
    cards: list[Card]
    response_hints: dict[str, list[str]]
    review_complete: bool
    blind: bool  # others' verdicts on this case are hidden from the viewer
    blind_project: bool = False
    lead_unblinded: bool = False  # a lead opened this case (or its run) to its reviewers
    informed: set[int] = field(default_factory=set)  # verdicts saved after seeing others'

    @property
    def attachable(self) -> list[Passage]:
        """The passages a claim revision offers to attach: every one this page shows."""
        return [row.passage for row in self.retrieved] + self.cited_only + self.claim_cited_only

    def card(self, key: str) -> Card:
        for card in self.cards:
            if card.claim.key == key:
                return card
        raise Http404("No such claim.")


# A card's chain, newest first, as plain lists: a prefetched `claim.verdicts.all()` still
# builds a manager and a queryset on every call, a cost the page paid per claim and per use.
CHAINS = (
    Prefetch("revisions", ClaimRevision.objects.order_by("-seq"), to_attr="revision_rows"),
    Prefetch("verdicts", VerdictRevision.objects.order_by("-seq"), to_attr="verdict_rows"),
)


def review_page(
    *, run: Run, case_id: str, membership: Membership, whole: Collection[str] | None = None
) -> ReviewPage:
    """Everything the case review page shows, in a fixed number of queries.

    `whole` names the cards the caller may show whole (forms, history, passages): those
    are built from model rows, every other one from the narrow lines a compact card
    shows (`_lines`). None builds every card whole.
    """
    response, retrieved, citations = _response_rows(run=run, case_id=case_id)
    if whole is None:
        chains = [
            Chain(claim, claim.revision_rows, claim.verdict_rows)
            for claim in Claim.objects.filter(response=response)
            .order_by("position")
            .prefetch_related(*CHAINS)
        ]
    else:
        chains = _lines(response_id=response.pk, whole=whole)
    passages: dict[str, Passage] = {row.passage.ref: row.passage for row in retrieved}
    retrieved_refs = set(passages)
    for citation in citations:
        passages.setdefault(citation.passage.ref, citation.passage)
    cited_refs = {c.passage.ref for c in citations}
    # A claim may cite a passage its response neither retrieved nor marked (bundle.md): its
    # card shows it and its pre-checks read it. One more query, only when there is one.
    claim_refs = {ref: None for chain in chains for ref in chain.revisions[0].citations}
    if set(claim_refs) - set(passages):
        for passage in Passage.objects.filter(
            snapshot_id=run.snapshot_id, ref__in=set(claim_refs) - set(passages)
        ):
            passages[passage.ref] = passage
    drifted = _drifted_refs(run=run, refs=set(passages))

    clock = sightings(
        run=run,
        response_ids=[response.pk],
        verdicts=[
            (response.pk, v.annotator, v.origin, v.created_at)
            for chain in chains
            for v in chain.verdicts
        ],
    )
    # Blind review: until the case opens to them, a reviewer's page is built from their own
    # verdicts only, so nothing of the others' (label, reason, count, colour) can reach it.
    blind = hidden_from(membership, sightings=clock, response_id=response.pk)
    sighted: Sighted = {} if blind else clock.of(response.pk)
    cards = [
        _card(chain, viewer_id=membership.user.pk, blind=blind, sighted=sighted, passages=passages)
        for chain in chains
    ]
    informed: set[int] = {pk for card in cards for pk in card.informed}
    claim_facts = [
        ClaimFacts(card.claim.key, card.revision.kind, card.revision.text, card.revision.citations)
        for card in cards
        if not card.withdrawn
    ]
    drifted_cited = frozenset(ref for ref in drifted if ref in cited_refs)
    # What the pre-checks read beside the claims is frozen (the answer, its markers, the
    # passages, the expectation): the claims' own facts and the drift complete the key.
    key = (
        run.pk, run.imported_at, run.source_sha256, response.pk, drifted_cited,
        tuple((c.key, c.kind, c.text, tuple(c.citations)) for c in claim_facts),
    )  # fmt: skip
    if (hints := page_hints.get(key)) is None:
        hints = prechecks(
            ResponseFacts(
                answer=response.text,
                marker_spans=[(c.start, c.end) for c in citations if c.start is not None],
                cited_refs=[c.passage.ref for c in citations],
                retrieved=[_facts(row.passage) for row in retrieved],
                passages={ref: _facts(p) for ref, p in passages.items()},
                relevant_refs=response.expectation.relevant_refs,
                drifted_refs=drifted_cited,
                claims=claim_facts,
            )
        )
        page_hints.set(key, hints)
    for card in cards:
        card.hints = list(hints.claims.get(card.claim.key, []))
        # The verdict rests on a text that a newer snapshot replaced: look again.
        card.rereview = [
            (ref, drifted[ref]) for ref in card.revision.citations if drifted.get(ref)
        ]
    markers = [(c.start, c.end, c.passage.ref) for c in citations if c.start is not None]
    for card in cards:
        if not card.withdrawn and not card.revision.citations and card.revision.spans:
            card.offered_refs = refs_for_spans(response.text, markers, card.revision.spans)
    pieces, unplaced = answer_pieces(response.text, citations, cards)
    expectation = response.expectation
    return ReviewPage(
        response=response,
        membership=membership,
        pieces=pieces,
        unplaced_citations=unplaced,
        retrieved=retrieved,
        cited_only=[
            passages[r]
            for r in dict.fromkeys(c.passage.ref for c in citations)
            if r not in retrieved_refs
        ],
        claim_cited_only=[
            passages[r]
            for r in claim_refs
            if r in passages and r not in retrieved_refs and r not in cited_refs
        ],
        cited_refs=cited_refs,
        relevant_refs=set(expectation.relevant_refs),
        expected_refs={r for fact in expectation.required_facts for r in fact.get("evidence", [])},
        cards=cards,
        response_hints=hints.response,
        review_complete=bool(response.review_complete)
        or (response.abstained and not response.text),
        blind=blind,
        blind_project=clock.blind,
        lead_unblinded=clock.lead_unblinded(response.pk),
        informed=informed,
    )


RESPONSE, CASE, EXPECTATION = (
    Columns(Response, "x"), Columns(Case, "k"), Columns(Expectation, "e")
)  # fmt: skip
RETRIEVAL, CITATION, PASSAGE = (
    Columns(Retrieval, "t"), Columns(Citation, "c"), Columns(Passage, "p")
)  # fmt: skip
# The case page's response, its retrieved passages and its citations, as SQL: built with the
# ORM (`select_related`, the review mark's subquery) their compilation cost 4.3 ms of CPU a
# page, their running a few tenths. A citation's passage comes with it only when the
# response did not retrieve it: the retrieved list already holds its 2 KB text.
RESPONSE_FOR_CASE = f"""
SELECT {RESPONSE.sql}, {CASE.sql}, {EXPECTATION.sql},
       {LATEST_REVIEW_COMPLETE_SQL.format(response="x")}
  FROM replay_response x
  JOIN evidence_case k ON k.id = x.case_id
  JOIN evidence_expectation e ON e.id = x.expectation_id
 WHERE x.run_id = %s AND k.case_id = %s
"""
RETRIEVED = f"""
SELECT {RETRIEVAL.sql}, {PASSAGE.sql}
  FROM replay_retrieval t
  JOIN evidence_passage p ON p.id = t.passage_id
 WHERE t.response_id = %s
 ORDER BY t.rank
"""
CITATIONS = f"""
SELECT {CITATION.sql}, {PASSAGE.sql}
  FROM replay_citation c
  LEFT JOIN evidence_passage p ON p.id = c.passage_id AND NOT EXISTS (
       SELECT 1 FROM replay_retrieval t
        WHERE t.response_id = c.response_id AND t.passage_id = c.passage_id)
 WHERE c.response_id = %s
 ORDER BY c.position
"""


# A response's retrieved passages and citations, as the page shows them, by the run's and the
# response's identity: the database refuses to change or delete those rows (evidence enters
# frozen), so an entry can never be stale. About 60 KB a response of 20 passages of 2 KB;
# it saves two queries and the 70 model instances of a large case, a third of the page's
# reads. The run's import time and source hash are in the key so that a database emptied
# and imported again (`flush` on a development machine) cannot meet an entry of its old ids.
frozen_rows: Recent[tuple, tuple[list[Retrieval], list[Citation]]] = Recent(
    settings.FROZEN_ROWS_ENTRIES
)


def _response_rows(*, run: Run, case_id: str) -> tuple[Response, list[Retrieval], list[Citation]]:
    """The case's response (with its case, expectation and review mark), what it retrieved
    and what it cited, each with its passage: three queries, or one when this process has
    read the response's frozen rows before; or 404."""
    with prepared_cursor() as cursor:
        cursor.execute(RESPONSE_FOR_CASE, [run.pk, case_id])
        row = cursor.fetchone()
        if row is None:
            raise Http404("No such case in this run.")
        response, case, expectation = instances(row, RESPONSE, CASE, EXPECTATION)
        response.review_complete = row[-1]
        response.run, response.case, response.expectation = run, case, expectation
        key = (run.pk, run.imported_at, run.source_sha256, response.pk)
        if (known := frozen_rows.get(key)) is not None:
            # Copies of the lists: a caller may extend them; the rows themselves are shared.
            return response, list(known[0]), list(known[1])
        cursor.execute(RETRIEVED, [response.pk])
        retrieved = []
        for row in cursor.fetchall():
            retrieval, passage = instances(row, RETRIEVAL, PASSAGE)
            retrieval.passage = passage
            retrieved.append(retrieval)
        cursor.execute(CITATIONS, [response.pk])
        rows = cursor.fetchall()
    passages = {row.passage_id: row.passage for row in retrieved}
    citations = []
    for row in rows:
        citation = CITATION.build(row)
        citation.passage = passages.get(citation.passage_id) or PASSAGE.build(row, len(CITATION))
        citations.append(citation)
    frozen_rows.set(key, (retrieved, citations))
    return response, list(retrieved), list(citations)


class Chain(NamedTuple):
    """A claim and its chain as a card is built from, newest first: model rows, or lines
    (`lines`: the current claim revision only, and the columns a compact card shows)."""

    claim: Claim | ClaimLine
    revisions: list[ClaimRevision] | list[RevisionLine]
    verdicts: list[AnyVerdict]
    lines: bool = False


# A compact card shows the current claim revision and each line's newest verdict: these
# two reads are all it needs, as tuples. Built as model instances through prefetches,
# 30 claims × their revisions and verdicts were most of the page's time; as SQL, not the
# ORM, because compiling the queries cost more CPU than running them (as in
# cards.services.verdicts). Each probes the (claim, seq) indexes of one response's claims.
CURRENT_REVISIONS = """
SELECT c.id, c.key, r.seq, r.sha256, r.text, r.kind, r.spans, r.citations, r.withdrawn
  FROM cards_claim c
  JOIN cards_claimrevision r ON r.claim_id = c.id
 WHERE c.response_id = %s
   AND r.seq = (SELECT MAX(x.seq) FROM cards_claimrevision x WHERE x.claim_id = c.id)
 ORDER BY c.position
"""
VERDICT_LINES = """
SELECT v.id, v.claim_id, v.seq, v.sha256, v.author_id, v.annotator, v.origin, v.support,
       v.contradicts, v.reason, v.created_at
  FROM cards_verdictrevision v
  JOIN cards_claim c ON c.id = v.claim_id
 WHERE c.response_id = %s
 ORDER BY v.seq DESC
"""


def _lines(*, response_id: int, whole: Collection[str]) -> list[Chain]:
    """The response's claims in order, each as lines, but those of `whole` as model rows."""
    with prepared_cursor() as cursor:
        cursor.execute(CURRENT_REVISIONS, [response_id])
        claims = cursor.fetchall()
        cursor.execute(VERDICT_LINES, [response_id])
        verdicts = cursor.fetchall()
    by_claim: dict[int, list[VerdictLine]] = {pk: [] for pk, *_ in claims}
    for (
        pk,
        claim_id,
        seq,
        sha,
        author,
        annotator,
        origin,
        support,
        contradicts,
        reason,
        at,
    ) in verdicts:
        if at.tzinfo is None:  # SQLite's cursor gives naive datetimes, stored in UTC
            at = at.replace(tzinfo=UTC)
        by_claim[claim_id].append(
            VerdictLine(
                pk, claim_id, seq, sha, author, annotator, origin, support, bool(contradicts),
                reason, at,
            )
        )  # fmt: skip
    full: dict[str, Chain] = {}
    if ids := [pk for pk, key, *_ in claims if key in set(whole)]:
        # Two more queries for the cards shown whole: every revision of their chains.
        marks = ", ".join(["%s"] * len(ids))
        with prepared_cursor() as cursor:
            cursor.execute(WHOLE_REVISIONS.format(ids=marks), ids)
            revision_rows = cursor.fetchall()
            cursor.execute(WHOLE_VERDICTS.format(ids=marks), ids)
            verdict_rows = VERDICT.values_of(cursor.fetchall())
        revisions: dict[int, list[ClaimRevision]] = {pk: [] for pk in ids}
        owners: dict[int, Claim] = {}
        for row in revision_rows:  # newest first
            revision, claim = instances(row, CLAIM_REVISION, CLAIM)
            revision.claim = owners.setdefault(claim.pk, claim)
            revisions[claim.pk].append(revision)
        rows: dict[int, list[VerdictRecord]] = {pk: [] for pk in ids}
        for values in verdict_rows:
            verdict = VerdictRecord(*values)
            rows[verdict.claim_id].append(verdict)
        for pk in ids:
            full[owners[pk].key] = Chain(owners[pk], revisions[pk], rows[pk])
    chains = []
    for pk, key, seq, sha, text, kind, spans, citations, withdrawn in claims:
        if key in full:
            chains.append(full[key])
            continue
        # JSON arrives as text on both backends (Django decodes it only for model fields).
        revision = RevisionLine(
            seq, sha, text, kind, _json(spans), _json(citations), bool(withdrawn)
        )
        chains.append(Chain(ClaimLine(pk, key), [revision], by_claim[pk], lines=True))
    return chains


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


def _card(
    chain: Chain,
    *,
    viewer_id: int,
    blind: bool,
    sighted: Sighted,
    passages: dict[str, Passage],
) -> Card:
    """One card from its claim's revisions and verdicts (newest first).

    While blind, only the viewer's own verdicts reach it: others' labels, their count and
    whether anyone disagrees stay unknown. From lines, it has no history: it is compact.
    """
    claim, revisions, all_verdicts = chain.claim, chain.revisions, chain.verdicts
    own = [v for v in all_verdicts if v.author_id == viewer_id]
    mine = next((v for v in own if v.origin == Origin.REVIEW), None)
    mine_adjudication = next((v for v in own if v.origin == Origin.ADJUDICATION), None)
    visible = own if blind else all_verdicts
    informed = {v.pk for v in visible if is_informed(v, sighted)}
    newest: dict[tuple[str, str], VerdictRevision] = {}  # each line's newest: the others' stay
    for verdict in visible:
        newest.setdefault((verdict.annotator, verdict.origin), verdict)
    history = []
    if not chain.lines:
        history = [
            HistoryEntry(r.seq, "claim", r, superseded=r is not revisions[0]) for r in revisions
        ] + [
            HistoryEntry(
                v.seq, "verdict", v, v.pk in informed,
                superseded=newest[(v.annotator, v.origin)] is not v,
            )
            for v in visible
        ]  # fmt: skip
        history.sort(key=lambda entry: entry.seq, reverse=True)
    labels = {} if blind else newest_labels(all_verdicts, sighted=sighted)
    current_revision = revisions[0]
    return Card(
        claim=claim,
        revision=current_revision,
        verdicts=visible,
        current=current_verdict(visible),
        mine=mine,
        mine_adjudication=mine_adjudication,
        history=history,
        head_seq=max([r.seq for r in revisions] + [v.seq for v in visible]),
        attached=[passages[r] for r in current_revision.citations if r in passages],
        hints=[],
        others=[v for v in newest.values() if v.author_id != viewer_id],
        lines_newest=list(newest.values()),
        disagree=len({v.support for v in labels.values()}) > 1,
        blind=blind,
        informed=informed,
        lines=chain.lines,
    )


CLAIM_REVISION = Columns(ClaimRevision, "cr")
VERDICT = Columns(VerdictRevision, "v", raw=("citation_relevance",))  # VerdictRecord's
# A card's own rows, as SQL (compiling them with the ORM cost more CPU than running them):
# its verdicts, newest first, and the passages its claim cites, each with whether the
# response retrieved it. Each probes an index: (claim, seq), (snapshot, ref).
CARD_VERDICTS = f"""
SELECT {VERDICT.sql} FROM cards_verdictrevision v WHERE v.claim_id = %s ORDER BY v.seq DESC
"""
CARD_REVISIONS = f"""
SELECT {CLAIM_REVISION.sql} FROM cards_claimrevision cr WHERE cr.claim_id = %s ORDER BY cr.seq DESC
"""
CARD_PASSAGES = f"""
SELECT {PASSAGE.sql}, EXISTS (
       SELECT 1 FROM replay_retrieval t WHERE t.response_id = %s AND t.passage_id = p.id)
  FROM evidence_passage p
 WHERE p.snapshot_id = %s AND p.ref IN ({{refs}})
"""
MARKERS = """
SELECT c.start, c."end", p.ref
  FROM replay_citation c JOIN evidence_passage p ON p.id = c.passage_id
 WHERE c.response_id = %s AND c.start IS NOT NULL
 ORDER BY c.position
"""


def review_card(
    *, run: Run, claim: Claim, membership: Membership,
    revisions: list[ClaimRevision] | None = None,
) -> Card:  # fmt: skip
    """One card of a case, whole, from its own rows in a fixed number of queries.

    What a compact card loads and what a verdict save answers with: never the whole
    page. `claim` comes with its response and case, and `revisions` (newest first) when
    the caller read them already (`claim_for_member`). Its hints and re-review flag are
    the page's (cards.prechecks reads only the claim's passages and whether the response
    retrieved them); blind review hides the same.
    """
    response = claim.response
    response.run = run  # already loaded, with its project and snapshot
    with prepared_cursor() as cursor:
        if revisions is None:
            cursor.execute(CARD_REVISIONS, [claim.pk])
            revisions = [CLAIM_REVISION.build(row) for row in cursor.fetchall()]
        cursor.execute(CARD_VERDICTS, [claim.pk])
        verdicts = [VerdictRecord(*values) for values in VERDICT.values_of(cursor.fetchall())]
        refs = revisions[0].citations
        passages, retrieved = _card_passages(cursor, run=run, response=response, refs=refs)
    clock = sightings(run=run, response_ids=[response.pk])  # verdicts per annotator: one query
    blind = hidden_from(membership, sightings=clock, response_id=response.pk)
    card = _card(
        Chain(claim, revisions, verdicts),
        viewer_id=membership.user.pk,
        blind=blind,
        sighted={} if blind else clock.of(response.pk),
        passages=passages,
    )
    card.full = True
    revision = card.revision
    if not card.withdrawn:
        facts = ResponseFacts(
            answer=response.text, marker_spans=[], cited_refs=[], retrieved=[],
            passages={ref: _facts(p) for ref, p in passages.items()}, relevant_refs=[],
        )  # fmt: skip
        claim_facts = ClaimFacts(claim.key, revision.kind, revision.text, revision.citations)
        card.hints = claim_prechecks(claim_facts, facts, retrieved)
    drifted = _drifted_refs(run=run, refs=set(refs))
    card.rereview = [(ref, drifted[ref]) for ref in refs if drifted.get(ref)]
    if not card.withdrawn and not refs and revision.spans:
        with prepared_cursor() as cursor:
            cursor.execute(MARKERS, [response.pk])
            markers = cursor.fetchall()
        card.offered_refs = refs_for_spans(response.text, markers, revision.spans)
    return card


# A case page's pre-checks by what they read (`review_page`): a view after a save finds
# them unless a claim was split, rewritten, relinked or withdrawn, or a passage drifted.
page_hints: Recent[tuple, Prechecks] = Recent(settings.FROZEN_ROWS_ENTRIES)


# The passages a claim cites, with whether its response retrieved each, by (run, response,
# refs): passages and retrieval are frozen (the database refuses to change them), so a process
# reads them once per claim's citations. The run's import time and source hash in the key, as
# in `frozen_rows`: a database rebuilt with the same ids is another run.
card_passages: Recent[tuple, tuple[dict[str, Passage], set[str]]] = Recent(
    settings.FROZEN_ROWS_ENTRIES
)


def _card_passages(
    cursor, *, run: Run, response: Response, refs: list[str]
) -> tuple[dict[str, Passage], set[str]]:
    """The claim's passages by ref, and the refs this response retrieved: one query, or none
    when this process read them before."""
    if not refs:
        return {}, set()
    key = (run.pk, run.imported_at, run.source_sha256, response.pk, tuple(refs))
    if (known := card_passages.get(key)) is not None:
        return dict(known[0]), set(known[1])  # copies: the rows themselves are shared
    passages: dict[str, Passage] = {}
    retrieved: set[str] = set()
    cursor.execute(CARD_PASSAGES.format(refs=", ".join(["%s"] * len(refs))),
                   [response.pk, run.snapshot_id, *refs])  # fmt: skip
    for row in cursor.fetchall():
        passage = PASSAGE.build(row)
        passages[passage.ref] = passage
        if row[-1]:
            retrieved.add(passage.ref)
    card_passages.set(key, (passages, retrieved))
    return dict(passages), set(retrieved)


def _facts(passage: Passage) -> PassageFacts:
    return PassageFacts(passage.ref, frozenset(passage.numbers.split()), passage.version_status)


def _drifted_refs(*, run: Run, refs: set[str]) -> dict[str, str]:
    """Refs whose text differs in another snapshot of the project → the newest such snapshot
    when it is newer than this run's ("" when only older ones differ). One query, none
    when the project holds no other snapshot (read with the run)."""
    if getattr(run, "other_snapshots", True) is False:  # read with the run: no other text
        return {}
    return newer_drift(project_id=run.project_id, snapshot_id=run.snapshot_id, refs=refs)


def citable_refs(*, response: Response, among: Iterable[str]) -> set[str]:
    """Those of `among` that a claim of this response may cite: the passages of the collection
    snapshot its run searched.

    A bundle's claim may cite any passage the bundle declares, retrieved or not (bundle.md),
    and every declared passage is stored in the run's snapshot; a reviewer may attach the
    same. One query over the refs asked about, never the whole snapshot.
    """
    refs = set(among)
    if not refs:
        return set()
    return set(
        Passage.objects.filter(snapshot_id=response.run.snapshot_id, ref__in=refs).values_list(
            "ref", flat=True
        )
    )


CLAIM = Columns(Claim, "cl")
# The chains of the cards a page shows whole (`_lines`), newest first: each claim revision
# with its claim, and every verdict as a `VerdictRecord`. By the (claim, seq) indexes.
WHOLE_REVISIONS = f"""
SELECT {CLAIM_REVISION.sql}, {CLAIM.sql}
  FROM cards_claimrevision cr JOIN cards_claim cl ON cl.id = cr.claim_id
 WHERE cr.claim_id IN ({{ids}})
 ORDER BY cr.claim_id, cr.seq DESC
"""
WHOLE_VERDICTS = f"""
SELECT {VERDICT.sql} FROM cards_verdictrevision v WHERE v.claim_id IN ({{ids}}) ORDER BY v.seq DESC
"""
# The viewer's membership, the run, and the claim with its response, case and every
# revision (newest first, one row each), in one statement: what a card and a save open
# with. The access rule of replay.selectors.run_for_member (no membership, no row: 404),
# and the unique indexes (project, slug), (project, run_id), (run, case), (response, key),
# (claim, seq).
CLAIM_FOR_MEMBER = f"""
SELECT {RUN.sql}, {PROJECT.sql}, {SNAPSHOT.sql}, {MEMBERSHIP.sql},
       {RESPONSE.sql}, {CASE.sql}, {CLAIM.sql}, {OTHER_SNAPSHOTS}, {CLAIM_REVISION.sql}
  FROM replay_run r
  JOIN evidence_project p ON p.id = r.project_id
  JOIN evidence_snapshot s ON s.id = r.snapshot_id
  JOIN evidence_membership m ON m.project_id = p.id AND m.user_id = %s
  JOIN replay_response x ON x.run_id = r.id
  JOIN evidence_case k ON k.id = x.case_id
  JOIN cards_claim cl ON cl.response_id = x.id
  JOIN cards_claimrevision cr ON cr.claim_id = cl.id
 WHERE p.slug = %s AND r.run_id = %s AND k.case_id = %s AND cl.key = %s
 ORDER BY cr.seq DESC
"""


class ClaimOfMember(NamedTuple):
    membership: Membership
    run: Run
    claim: Claim  # with its response and case
    revisions: list[ClaimRevision]  # newest first: the current one is revisions[0]


def claim_for_member(
    *, user: AbstractBaseUser, slug: str, run_id: str, case_id: str, key: str
) -> ClaimOfMember:
    """One claim of a case for a member of its project, without the whole page: 404 for an
    outsider (as `run_for_member`), and for a claim that is not of this case. One query."""
    with prepared_cursor() as cursor:
        cursor.execute(CLAIM_FOR_MEMBER, [user.pk, slug, run_id, case_id, key])
        rows = cursor.fetchall()
    if not rows:
        raise Http404("No such claim.")
    run, project, snapshot, membership, response, case, claim = instances(
        rows[0], RUN, PROJECT, SNAPSHOT, MEMBERSHIP, RESPONSE, CASE, CLAIM
    )
    run.project = membership.project = project
    run.snapshot, membership.user = snapshot, user
    response.run, response.case = run, case
    claim.response = response
    at = len(rows[0]) - len(CLAIM_REVISION)
    run.other_snapshots = bool(rows[0][at - 1])
    revisions = [CLAIM_REVISION.build(row, at) for row in rows]
    for revision in revisions:
        revision.claim = claim
    return ClaimOfMember(membership, run, claim, revisions)


def answer_pieces(
    text: str, citations: list[Citation], cards: list[Card]
) -> tuple[list[Piece], list[Citation]]:
    """Split the answer at every marker and claim-span edge, so each piece knows what covers it."""
    placed: list[Citation] = []
    unplaced = [c for c in citations if c.start is None]
    cursor = 0
    for citation in sorted((c for c in citations if c.start is not None), key=lambda c: c.start):
        if citation.start < cursor:
            unplaced.append(citation)  # overlapping markers: show the first, list the rest
            continue
        placed.append(citation)
        cursor = citation.end
    spans = [
        (start, end, card)
        for card in cards
        if not card.withdrawn
        for start, end in card.revision.spans
    ]
    edges = {0, len(text)}
    for citation in placed:
        edges.update((citation.start, citation.end))
    for start, end, _ in spans:
        edges.update((start, end))
    ordered = sorted(e for e in edges if 0 <= e <= len(text))
    # One sweep from left to right: the spans begun and not yet ended, by their place in
    # `spans` (the first covering card gives the colour), and the next placed marker (placed
    # markers do not overlap). Testing every span and marker against every piece was a
    # tenth of the case page's CPU (60 pieces × 30 claims).
    by_start = sorted(range(len(spans)), key=lambda i: spans[i][0])
    by_end = sorted(range(len(spans)), key=lambda i: spans[i][1])
    active: set[int] = set()
    begun = ended = marker = 0
    pieces = []
    for start, end in zip(ordered, ordered[1:], strict=False):
        if start == end:
            continue
        while begun < len(by_start) and spans[by_start[begun]][0] <= start:
            active.add(by_start[begun])
            begun += 1
        while ended < len(by_end) and spans[by_end[ended]][1] <= start:
            active.discard(by_end[ended])
            ended += 1
        while marker < len(placed) and placed[marker].end <= start:
            marker += 1
        citation = None
        if marker < len(placed) and placed[marker].start <= start and end <= placed[marker].end:
            citation = placed[marker]
        covering = [spans[i][2] for i in sorted(active) if end <= spans[i][1]]
        support = covering[0].current.support if covering and covering[0].current else ""
        pieces.append(
            Piece(
                start=start,
                text=text[start:end],
                citation=citation,
                claims=list(dict.fromkeys(card.claim.key for card in covering)),
                support=support,
            )
        )
    return pieces, unplaced
