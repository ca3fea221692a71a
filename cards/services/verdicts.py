"""A verdict on a claim (or a lead's adjudication): a verdict revision on the claim's chain."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from cards.chain import verdict_revision
from cards.models import (
    Association,
    Claim,
    Diagnosis,
    Origin,
    Relevance,
    Support,
    VerdictRevision,
)
from cards.rules import association_problem, default_association
from cards.services.guards import BLANK, ChainHead, StaleCard, lock_claim_row, refuse_non_member
from cards.services.tallies import verdict_fields, verdict_insert_chosen
from evidence.models import Membership
from evidence.rows import prepared_cursor


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

    Three statements: the lock, one read of everything the rules need, and the INSERT
    with, when the default source counts this verdict, the UPDATE of the claim's stored
    figures (`cards.services.tallies`) in the same round trip on PostgreSQL.
    """
    origin = Origin.ADJUDICATION if adjudication else Origin.REVIEW
    lock_claim_row(claim.pk)
    state = _chain_state(claim_pk=claim.pk, author=author, origin=origin)
    if state is None:
        raise Claim.DoesNotExist("No such claim.")
    role = state["role"]
    refuse_non_member(Membership(role=role) if role else None, lead=adjudication)
    citations = state["citations"]
    if state["seq"] != seen_claim_seq:
        # A rewrite or a withdrawal since the form was loaded: the form is stale.
        stale = (
            gettext(
                "%(who)s withdrew this claim since you opened it. Your verdict was not saved; "
                "what you typed is kept below: read the claim again and save."
            )
            if state["withdrawn"]
            else gettext(
                "%(who)s rewrote this claim since you opened it. Your verdict was not saved; "
                "what you typed is kept below: read the claim again and save."
            )
        )
        raise StaleCard(stale % {"who": state["annotator"]})
    errors: dict[str, str] = {}
    if support not in Support.values:
        errors["support"] = gettext("Choose supported, partial, unsupported or not assessable.")
    if reason is None or BLANK.match(reason):
        errors["reason"] = gettext(
            "A written reason is required: say what in the passage decides it."
        )
    if contradicts and support != Support.UNSUPPORTED:
        errors["contradicts"] = gettext("Only an unsupported claim can be marked as contradicted.")
    if diagnosis and diagnosis not in Diagnosis.values:
        errors["diagnosis"] = gettext("Not one of the six diagnoses.")
    relevance = {ref: label for ref, label in (citation_relevance or {}).items() if label}
    if set(relevance) - set(citations) or set(relevance.values()) - set(Relevance.values):
        errors["citation_relevance"] = gettext(
            "Relevance is judged only for the claim's citations."
        )
    if association is None:
        association = default_association(citations)
    if association not in Association.values:
        errors["association"] = gettext("A citation is attached or missing.")
    elif problem := association_problem(association, citations):
        errors["association"] = f"The citation {problem}: relink the claim first."
    if state["withdrawn"]:
        errors["support"] = gettext("This claim was withdrawn; it takes no verdict.")
    if errors:
        raise ValidationError(errors)
    if state["mine_seq"] != seen_own_seq:
        raise StaleCard(
            gettext(
                "You saved another verdict on this claim (in another window?) since this form "
                "was loaded. Nothing was lost; here is the current card."
            )
        )
    # The chain's head is the newer of the newest claim and the newest verdict revision.
    head = ChainHead(state["seq"], state["sha256"])
    if state["verdict_seq"] is not None and state["verdict_seq"] > head.seq:
        head = ChainHead(state["verdict_seq"], state["verdict_sha256"])
    if adjudication and seen_head_seq is not None and head.seq != seen_head_seq:
        raise StaleCard(
            gettext("A verdict arrived since you opened this claim; read it, then adjudicate.")
        )
    sealed = verdict_revision(
        project=state["project"], run_id=state["run_id"], case_id=state["case_id"],
        claim_id=state["key"], seq=head.seq + 1, author_id=author.pk,
        annotator=author.get_username(), origin=origin, association=association,
        support=support, contradicts=contradicts, reason=reason.strip(), diagnosis=diagnosis,
        citation_relevance=relevance, note=note, stated_at=None,
        supersedes_id=state["mine_id"], supersedes_seq=state["mine_seq"],
        created_at=timezone.now(), prev_sha256=head.sha256,
    )  # fmt: skip
    # The default source counts the newest adjudication, else the newest review: a review
    # saved after an adjudication changes no figure.
    counted = adjudication or not state["adjudicated"]
    fields = verdict_fields(
        support=support, association=association, diagnosis=diagnosis,
        relevance=relevance, citations=citations,
    ) if counted else None  # fmt: skip
    saved = verdict_insert_chosen(VerdictRevision(claim=claim, **sealed.row), fields=fields)
    return saved


# What a verdict needs to know about a locked claim, in one statement: the newest claim
# revision (seq, hash, citations, withdrawal, author), the names its document carries, the
# newest verdict revision (with the claim's, the chain head), the author's own newest
# verdict of this origin, and the author's role in the project (NULL for an outsider).
# Each subquery is one probe of the (claim, seq) index; asked one by one they were five
# round trips on the hot path of review. Written as SQL because building it with the ORM
# took more CPU than running it (about a third of the service's time under cProfile).
CHAIN_STATE = """
SELECT cr.seq, cr.sha256, cr.citations, cr.withdrawn, cr.annotator,
       c.key, p.slug, r.run_id, k.case_id,
       (SELECT v.seq FROM cards_verdictrevision v
         WHERE v.claim_id = cr.claim_id ORDER BY v.seq DESC LIMIT 1),
       (SELECT v.sha256 FROM cards_verdictrevision v
         WHERE v.claim_id = cr.claim_id ORDER BY v.seq DESC LIMIT 1),
       (SELECT v.id FROM cards_verdictrevision v
         WHERE v.claim_id = cr.claim_id AND v.author_id = %(author)s AND v.origin = %(origin)s
         ORDER BY v.seq DESC LIMIT 1),
       (SELECT v.seq FROM cards_verdictrevision v
         WHERE v.claim_id = cr.claim_id AND v.author_id = %(author)s AND v.origin = %(origin)s
         ORDER BY v.seq DESC LIMIT 1),
       (SELECT m.role FROM evidence_membership m
         WHERE m.project_id = r.project_id AND m.user_id = %(author)s),
       EXISTS (SELECT 1 FROM cards_verdictrevision v
         WHERE v.claim_id = cr.claim_id AND v.origin = 'adjudication')
  FROM cards_claimrevision cr
  JOIN cards_claim c ON c.id = cr.claim_id
  JOIN replay_response rs ON rs.id = c.response_id
  JOIN replay_run r ON r.id = rs.run_id
  JOIN evidence_project p ON p.id = r.project_id
  JOIN evidence_case k ON k.id = rs.case_id
 WHERE cr.claim_id = %(claim)s
 ORDER BY cr.seq DESC
 LIMIT 1
"""
STATE_NAMES = (
    "seq", "sha256", "citations", "withdrawn", "annotator", "key", "project", "run_id",
    "case_id", "verdict_seq", "verdict_sha256", "mine_id", "mine_seq", "role", "adjudicated",
)  # fmt: skip


def _chain_state(*, claim_pk: int, author: AbstractBaseUser, origin: str) -> dict[str, Any] | None:
    """The row of CHAIN_STATE for a claim, by name; None when there is no such claim."""
    with prepared_cursor() as cursor:
        cursor.execute(CHAIN_STATE, {"claim": claim_pk, "author": author.pk, "origin": origin})
        row = cursor.fetchone()
    if row is None:
        return None
    state = dict(zip(STATE_NAMES, row, strict=True))
    # JSON arrives as text on both backends (Django decodes it only for model fields).
    if isinstance(state["citations"], str):
        state["citations"] = json.loads(state["citations"])
    state["withdrawn"] = bool(state["withdrawn"])  # SQLite stores 0 and 1
    state["adjudicated"] = bool(state["adjudicated"])
    return state
