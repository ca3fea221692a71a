"""The case review page and its actions. Each action works as an HTMX swap and as a plain post.

An HTMX action answers with the fragments it changed, swapped where they are: the
page, the answer and whatever else was typed stay. A refused one (400, 403, 409)
shows its message in the form or card it came from, with what was typed kept.

A plain post always redirects, so reloading the page it leads to never posts again.
A refused plain post keeps its message and what was typed in the session, and the
page shows them once, in the form or card the post came from.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap, retarget, trigger_client_event

from cards.forms import ClaimAddForm, ClaimReviseForm, VerdictForm
from cards.selectors import (
    ReviewPage,
    claim_for_member,
    review_card,
    review_page,
)
from cards.services.claims import claim_cite_sentence, claim_create, claim_revise
from cards.services.guards import StaleCard
from cards.services.reviews import response_mark_complete
from cards.services.verdicts import verdict_save
from cards.suggestions import SuggestedClaim
from cards.views.card_cache import (
    add_claim_body,
    answer_section,
    compact_cards,
    passages_section,
    query_and_help,
)
from cards.views.review_context import (
    add_errors,
    card_context,
    card_forms,
    case_url,
    errors_of,
    joined,
    keep_typed,
    kept_key,
    page_context,
    page_of,
    refusal_of,
    suggestion_rows,
    take_kept,
    typed_form,
)
from evidence.http import HtmxHttpRequest


@require_GET
def case_detail(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> HttpResponse:
    revise = request.GET.get("revise")
    # ?card=KEY: that card whole, as a compact card's link shows it without JavaScript.
    shown = request.GET.get("card")
    whole = [revise] if revise else [*([shown] if shown else []), *kept_key(request)]
    page = page_of(request, slug, run_id, case_id, whole=whole)
    if revise:  # the rewrite form of one card, on demand (30 of them would double the page)
        card = page.card(revise)
        context = page_context(page, card=card, revise_key=revise, only=revise)
        template = "cards/review.html#revise" if request.htmx else "cards/review.html"
        return render(request, template, context)
    kept = take_kept(request, page)
    if shown:
        card = page.card(shown)  # 404 for a claim not of this case
        if request.GET.get("history") == "all":
            card.history_limit = None
    context = page_context(page, kept=kept, only=shown or None)
    context = query_and_help(answer_section(passages_section(compact_cards(context))))
    return render(request, "cards/review.html", add_claim_body(context))


@require_GET
def card_detail(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, key: str
) -> HttpResponse:
    """One card whole, from its own rows: what a compact card loads on focus or click."""
    membership, run, claim, revisions = claim_for_member(
        user=request.user, slug=slug, run_id=run_id, case_id=case_id, key=key
    )
    whole_history = request.GET.get("history") == "all"
    if not request.htmx:
        url = reverse("case_detail", args=[slug, run_id, case_id])
        query = {"card": key, **({"history": "all"} if whole_history else {})}
        return redirect(f"{url}?{urlencode(query)}#card-{key}")  # the page, it whole
    card = review_card(run=run, claim=claim, membership=membership, revisions=revisions)
    if whole_history:
        card.history_limit = None
    card_forms(card, membership, None)
    return render(request, "cards/review.html#card", card_context(card, membership))


@require_GET
def claim_suggestions(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str
) -> HttpResponse:
    # The partial shows no card; the page may show one whole (?card=KEY, a claim just added).
    only = "" if request.htmx else request.GET.get("card") or None
    whole = [] if request.htmx else [*([only] if only else []), *kept_key(request)]
    page = page_of(request, slug, run_id, case_id, whole=whole)
    kept = None if request.htmx else take_kept(request, page)
    context = page_context(page, kept=kept, only=only, suggestions=suggestion_rows(page, kept))
    template = "cards/review.html#suggestions" if request.htmx else "cards/review.html"
    return render(request, template, context)


# --- actions -----------------------------------------------------------------------------------


@require_POST
def claim_add(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> HttpResponse:
    """Add a claim from the add form, an accepted suggestion (or part), or merged suggestions."""
    page = page_of(request, slug, run_id, case_id, whole=[])
    expectation = page.response.expectation
    data = request.POST.copy()
    origin = data.get("origin", "add")  # "add", "suggestion" or "merge": the form it came from
    picks = data.getlist("pick")
    if origin == "merge" and not data.get("spans"):
        data["spans"] = ",".join(picks)  # the ticked suggestions' spans
    form = ClaimAddForm(data, fact_ids=expectation.fact_ids, gap_ids=expectation.gap_ids)
    claim, errors = None, {}
    if origin == "merge" and not picks:
        errors = {"__all__": ["Tick at least one suggestion to merge."]}
    elif form.is_valid():
        try:
            claim = claim_create(
                response=page.response,
                author=request.user,
                text=form.cleaned_data["text"],
                spans=form.cleaned_data["spans"],
                kind=form.cleaned_data["kind"],
                facts=form.cleaned_data["facts"],
                gaps=form.cleaned_data["gaps"],
            )
        except ValidationError as exc:
            errors = errors_of(exc)
    if claim is None:
        message = joined({**form.errors, **errors}) if origin != "add" else ""
        if not request.htmx:
            keep_typed(request, page.response.pk, action=origin, errors=errors, message=message)
            if origin == "add":
                return redirect(case_url(page, "add-claim"))
            anchor = "merge-form" if origin == "merge" else f"suggestion-{data.get('number')}"
            return redirect(case_url(page, anchor, name="claim_suggestions"))
        context = page_context(page, only="")  # no card is shown: build no verdict form
        if origin == "add":
            add_errors(form, errors)
            context["add_form"] = form
            template = "cards/review.html#add-claim"
        elif origin == "merge":
            context |= {"merge_text": data.get("text", ""), "merge_error": message}
            template = "cards/review.html#merge"
        else:
            context["row"] = SuggestedClaim(
                data.get("number", ""), data.get("text", ""), data.get("spans", ""), error=message
            )
            template = "cards/review.html#suggestion"
        # Only the form that was posted is swapped: the page and what was typed elsewhere stay.
        response = render(request, template, context, status=400)
        return reswap(retarget(response, "closest form"), "outerHTML")
    if not request.htmx:
        messages.success(request, gettext("Claim %(key)s added.") % {"key": claim.key})
        if origin == "add":
            return redirect(case_url(page, f"card-{claim.key}", card=claim.key))
        return redirect(
            case_url(page, f"card-{claim.key}", name="claim_suggestions", card=claim.key)
        )
    page = page_of(request, slug, run_id, case_id, whole=[claim.key])
    card = page.card(claim.key)
    # The suggestions are open: mark the ones the claim took (the others, and what is
    # typed in them, stay as they are).
    rows = suggestion_rows(page) if data.get("suggestions") else []
    taken = [row for row in rows if row.taken] + [
        part for row in rows if not row.taken for part in row.parts if part.taken
    ]
    context = page_context(page, card=card, only=claim.key, taken_rows=taken)
    response = render(request, "cards/review.html#claim-added", context)
    return trigger_client_event(
        response, "claim-added", {"key": claim.key, "number": data.get("number", "")},
        after="settle",
    )  # fmt: skip


@require_POST
def claim_change(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, key: str
) -> HttpResponse:
    page = page_of(request, slug, run_id, case_id, whole=[key])
    card = page.card(key)
    expectation = page.response.expectation
    refs = [passage.ref for passage in page.attachable]
    form = ClaimReviseForm(
        request.POST, fact_ids=expectation.fact_ids, gap_ids=expectation.gap_ids, refs=refs
    )
    status, message, revision = 200, "", None
    if form.is_valid():
        data = form.cleaned_data
        try:
            revision = claim_revise(
                claim=card.claim,
                author=request.user,
                seen_claim_seq=data["seen_claim_seq"],
                reason=data["reason"],
                text=data["text"],
                spans=data["spans"] or card.revision.spans,
                kind=data["kind"],
                facts=data["facts"],
                gaps=data["gaps"],
                citations=data["citations"],
                withdrawn=data["withdrawn"],
            )
        except (StaleCard, ValidationError) as exc:
            status, message = refusal_of(exc)
    else:
        status, message = 400, joined(form.errors)
    return _card_answer(request, page, key, status, message, revision, action="revise")


@require_POST
def claim_attach(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, key: str
) -> HttpResponse:
    """Attach a citation of the claim's sentence: one action on the card."""
    page = page_of(request, slug, run_id, case_id, whole=[key])
    card = page.card(key)
    status, message, revision = 200, "", None
    try:
        seen = int(request.POST.get("seen_claim_seq", ""))
    except ValueError:
        status, message = 400, gettext("This form is incomplete: reload the page.")
    else:
        try:
            revision = claim_cite_sentence(
                claim=card.claim, author=request.user, seen_claim_seq=seen,
                ref=request.POST.get("ref", ""),
            )  # fmt: skip
        except (StaleCard, ValidationError) as exc:
            status, message = refusal_of(exc)
    return _card_answer(request, page, key, status, message, revision, action="attach")


def _card_answer(
    request: HtmxHttpRequest, page: ReviewPage, key: str, status: int, message: str,
    revision, *, action: str,
) -> HttpResponse:  # fmt: skip
    """The answer to a claim change: its card swapped in place, or a redirect to it."""
    notice = (
        gettext("Claim %(key)s revised: revision %(seq)s.") % {"key": key, "seq": revision.seq}
        if revision
        else ""
    )
    if not request.htmx:
        if revision is not None:
            messages.success(request, notice)
            keep_typed(request, page.response.pk, action="saved", key=key, message=notice)
        else:
            keep_typed(request, page.response.pk, action=action, key=key, message=message)
        return redirect(case_url(page, f"card-{key}"))
    page = review_page(run=page.response.run, case_id=page.response.case.case_id,
                       membership=page.membership, whole=[key])  # fmt: skip
    card = page.card(key)
    extra = {"notice": notice, "notice_key": key} if revision else {}
    if revision is None and action == "revise":
        # A refused change keeps what was typed, in the card's open revise form.
        extra = {"revise_key": key, "revise_data": request.POST}
    context = page_context(
        page, card=card, only=key, card_message=message, card_message_key=key, **extra
    )
    return render(request, "cards/review.html#card-changed", context, status=status)


@require_POST
def verdict_add(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, key: str
) -> HttpResponse:
    membership, run, claim, revisions = claim_for_member(
        user=request.user, slug=slug, run_id=run_id, case_id=case_id, key=key
    )  # not the whole page yet
    form = VerdictForm(request.POST, refs=revisions[0].citations)
    status, message, errors, saved = 200, "", {}, None
    if form.is_valid():
        data = form.cleaned_data
        try:
            saved = verdict_save(
                claim=claim,
                author=request.user,
                support=data["support"],
                reason=data["reason"],
                association=data["association"] or None,
                contradicts=data["contradicts"],
                diagnosis=data["diagnosis"],
                citation_relevance=form.relevance(),
                note=data["note"],
                seen_claim_seq=data["seen_claim_seq"],
                seen_own_seq=data["seen_own_seq"],
                seen_head_seq=data["seen_head_seq"],
                adjudication=data["adjudicate"],
            )
        except StaleCard as exc:
            status, message = 409, str(exc)
        except ValidationError as exc:
            status, errors = 400, errors_of(exc)
        except PermissionDenied as exc:
            status, message = 403, str(exc)
    else:
        status = 400
    notice = gettext("Saved, revision %(seq)s.") % {"seq": saved.seq} if saved else ""
    if not request.htmx:
        if saved is not None:
            messages.success(
                request,
                gettext("Verdict on %(key)s saved: revision %(seq)s.")
                % {"key": key, "seq": saved.seq},
            )
            keep_typed(request, claim.response_id, action="saved", key=key, message=notice)
        else:
            keep_typed(request, claim.response_id, action="verdict", key=key, errors=errors,
                  message=message)  # fmt: skip
        return redirect(reverse("case_detail", args=[slug, run_id, case_id]) + f"#card-{key}")
    # Only the saved card, from its own rows: the page around it is as it was. The claim's
    # revisions read before the save are its chain's when the save went through against
    # the current one (the service checks it under the claim's lock); a refusal may be
    # for a rewrite since: then they are read again.
    if saved is None or revisions[0].seq != form.cleaned_data["seen_claim_seq"]:
        revisions = None
    card = review_card(run=run, claim=claim, membership=membership, revisions=revisions)
    if saved is not None and request.POST.get("card") == "compact":
        # Saved, and nothing else typed or open in the card (the page's script asks only
        # then): the card comes back compact, as the page shows a card the reviewer is not
        # in, and the focus moves on; focused again, it loads whole. No forms, no history.
        card.full = False
    else:
        submitted = None
        if status != 200:
            # The fresh card, with what the person typed kept, so nothing is lost.
            submitted = typed_form(membership, card, request.POST)
            add_errors(submitted, errors)
        card_forms(card, membership, submitted)
    context = card_context(
        card, membership, card_message=message, card_message_key=key, notice=notice,
        notice_key=key,
    )  # fmt: skip
    response = render(request, "cards/review.html#card", context, status=status)
    if not card.full:
        response["X-Card"] = "compact"  # the page's script moves the focus on, not htmx
    if saved is not None:
        # After the swap settles, so the script moves the focus among the new cards, and
        # colours the answer's pieces this claim covers (the answer is not sent again).
        support = card.current.support if card.current else ""
        trigger_client_event(response, "verdict-saved",
                             {"key": key, "seq": saved.seq, "support": support},
                             after="settle")  # fmt: skip
    return response


@require_POST
def review_complete(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str
) -> HttpResponse:
    page = page_of(request, slug, run_id, case_id, whole=[])
    was_blind = page.blind
    complete = request.POST.get("complete", "1") != "0"
    status = 200
    try:
        response_mark_complete(response=page.response, author=request.user, complete=complete)
    except ValidationError as exc:
        status = 400
        messages.error(request, joined(errors_of(exc)))
    else:
        messages.success(
            request,
            gettext("Your review is complete: everyone's verdicts on this case are shown.")
            if complete and was_blind
            else gettext("Decomposition marked complete.")
            if complete
            else "Decomposition reopened.",
        )
    if not request.htmx:
        return redirect(case_url(page, "review-status" if status != 200 else ""))
    page = page_of(request, slug, run_id, case_id, whole=[])
    if request.htmx and was_blind and not page.blind:
        # Blind review is over for this reviewer: every card changes, not only the status.
        context = compact_cards(page_context(page, partial_messages=True))
        response = render(request, "cards/review.html#workspace-swap", context)
        return reswap(retarget(response, "#workspace"), "innerHTML")
    return render(
        request,
        "cards/review.html#status",
        page_context(page, only="", partial_messages=True),
        status=status,
    )
