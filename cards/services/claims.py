"""Writes of a claim's chain: a claim split out of an answer, rewritten, relinked, withdrawn.

Each is a claim revision appended under the claim's lock (`cards.services.guards`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from cards.chain import claim_revision
from cards.models import Claim, ClaimKind, ClaimRevision, Origin
from cards.rules import refs_for_spans
from cards.run_writes import lock_for_write, ordered
from cards.selectors import citable_refs
from cards.services.guards import (
    ChainHead,
    StaleCard,
    clean_text,
    identity,
    lock_claim,
    require_member,
)
from cards.services.tallies import claims_refresh
from replay.models import Response


def _text_required() -> str:
    return gettext("The claim text is required: write it out, not only blanks.")


def _clean_spans(spans: Sequence[Sequence[int]], text: str) -> list[list[int]]:
    cleaned = []
    for span in spans:
        if len(span) != 2:
            raise ValidationError({"spans": gettext("Each span is a start and an end offset.")})
        start, end = int(span[0]), int(span[1])
        if not 0 <= start < end <= len(text):
            outside = gettext("Span %(start)s..%(end)s is outside the answer.")
            raise ValidationError({"spans": outside % {"start": start, "end": end}})
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
            {
                "facts": gettext("Not a required fact of this case: %(ids)s.")
                % {"ids": ", ".join(sorted(unknown_facts))}
            }
        )
    unknown_gaps = set(gaps) - set(expectation.gap_ids)
    if unknown_gaps:
        raise ValidationError(
            {
                "gaps": gettext("Not a known gap of this case: %(ids)s.")
                % {"ids": ", ".join(sorted(unknown_gaps))}
            }
        )
    unknown_refs = set(citations) - citable_refs(response=response, among=citations)
    if unknown_refs:
        raise ValidationError(
            {
                "citations": gettext("Not a passage of the snapshot this run searched: %(refs)s.")
                % {"refs": ", ".join(sorted(unknown_refs))}
            }
        )


def _append_claim_revision(
    *, claim: Claim, head: ChainHead, author: AbstractBaseUser, text: str, kind: str,
    spans: list, citations: list[str], facts: list[str], gaps: list[str], withdrawn: bool,
    reason: str,
) -> ClaimRevision:  # fmt: skip
    sealed = claim_revision(
        **identity(claim), seq=head.seq + 1, text=text, kind=kind, spans=spans,
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
    require_member(project_id=response.run.project_id, user=author)
    text = clean_text(text, "text", _text_required())
    if kind not in ClaimKind.values:
        raise ValidationError({"kind": gettext("A claim is factual or an abstention.")})
    spans = _clean_spans(spans, response.text)
    if citations is None:
        citations = citations_within(response, spans)
    citations, facts, gaps = (
        list(dict.fromkeys(citations)),
        list(dict.fromkeys(facts)),
        list(dict.fromkeys(gaps)),
    )
    _check_links(response, facts=facts, gaps=gaps, citations=citations)
    # Lock the response's claim list so two splits at once get distinct keys and positions
    # (SQLite needs no lock: one writer at a time), announcing the write to its run.
    if ordered():
        lock_for_write(
            "replay_response", run_column="run_id", where="id = %s", params=[response.pk]
        )
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
    claims_refresh(run=response.run, claim_pks=[claim.pk])
    return claim


@transaction.atomic
def claim_revise(
    *, claim: Claim, author: AbstractBaseUser, seen_claim_seq: int, reason: str,
    text: str | None = None, spans: Sequence[Sequence[int]] | None = None, kind: str | None = None,
    facts: Sequence[str] | None = None, gaps: Sequence[str] | None = None,
    citations: Sequence[str] | None = None, withdrawn: bool | None = None,
) -> ClaimRevision:  # fmt: skip
    """Rewrite, relink or withdraw a claim: a new revision with a reason; the old one stays."""
    claim, head = lock_claim(claim.pk)
    response = claim.response
    require_member(project_id=response.run.project_id, user=author)
    reason = clean_text(
        reason,
        "reason",
        gettext("A reason for the change is required: write it out, not only blanks."),
    )
    current = ClaimRevision.objects.filter(claim=claim).order_by("-seq").first()
    if current.seq != seen_claim_seq:
        raise StaleCard(
            gettext(
                "%(who)s changed this claim since you opened it. "
                "Your change was not saved; here is the current card."
            )
            % {"who": current.annotator}
        )
    new_text = clean_text(text, "text", _text_required()) if text is not None else current.text
    new_kind = kind if kind is not None else current.kind
    if new_kind not in ClaimKind.values:
        raise ValidationError({"kind": gettext("A claim is factual or an abstention.")})
    new_spans = _clean_spans(spans, response.text) if spans is not None else current.spans
    new_facts = list(dict.fromkeys(facts)) if facts is not None else current.facts
    new_gaps = list(dict.fromkeys(gaps)) if gaps is not None else current.gaps
    new_citations = list(dict.fromkeys(citations)) if citations is not None else current.citations
    _check_links(response, facts=new_facts, gaps=new_gaps, citations=new_citations)
    revision = _append_claim_revision(
        claim=claim, head=head, author=author, text=new_text, kind=new_kind, spans=new_spans,
        citations=new_citations, facts=new_facts, gaps=new_gaps,
        withdrawn=current.withdrawn if withdrawn is None else withdrawn, reason=reason,
    )  # fmt: skip
    # Under the claim's lock: a verdict saved meanwhile waits, then updates this row.
    claims_refresh(run=response.run, claim_pks=[claim.pk])
    return revision


def claim_cite_sentence(
    *, claim: Claim, author: AbstractBaseUser, seen_claim_seq: int, ref: str
) -> ClaimRevision:
    """Attach one citation its sentence offers to a claim, in one action (a claim revision).

    Only a ref that `citations_within` gives the claim's spans is accepted, so the reason
    written for the reviewer states what happened.
    """
    current = ClaimRevision.objects.filter(claim=claim).order_by("-seq").first()
    if ref in current.citations:
        raise ValidationError(
            {"citations": gettext("%(ref)s is attached already.") % {"ref": ref}}
        )
    if ref not in citations_within(claim.response, current.spans):
        uncited = gettext("%(ref)s is not cited by this claim's sentence.")
        raise ValidationError({"citations": uncited % {"ref": ref}})
    return claim_revise(
        claim=claim, author=author, seen_claim_seq=seen_claim_seq,
        citations=[*current.citations, ref],
        reason=f"Attached the citation of its sentence: {ref}.",
    )  # fmt: skip
