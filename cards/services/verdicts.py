"""A verdict on a claim (or a lead's adjudication): a verdict revision on the claim's chain."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from cards.chain import verdict_revision
from cards.models import (
    Association,
    Claim,
    ClaimRevision,
    Diagnosis,
    Origin,
    Relevance,
    Support,
    VerdictRevision,
)
from cards.rules import association_problem, default_association
from cards.services.guards import BLANK, StaleCard, identity, lock_claim, require_member


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
    claim, head = lock_claim(claim.pk)
    require_member(project_id=claim.response.run.project_id, user=author, lead=adjudication)
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
        **identity(claim), seq=head.seq + 1, author_id=author.pk,
        annotator=author.get_username(), origin=origin, association=association,
        support=support, contradicts=contradicts, reason=reason.strip(), diagnosis=diagnosis,
        citation_relevance=relevance, note=note, stated_at=None,
        supersedes_id=mine.pk if mine else None, supersedes_seq=mine.seq if mine else None,
        created_at=timezone.now(), prev_sha256=head.sha256,
    )  # fmt: skip
    return VerdictRevision.objects.create(claim=claim, **sealed.row)
