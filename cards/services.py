"""Writes of the cards app: claims, verdicts, review marks, assignments.

Every write to a claim's chain locks the claim first (SELECT … FOR UPDATE on
PostgreSQL; on SQLite every transaction already begins IMMEDIATE, which
serialises writers), reads the chain head, and appends the next revision with
the head's hash. Two people saving at once therefore get contiguous numbers
and neither save is lost; the unique (claim, seq) constraints and the
cross-table trigger refuse anything that slips past.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from cards.blind import hidden_from, sightings
from cards.chain import claim_revision, verdict_revision
from cards.models import (
    Assignment,
    Association,
    Claim,
    ClaimKind,
    ClaimRevision,
    Diagnosis,
    Origin,
    Relevance,
    ResponseReview,
    Support,
    Unblinding,
    VerdictRevision,
)
from cards.queue import claims_without_verdict
from cards.rules import association_problem, default_association, refs_for_spans
from cards.selectors import citable_refs
from evidence.models import AssignmentMode, Membership, Project
from replay.models import Response, Run

BLANK = re.compile(r"^\s*$")


class StaleCard(Exception):
    """The card changed since the form was loaded; nothing was saved."""


@dataclass(frozen=True)
class ChainHead:
    seq: int
    sha256: str | None


def _identity(claim: Claim) -> dict[str, str]:
    response = claim.response
    return {
        "project": response.run.project.slug,
        "run_id": response.run.run_id,
        "case_id": response.case.case_id,
        "claim_id": claim.key,
    }


def _lock_claim(claim_pk: int) -> tuple[Claim, ChainHead]:
    claim = (
        Claim.objects.select_for_update(of=("self",))
        .select_related("response__run__project", "response__case", "response__expectation")
        .get(pk=claim_pk)
    )
    heads = [
        row
        for row in (
            ClaimRevision.objects.filter(claim=claim)
            .order_by("-seq")
            .values_list("seq", "sha256")
            .first(),
            VerdictRevision.objects.filter(claim=claim)
            .order_by("-seq")
            .values_list("seq", "sha256")
            .first(),
        )
        if row is not None
    ]
    seq, digest = max(heads) if heads else (0, None)
    return claim, ChainHead(seq, digest)


def _require_member(*, project_id: int, user: AbstractBaseUser, lead: bool = False) -> Membership:
    membership = Membership.objects.filter(project_id=project_id, user=user).first()
    if membership is None or (lead and not membership.can_lead):
        raise PermissionDenied(
            "Only a lead of this project may do this." if lead else "Not a member."
        )
    return membership


def _clean_text(value: str, field: str, what: str) -> str:
    if value is None or BLANK.match(value):
        raise ValidationError({field: f"{what} is required: write it out, not only blanks."})
    return value.strip()


def _clean_spans(spans: Sequence[Sequence[int]], text: str) -> list[list[int]]:
    cleaned = []
    for span in spans:
        if len(span) != 2:
            raise ValidationError({"spans": "Each span is a start and an end offset."})
        start, end = int(span[0]), int(span[1])
        if not 0 <= start < end <= len(text):
            raise ValidationError({"spans": f"Span {start}..{end} is outside the answer."})
        cleaned.append([start, end])
    return sorted(cleaned)


def citations_within(response: Response, spans: Sequence[Sequence[int]]) -> list[str]:
    """Refs of the markers a claim made of `spans` takes (`cards.rules.refs_for_spans`)."""
    markers = [
        (c.start, c.end, c.passage.ref)
        for c in response.citations.select_related("passage").order_by("position")
        if c.start is not None
    ]
    return refs_for_spans(response.text, markers, spans)


def _check_links(response: Response, *, facts, gaps, citations) -> None:
    expectation = response.expectation
    unknown_facts = set(facts) - set(expectation.fact_ids)
    if unknown_facts:
        raise ValidationError(
            {"facts": f"Not a required fact of this case: {', '.join(sorted(unknown_facts))}."}
        )
    unknown_gaps = set(gaps) - set(expectation.gap_ids)
    if unknown_gaps:
        raise ValidationError(
            {"gaps": f"Not a known gap of this case: {', '.join(sorted(unknown_gaps))}."}
        )
    unknown_refs = set(citations) - citable_refs(response=response, among=citations)
    if unknown_refs:
        raise ValidationError(
            {
                "citations": "Not a passage of the snapshot this run searched: "
                f"{', '.join(sorted(unknown_refs))}."
            }
        )


def _append_claim_revision(
    *, claim: Claim, head: ChainHead, author: AbstractBaseUser, text: str, kind: str,
    spans: list, citations: list[str], facts: list[str], gaps: list[str], withdrawn: bool,
    reason: str,
) -> ClaimRevision:  # fmt: skip
    sealed = claim_revision(
        **_identity(claim), seq=head.seq + 1, text=text, kind=kind, spans=spans,
        citations=citations, facts=facts, gaps=gaps, withdrawn=withdrawn, reason=reason,
        author_id=author.pk, annotator=author.get_username(), origin=Origin.REVIEW,
        created_at=timezone.now(), prev_sha256=head.sha256,
    )  # fmt: skip
    return ClaimRevision.objects.create(claim=claim, **sealed.row)


@transaction.atomic
def claim_create(
    *, response: Response, author: AbstractBaseUser, text: str, spans: Sequence[Sequence[int]],
    kind: str = ClaimKind.FACTUAL, facts: Sequence[str] = (), gaps: Sequence[str] = (),
    citations: Sequence[str] | None = None,
) -> Claim:  # fmt: skip
    """Split one atomic claim out of an answer; its citations default to the markers it covers."""
    _require_member(project_id=response.run.project_id, user=author)
    text = _clean_text(text, "text", "The claim text")
    if kind not in ClaimKind.values:
        raise ValidationError({"kind": "A claim is factual or an abstention."})
    spans = _clean_spans(spans, response.text)
    if citations is None:
        citations = citations_within(response, spans)
    citations, facts, gaps = (
        list(dict.fromkeys(citations)),
        list(dict.fromkeys(facts)),
        list(dict.fromkeys(gaps)),
    )
    _check_links(response, facts=facts, gaps=gaps, citations=citations)
    # Lock the response's claim list so two splits at once get distinct keys and positions.
    Response.objects.select_for_update(of=("self",)).filter(pk=response.pk).first()
    existing = list(Claim.objects.filter(response=response).values_list("key", "position"))
    keys = {key for key, _ in existing}
    # c1, c2, …: one past the highest number in use (imported claims may be named c0, c1).
    number = max((int(k[1:]) for k in keys if re.fullmatch(r"c\d+", k)), default=0) + 1
    while f"c{number}" in keys:
        number += 1
    claim = Claim.objects.create(
        response=response, key=f"c{number}", position=max((p for _, p in existing), default=0) + 1
    )
    _append_claim_revision(
        claim=claim, head=ChainHead(0, None), author=author, text=text, kind=kind, spans=spans,
        citations=citations, facts=facts, gaps=gaps, withdrawn=False, reason="",
    )  # fmt: skip
    return claim


@transaction.atomic
def claim_revise(
    *, claim: Claim, author: AbstractBaseUser, seen_claim_seq: int, reason: str,
    text: str | None = None, spans: Sequence[Sequence[int]] | None = None, kind: str | None = None,
    facts: Sequence[str] | None = None, gaps: Sequence[str] | None = None,
    citations: Sequence[str] | None = None, withdrawn: bool | None = None,
) -> ClaimRevision:  # fmt: skip
    """Rewrite, relink or withdraw a claim: a new revision with a reason; the old one stays."""
    claim, head = _lock_claim(claim.pk)
    response = claim.response
    _require_member(project_id=response.run.project_id, user=author)
    reason = _clean_text(reason, "reason", "A reason for the change")
    current = ClaimRevision.objects.filter(claim=claim).order_by("-seq").first()
    if current.seq != seen_claim_seq:
        raise StaleCard(
            f"{current.annotator} changed this claim since you opened it. "
            "Your change was not saved; here is the current card."
        )
    new_text = _clean_text(text, "text", "The claim text") if text is not None else current.text
    new_kind = kind if kind is not None else current.kind
    if new_kind not in ClaimKind.values:
        raise ValidationError({"kind": "A claim is factual or an abstention."})
    new_spans = _clean_spans(spans, response.text) if spans is not None else current.spans
    new_facts = list(dict.fromkeys(facts)) if facts is not None else current.facts
    new_gaps = list(dict.fromkeys(gaps)) if gaps is not None else current.gaps
    new_citations = list(dict.fromkeys(citations)) if citations is not None else current.citations
    _check_links(response, facts=new_facts, gaps=new_gaps, citations=new_citations)
    return _append_claim_revision(
        claim=claim, head=head, author=author, text=new_text, kind=new_kind, spans=new_spans,
        citations=new_citations, facts=new_facts, gaps=new_gaps,
        withdrawn=current.withdrawn if withdrawn is None else withdrawn, reason=reason,
    )  # fmt: skip


def claim_cite_sentence(
    *, claim: Claim, author: AbstractBaseUser, seen_claim_seq: int, ref: str
) -> ClaimRevision:
    """Attach one citation its sentence offers to a claim, in one action (a claim revision).

    Only a ref that `citations_within` gives the claim's spans is accepted, so the reason
    written for the reviewer states what happened.
    """
    current = ClaimRevision.objects.filter(claim=claim).order_by("-seq").first()
    if ref in current.citations:
        raise ValidationError({"citations": f"{ref} is attached already."})
    if ref not in citations_within(claim.response, current.spans):
        raise ValidationError({"citations": f"{ref} is not cited by this claim's sentence."})
    return claim_revise(
        claim=claim, author=author, seen_claim_seq=seen_claim_seq,
        citations=[*current.citations, ref],
        reason=f"Attached the citation of its sentence: {ref}.",
    )  # fmt: skip


@transaction.atomic
def verdict_save(
    *, claim: Claim, author: AbstractBaseUser, support: str, reason: str,
    seen_claim_seq: int, seen_own_seq: int | None, association: str | None = None,
    contradicts: bool = False, diagnosis: str = "",
    citation_relevance: dict[str, str] | None = None, note: str = "",
    adjudication: bool = False, seen_head_seq: int | None = None,
) -> VerdictRevision:  # fmt: skip
    """Append a verdict revision (or a lead's adjudication) to the claim's chain.

    Stale forms are refused: the claim was rewritten since the form was loaded,
    or the author saved another verdict on it elsewhere; an adjudication is
    also refused when any verdict arrived since the lead looked.
    """
    claim, head = _lock_claim(claim.pk)
    _require_member(project_id=claim.response.run.project_id, user=author, lead=adjudication)
    current = ClaimRevision.objects.filter(claim=claim).order_by("-seq").first()
    if current.seq != seen_claim_seq:
        # A rewrite or a withdrawal since the form was loaded: the form is stale.
        raise StaleCard(
            f"{current.annotator} "
            + ("withdrew" if current.withdrawn else "rewrote")
            + " this claim since you opened it. Your verdict was not saved; what you typed is "
            "kept below: read the claim again and save."
        )
    errors: dict[str, str] = {}
    if support not in Support.values:
        errors["support"] = "Choose supported, partial, unsupported or not assessable."
    if reason is None or BLANK.match(reason):
        errors["reason"] = "A written reason is required: say what in the passage decides it."
    if contradicts and support != Support.UNSUPPORTED:
        errors["contradicts"] = "Only an unsupported claim can be marked as contradicted."
    if diagnosis and diagnosis not in Diagnosis.values:
        errors["diagnosis"] = "Not one of the six diagnoses."
    relevance = {ref: label for ref, label in (citation_relevance or {}).items() if label}
    if set(relevance) - set(current.citations) or set(relevance.values()) - set(Relevance.values):
        errors["citation_relevance"] = "Relevance is judged only for the claim's citations."
    if association is None:
        association = default_association(current.citations)
    if association not in Association.values:
        errors["association"] = "A citation is attached or missing."
    elif problem := association_problem(association, current.citations):
        errors["association"] = f"The citation {problem}: relink the claim first."
    if current.withdrawn:
        errors["support"] = "This claim was withdrawn; it takes no verdict."
    if errors:
        raise ValidationError(errors)
    origin = Origin.ADJUDICATION if adjudication else Origin.REVIEW
    mine = (
        VerdictRevision.objects.filter(claim=claim, author=author, origin=origin)
        .order_by("-seq")
        .first()
    )
    if (mine.seq if mine else None) != seen_own_seq:
        raise StaleCard(
            "You saved another verdict on this claim (in another window?) since this form was "
            "loaded. Nothing was lost; here is the current card."
        )
    if adjudication and seen_head_seq is not None and head.seq != seen_head_seq:
        raise StaleCard("A verdict arrived since you opened this claim; read it, then adjudicate.")
    sealed = verdict_revision(
        **_identity(claim), seq=head.seq + 1, author_id=author.pk,
        annotator=author.get_username(), origin=origin, association=association,
        support=support, contradicts=contradicts, reason=reason.strip(), diagnosis=diagnosis,
        citation_relevance=relevance, note=note, stated_at=None,
        supersedes_id=mine.pk if mine else None, supersedes_seq=mine.seq if mine else None,
        created_at=timezone.now(), prev_sha256=head.sha256,
    )  # fmt: skip
    return VerdictRevision.objects.create(claim=claim, **sealed.row)


@transaction.atomic
def response_mark_complete(
    *, response: Response, author: AbstractBaseUser, complete: bool = True
) -> ResponseReview:
    """Mark the decomposition complete (metrics count only reviewed responses), or reopen it.

    In a project that reviews blind, a reviewer's first mark is also the end of their own
    blind review of the case: it shows them everyone's verdicts (cards.blind), and what
    they save afterwards is an informed revision. So it is refused until they have judged
    every current claim. Reopening does not hide again what they have seen.
    """
    membership = _require_member(project_id=response.run.project_id, user=author)
    if complete and response.text and not _has_current_claim(response):
        # An answer with text and no (unwithdrawn) claim is unreviewed, not an abstention.
        raise ValidationError(
            {"complete": "Split the answer into claims first (an abstention is a claim too)."}
        )
    if complete and hidden_from(
        membership,
        sightings=sightings(run=response.run, response_ids=[response.pk]),
        response_id=response.pk,
    ):
        unjudged = _claims_without_verdict_of(response=response, author=author)
        if unjudged:
            raise ValidationError(
                {
                    "complete": f"Judge every claim first ({', '.join(unjudged)} "
                    f"{'has' if len(unjudged) == 1 else 'have'} no verdict of yours): "
                    "marking your review complete shows you the other reviewers' verdicts, "
                    "and what you save after that is an informed revision, not your blind "
                    "verdict."
                }
            )
    return ResponseReview.objects.create(
        response=response, complete=complete, author=author,
        annotator=author.get_username(), origin=Origin.REVIEW,
        # The same clock as the verdicts' created_at, which cards.blind compares it with.
        created_at=timezone.now(),
    )  # fmt: skip


def _claims_without_verdict_of(*, response: Response, author: AbstractBaseUser) -> list[str]:
    """Keys of the response's current claims that `author` has not judged (one query)."""
    newest = ClaimRevision.objects.filter(claim=OuterRef("pk")).order_by("-seq")
    mine = VerdictRevision.objects.filter(
        claim=OuterRef("pk"), author=author, origin=Origin.REVIEW
    )
    return list(
        Claim.objects.filter(response=response)
        .annotate(withdrawn=Subquery(newest.values("withdrawn")[:1]))
        .filter(withdrawn=False)
        .exclude(Exists(mine))
        .order_by("position")
        .values_list("key", flat=True)
    )


def _has_current_claim(response: Response) -> bool:
    newest = ClaimRevision.objects.filter(claim=OuterRef("pk")).order_by("-seq")
    return (
        Claim.objects.filter(response=response)
        .annotate(withdrawn=Subquery(newest.values("withdrawn")[:1]))
        .filter(withdrawn=False)
        .exists()
    )


@transaction.atomic
def assignment_set(
    *, responses: Sequence[Response], reviewer: AbstractBaseUser, lead: AbstractBaseUser
) -> int:
    """Assign responses to a reviewer (a member of their project); returns how many were new."""
    created = 0
    for response in responses:
        _require_member(project_id=response.run.project_id, user=lead, lead=True)
        _require_member(project_id=response.run.project_id, user=reviewer)
        _, was_created = Assignment.objects.get_or_create(
            response=response, reviewer=reviewer, defaults={"assigned_by": lead}
        )
        created += was_created
    return created


@transaction.atomic
def response_submit(*, response: Response, author: AbstractBaseUser) -> ResponseReview:
    """A reviewer's last step on a case ("Submit and next"): the decomposition is marked
    complete, refused while a current claim carries no verdict of theirs, so that a submitted
    case is done for them (`cards.queue`) and leaves their queue."""
    _require_member(project_id=response.run.project_id, user=author)
    missing = claims_without_verdict(response=response, user=author)
    if missing:
        keys, verb = ", ".join(missing), "has" if len(missing) == 1 else "have"
        message = f"Judge every claim before you submit: {keys} {verb} no verdict of yours."
        raise ValidationError({"complete": message})
    return response_mark_complete(response=response, author=author)


def unblinding_create(
    *, run: Run, lead: AbstractBaseUser, response: Response | None = None
) -> Unblinding | None:
    """A lead lets the reviewers of one case (`response`), or of every case of the run, see
    each other's verdicts. Recorded for good; None when it was open already."""
    _require_member(project_id=run.project_id, user=lead, lead=True)
    if not Project.objects.filter(pk=run.project_id, blind_review=True).exists():
        raise ValidationError("This project does not review blind: every verdict is visible.")
    if response is not None and response.run_id != run.pk:
        raise ValidationError("That case is not in this run.")
    done = Unblinding.objects.filter(run=run, response=None)
    if response is not None:
        done = done | Unblinding.objects.filter(run=run, response=response)
    if done.exists():
        return None
    return Unblinding.objects.create(
        run=run, response=response, author=lead, created_at=timezone.now()
    )


@dataclass(frozen=True)
class Dealt:
    created: int  # new assignments
    short: int  # cases that still have fewer reviewers than the project asks for


def assignment_seed(run: Run) -> int:
    """Random assignment's seed, derived from the run: the same run is always dealt alike."""
    digest = hashlib.sha256(f"{run.project.slug}/{run.run_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@transaction.atomic
def assignment_deal(*, run: Run, lead: AbstractBaseUser) -> Dealt:
    """Give every case of the run as many reviewers as its project asks for, from the members
    in rotation, round-robin or at random (project settings). Idempotent: a case that has
    enough reviewers (by hand or dealt) is left alone, so dealing twice adds nothing.

    Round-robin deals to whoever was dealt to least recently (in username order at first);
    random draws, for each place, among the eligible members with the fewest cases of this
    run, with a generator seeded from the run (`assignment_seed`). A member is never dealt
    the same case twice.
    """
    _require_member(project_id=run.project_id, user=lead, lead=True)
    # One deal at a time per run: two leads pressing at once must not over-assign a case.
    Run.objects.select_for_update().filter(pk=run.pk).first()
    project = Project.objects.get(pk=run.project_id)
    if project.assignment == AssignmentMode.MANUAL:
        raise ValidationError(
            "This project assigns cases by hand: choose round-robin or random in its settings."
        )
    pool = [
        m.user
        for m in Membership.objects.filter(project=project, in_rotation=True)
        .select_related("user")
        .order_by("user__username")
    ]
    if not pool:
        raise ValidationError("Choose the reviewers to deal cases to in the project's settings.")
    on_case: dict[int, set[int]] = defaultdict(set)
    load: dict[int, int] = dict.fromkeys((u.pk for u in pool), 0)
    for response_id, reviewer_id in Assignment.objects.filter(response__run=run).values_list(
        "response_id", "reviewer_id"
    ):
        on_case[response_id].add(reviewer_id)
        if reviewer_id in load:
            load[reviewer_id] += 1
    rng = random.Random(assignment_seed(run))
    turn = list(pool)  # round-robin: least recently dealt first
    created = short = 0
    new = []
    for response_id in (
        Response.objects.filter(run=run).order_by("position").values_list("pk", flat=True)
    ):
        for _ in range(project.reviewers_per_case - len(on_case[response_id])):
            eligible = [u for u in turn if u.pk not in on_case[response_id]]
            if not eligible:
                short += 1
                break
            if project.assignment == AssignmentMode.RANDOM:
                fewest = min(load[u.pk] for u in eligible)
                chosen = rng.choice([u for u in pool if u in eligible and load[u.pk] == fewest])
            else:
                chosen = eligible[0]
            turn.remove(chosen)
            turn.append(chosen)
            load[chosen.pk] += 1
            on_case[response_id].add(chosen.pk)
            new.append(Assignment(response_id=response_id, reviewer=chosen, assigned_by=lead))
            created += 1
    Assignment.objects.bulk_create(new)
    return Dealt(created, short)
