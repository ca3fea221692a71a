"""What the case review page and its fragments are built from: the page context, the
cards' forms, and what a refused plain post typed (kept in the session, shown once)."""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import urlencode

from django.core.exceptions import ValidationError
from django.http import QueryDict
from django.urls import reverse

from cards.forms import ClaimAddForm, VerdictForm
from cards.labels import DIAGNOSIS_HELP, SUPPORT_KEYS
from cards.prechecks import PRECHECK_HELP
from cards.selectors import (
    Card,
    ReviewPage,
    review_page,
)
from cards.services.guards import StaleCard
from cards.suggestions import SuggestedClaim, suggestions_for
from cards.views.card_cache import form_bodies, whole_rows
from evidence.http import HtmxHttpRequest
from evidence.models import Membership
from replay.models import Run
from replay.selectors import run_for_member

# The session key of a refused plain post: its message and what was typed, shown once.
KEPT = "review-kept"


def run_of(request: HtmxHttpRequest, slug: str, run_id: str) -> tuple[Membership, Run]:
    """The viewer's membership and the run, or 404 (an outsider, another project's run)."""
    return run_for_member(user=request.user, slug=slug, run_id=run_id)


def page_of(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, *, whole: Collection[str]
) -> ReviewPage:
    """The case page, the cards of `whole` (claim keys) built to be shown whole."""
    membership, run = run_of(request, slug, run_id)
    return review_page(run=run, case_id=case_id, membership=membership, whole=whole)


def case_url(
    page: ReviewPage, anchor: str = "", *, name: str = "case_detail", card: str = ""
) -> str:
    """The case page (or its suggestions page), `card` shown whole, at `anchor`."""
    response = page.response
    url = reverse(
        name, args=[response.run.project.slug, response.run.run_id, response.case.case_id]
    )
    if card:
        url = f"{url}?{urlencode({'card': card})}"
    return f"{url}#{anchor}" if anchor else url


# --- what a refused plain post leaves for the page ---------------------------------------------


def keep_typed(request: HtmxHttpRequest, response_id: int, *, action: str, **entry) -> None:
    """Keep a plain post's outcome (a message, what was typed) for the page it redirects to."""
    data = {k: request.POST.getlist(k) for k in request.POST if k != "csrfmiddlewaretoken"}
    request.session[KEPT] = {"response": response_id, "action": action, "data": data, **entry}


def kept_key(request: HtmxHttpRequest) -> list[str]:
    """The claim whose card a kept entry shows whole, if any (before `take_kept`)."""
    key = (request.session.get(KEPT) or {}).get("key")
    return [key] if key else []


def take_kept(request: HtmxHttpRequest, page: ReviewPage) -> dict | None:
    """The kept entry of this case, once: a reload shows the page as it is."""
    kept = request.session.pop(KEPT, None)
    if not kept or kept.get("response") != page.response.pk:
        return None
    data = QueryDict(mutable=True)
    for key, values in kept.get("data", {}).items():
        data.setlist(key, values)
    kept["data"] = data
    return kept


def errors_of(exc: ValidationError) -> dict[str, list[str]]:
    if hasattr(exc, "message_dict"):
        return {field: list(errors) for field, errors in exc.message_dict.items()}
    return {"__all__": list(exc.messages)}


def add_errors(form, errors: dict[str, list[str]]) -> None:
    for name, messages_ in errors.items():
        for message in messages_:
            form.add_error(name if name in form.fields else None, message)


def joined(errors: dict[str, list[str]]) -> str:
    return " ".join(message for messages_ in errors.values() for message in messages_)


def refusal_of(exc: StaleCard | ValidationError) -> tuple[int, str]:
    """The status and message of a refused claim change: 409 when the card is stale."""
    if isinstance(exc, StaleCard):
        return 409, str(exc)
    return 400, joined(errors_of(exc))


# --- suggestions -------------------------------------------------------------------------------


def suggestion_rows(page: ReviewPage, kept: dict | None = None) -> list[SuggestedClaim]:
    """The page's suggestions; a refused plain accept brings back its text and message."""
    rows = suggestions_for(page=page)
    if kept and kept["action"] == "suggestion":
        for one in [r for row in rows for r in (row, *row.parts)]:
            if one.number == kept["data"].get("number"):
                one.text, one.error, one.taken = kept["data"].get("text", ""), kept["message"], ""
    return rows


# --- the page ------------------------------------------------------------------------------------


def verdict_form(card: Card, data=None, *, adjudicate: bool = False) -> VerdictForm:
    # A lead's adjudications and own verdicts are two separate lines of revisions.
    own = card.mine_adjudication if adjudicate else card.mine
    initial = {
        "seen_claim_seq": card.revision.seq,
        "seen_own_seq": own.seq if own else None,
        "seen_head_seq": card.head_seq,
        "adjudicate": adjudicate,
    }
    if own is not None:
        initial |= {
            "support": own.support,
            "association": own.association,
            "contradicts": own.contradicts,
            "diagnosis": own.diagnosis,
        }
        for i, ref in enumerate(card.revision.citations):
            initial[f"relevance_{i}"] = own.citation_relevance.get(ref, "")
    form = VerdictForm(data, initial=initial, refs=card.revision.citations)
    if data is not None:
        form.is_valid()
        # A refused or stale save keeps what the person typed, against the fresh card.
        fresh = {k: v for k, v in initial.items() if k.startswith("seen_")}
        form.data = form.data.copy()
        for key, value in fresh.items():
            form.data[key] = "" if value is None else value
    return form


def typed_form(membership: Membership, card: Card, data: QueryDict) -> VerdictForm:
    """A refused verdict form, what was typed kept, against the fresh card.

    An adjudication posted by someone who may not adjudicate comes back as their own
    verdict form, so that the next save is one they may make.
    """
    adjudicate = data.get("adjudicate") == "True"
    if adjudicate and not membership.can_lead:
        data = data.copy()
        data["adjudicate"], adjudicate = "", False
    return verdict_form(card, data, adjudicate=adjudicate)


def card_forms(card: Card, membership: Membership, submitted: VerdictForm | None) -> None:
    """Show the card whole, with its forms: a refused one as it was typed.

    A lead adjudicates only where the annotators disagree; a refused adjudication comes
    back wherever it was posted, so what was typed is never lost.
    """
    if card.lines:
        raise ValueError(f"Card {card.claim.key} was read compact: name it in `whole`.")
    card.full = True
    whole_rows(card)
    adjudicating = submitted is not None and submitted["adjudicate"].value() in {True, "True"}
    card.form = verdict_form(card) if submitted is None or adjudicating else submitted
    card.adjudicate_form = None
    if membership.can_lead and (card.disagree or adjudicating):
        card.adjudicate_form = submitted if adjudicating else verdict_form(card, adjudicate=True)
    form_bodies(card)


def card_context(card: Card, membership: Membership, **extra) -> dict:
    """What the card partial needs, for one card built by its own selector (no page)."""
    response = card.claim.response
    return {
        "project": response.run.project,
        "run": response.run,
        "membership": membership,
        "response": response,
        "card": card,
        "support_keys": SUPPORT_KEYS,
        "precheck_help": PRECHECK_HELP,
        **extra,
    }


def page_context(page: ReviewPage, *, kept: dict | None = None, **extra) -> dict:
    """The page's context. Cards are compact but `only`, the one card shown whole (its forms
    built), or the card a refused or saved plain post came from; `kept` shows that post."""
    expectation = page.response.expectation
    forms = extra.pop("forms", {})
    only = extra.pop("only", None)
    add_form = extra.pop("add_form", None)
    if kept is not None:
        data, key, action = kept["data"], kept.get("key", ""), kept["action"]
        if key and only is None:
            only = key
        if action == "verdict":
            forms[key] = typed_form(page.membership, page.card(key), data)
            add_errors(forms[key], kept.get("errors", {}))
        if action in {"verdict", "revise", "attach"}:
            extra.setdefault("card_message", kept.get("message"))
            extra.setdefault("card_message_key", key)
        if action == "revise":
            extra |= {"revise_key": key, "revise_data": data}
        if action == "saved":
            extra |= {"notice": kept.get("message"), "notice_key": key}
        if action == "add":
            add_form = ClaimAddForm(
                data, fact_ids=expectation.fact_ids, gap_ids=expectation.gap_ids
            )
            add_form.is_valid()
            add_errors(add_form, kept.get("errors", {}))
        if action == "merge":
            extra |= {
                "merge_text": data.get("text", ""),
                "merge_picks": data.getlist("pick"),
                "merge_error": kept.get("message"),
            }
    if only:
        card_forms(page.card(only), page.membership, forms.get(only))
    if extra.get("revise_key"):
        extra["rv"] = revise_values(page.card(extra["revise_key"]), extra.get("revise_data"))
    return {
        "project": page.response.run.project,
        "run": page.response.run,
        "membership": page.membership,
        "page": page,
        # Partials render without the page's {% with %}: give them what they use.
        "response": page.response,
        "expectation": expectation,
        "add_form": add_form
        or ClaimAddForm(fact_ids=expectation.fact_ids, gap_ids=expectation.gap_ids),
        "diagnoses": DIAGNOSIS_HELP,
        "support_keys": SUPPORT_KEYS,
        "precheck_help": PRECHECK_HELP,
        **extra,
    }


def revise_values(card: Card, data: QueryDict | None) -> dict:
    """What the rewrite form shows: the claim as it is, or what a refused change typed."""
    revision = card.revision
    if data is None:
        return {
            "text": revision.text, "kind": revision.kind, "facts": revision.facts,
            "gaps": revision.gaps, "citations": revision.citations,
            "withdrawn": revision.withdrawn, "reason": "",
        }  # fmt: skip
    return {
        "text": data.get("text", ""), "kind": data.get("kind", ""),
        "facts": data.getlist("facts"), "gaps": data.getlist("gaps"),
        "citations": data.getlist("citations"), "withdrawn": bool(data.get("withdrawn")),
        "reason": data.get("reason", ""),
    }  # fmt: skip
