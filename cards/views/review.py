"""The case review page and its actions. Each action works as an HTMX swap and as a plain post."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap, retarget, trigger_client_event

from cards.forms import ClaimAddForm, ClaimReviseForm, VerdictForm
from cards.labels import DIAGNOSIS_HELP, SUPPORT_KEYS
from cards.prechecks import PRECHECK_HELP
from cards.selectors import (
    ReviewPage,
    claim_for,
    review_page,
    suggest_claims,
)
from cards.services import (
    StaleCard,
    claim_create,
    claim_revise,
    response_mark_complete,
    verdict_save,
)
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from replay.selectors import run_for_project


def _page(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> ReviewPage:
    membership = membership_for(user=request.user, slug=slug)
    run = run_for_project(project=membership.project, run_id=run_id)
    return review_page(run=run, case_id=case_id, membership=membership)


def _case_url(page: ReviewPage, anchor: str = "") -> str:
    response = page.response
    url = reverse(
        "case_detail", args=[response.run.project.slug, response.run.run_id, response.case.case_id]
    )
    return f"{url}#{anchor}" if anchor else url


def _verdict_form(card, data=None, *, adjudicate: bool = False) -> VerdictForm:
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


def _context(page: ReviewPage, **extra) -> dict:
    expectation = page.response.expectation
    forms = extra.pop("forms", {})
    only = extra.pop("only", None)
    for card in page.cards:
        if only is not None and card.claim.key != only:
            continue  # a partial shows one card: build no forms for the others
        submitted = forms.get(card.claim.key)
        adjudicating = submitted is not None and submitted["adjudicate"].value() in {True, "True"}
        card.form = _verdict_form(card) if submitted is None or adjudicating else submitted
        card.adjudicate_form = None
        if page.membership.can_lead:
            fresh = _verdict_form(card, adjudicate=True)
            card.adjudicate_form = submitted if adjudicating else fresh
    return {
        "project": page.response.run.project,
        "run": page.response.run,
        "membership": page.membership,
        "page": page,
        # Partials render without the page's {% with %}: give them what they use.
        "response": page.response,
        "expectation": expectation,
        "add_form": extra.pop("add_form", None)
        or ClaimAddForm(fact_ids=expectation.fact_ids, gap_ids=expectation.gap_ids),
        "diagnoses": DIAGNOSIS_HELP,
        "support_keys": SUPPORT_KEYS,
        "precheck_help": PRECHECK_HELP,
        **extra,
    }


@require_GET
def case_detail(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> HttpResponse:
    page = _page(request, slug, run_id, case_id)
    revise = request.GET.get("revise")
    if revise:  # the rewrite form of one card, on demand (30 of them would double the page)
        card = page.card(revise)
        context = _context(page, card=card, revise_key=revise, only=revise)
        template = "cards/review.html#card" if request.htmx else "cards/review.html"
        return render(request, template, context)
    return render(request, "cards/review.html", _context(page))


@require_GET
def claim_suggestions(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str
) -> HttpResponse:
    page = _page(request, slug, run_id, case_id)
    markers = [(c.start, c.end) for c in page.response.citations.all() if c.start is not None]
    suggestions = suggest_claims(page.response.text, markers)
    context = _context(page, suggestions=suggestions)
    template = "cards/review.html#suggestions" if request.htmx else "cards/review.html"
    return render(request, template, context)


@require_POST
def claim_add(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> HttpResponse:
    page = _page(request, slug, run_id, case_id)
    expectation = page.response.expectation
    form = ClaimAddForm(request.POST, fact_ids=expectation.fact_ids, gap_ids=expectation.gap_ids)
    claim = None
    if form.is_valid():
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
            _add_errors(form, exc)
    if claim is None:
        return _render_page(request, page, status=400, add_form=form)
    if not request.htmx:
        messages.success(request, f"Claim {claim.key} added.")
        return redirect(_case_url(page, f"card-{claim.key}"))
    page = _page(request, slug, run_id, case_id)
    context = _context(page, partial_messages=True)
    response = render(request, "cards/review.html#workspace-swap", context)
    return trigger_client_event(response, "claim-added", {"key": claim.key})


@require_POST
def claim_change(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, key: str
) -> HttpResponse:
    page = _page(request, slug, run_id, case_id)
    card = page.card(key)
    expectation = page.response.expectation
    refs = [passage.ref for passage in page.attachable]
    form = ClaimReviseForm(
        request.POST, fact_ids=expectation.fact_ids, gap_ids=expectation.gap_ids, refs=refs
    )
    status = 200
    if form.is_valid():
        data = form.cleaned_data
        try:
            claim_revise(
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
        except StaleCard as exc:
            status = 409
            messages.error(request, str(exc))
        except ValidationError as exc:
            status = 400
            messages.error(request, "; ".join(_messages(exc)))
        else:
            messages.success(request, f"Claim {key} revised.")
    else:
        status = 400
        messages.error(request, "; ".join(e for errs in form.errors.values() for e in errs))
    if status == 200 and not request.htmx:
        return redirect(_case_url(page, f"card-{key}"))
    page = _page(request, slug, run_id, case_id)
    # A refused change keeps what was typed, in the card's open revise form.
    extra = {} if status == 200 else {"revise_key": key, "revise_data": request.POST}
    template = "cards/review.html#workspace-swap" if request.htmx else "cards/review.html"
    context = _context(page, partial_messages=bool(request.htmx), **extra)
    return render(request, template, context, status=status)


@require_POST
def verdict_add(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, key: str
) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    run = run_for_project(project=membership.project, run_id=run_id)
    claim, revision = claim_for(run=run, case_id=case_id, key=key)
    form = VerdictForm(request.POST, refs=revision.citations)
    status, message, refused = 200, None, None
    if form.is_valid():
        data = form.cleaned_data
        try:
            verdict_save(
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
            status, refused = 400, exc
        except PermissionDenied as exc:
            status, message = 403, str(exc)
    else:
        status = 400
    if status == 200 and not request.htmx:
        messages.success(request, f"Verdict on {key} saved.")
        return redirect(reverse("case_detail", args=[slug, run_id, case_id]) + f"#card-{key}")
    page = review_page(run=run, case_id=case_id, membership=membership)
    card = page.card(key)
    forms = {}
    if status != 200:
        # The fresh card, with what the person typed kept, so nothing is lost.
        forms[key] = _verdict_form(
            card, request.POST, adjudicate=form.data.get("adjudicate") == "True"
        )
        if refused is not None:
            _add_errors(forms[key], refused)
    context = _context(
        page, forms=forms, card=card, card_message=message, card_message_key=key,
        only=key if request.htmx else None,
    )  # fmt: skip
    if not request.htmx:
        return render(request, "cards/review.html", context, status=status)
    response = render(request, "cards/review.html#card-swap", context, status=status)
    if status == 200:
        trigger_client_event(response, "verdict-saved", {"key": key})
    return response


@require_POST
def review_complete(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str
) -> HttpResponse:
    page = _page(request, slug, run_id, case_id)
    was_blind = page.blind
    complete = request.POST.get("complete", "1") != "0"
    status = 200
    try:
        response_mark_complete(response=page.response, author=request.user, complete=complete)
    except ValidationError as exc:
        status = 400
        messages.error(request, "; ".join(_messages(exc)))
    else:
        messages.success(
            request,
            "Your review is complete: everyone's verdicts on this case are shown."
            if complete and was_blind
            else "Decomposition marked complete."
            if complete
            else "Decomposition reopened.",
        )
    if status == 200 and not request.htmx:
        return redirect(_case_url(page))
    page = _page(request, slug, run_id, case_id)
    if request.htmx and was_blind and not page.blind:
        # Blind review is over for this reviewer: every card changes, not only the status.
        context = _context(page, partial_messages=True)
        response = render(request, "cards/review.html#workspace-swap", context)
        return reswap(retarget(response, "#workspace"), "innerHTML")
    template = "cards/review.html#status" if request.htmx else "cards/review.html"
    return render(
        request, template, _context(page, partial_messages=bool(request.htmx)), status=status
    )


def _render_page(
    request: HtmxHttpRequest, page: ReviewPage, *, status: int, **extra
) -> HttpResponse:
    template = "cards/review.html#add-claim" if request.htmx else "cards/review.html"
    return render(request, template, _context(page, **extra), status=status)


def _messages(exc: ValidationError) -> list[str]:
    if hasattr(exc, "message_dict"):
        return [m for ms in exc.message_dict.values() for m in ms]
    return list(exc.messages)


def _add_errors(form, exc: ValidationError) -> None:
    if hasattr(exc, "message_dict"):
        for field, errors in exc.message_dict.items():
            for error in errors:
                form.add_error(field if field in form.fields else None, error)
    else:
        form.add_error(None, exc)
