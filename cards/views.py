"""The case review page and its actions. Each action works as an HTMX swap and as a plain post."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import trigger_client_event

from cards.agreement import annotators_of, run_agreement
from cards.dashboard import (
    WIDTH,
    case_rows,
    figures_csv,
    interval_rows,
    precheck_counts,
    retrieval_table,
    sample_size_help,
    verdict_bar,
    verdict_counts,
)
from cards.forms import ClaimAddForm, ClaimReviseForm, VerdictForm
from cards.labels import DIAGNOSIS_HELP, SUPPORT_KEYS
from cards.metrics import Source, run_metrics
from cards.models import Support
from cards.prechecks import PRECHECK_HELP
from cards.selectors import (
    ReviewPage,
    assignments_for_run,
    claim_for,
    disagreements,
    next_in_queue,
    review_page,
    suggest_claims,
)
from cards.services import (
    StaleCard,
    assignment_set,
    claim_create,
    claim_revise,
    response_mark_complete,
    verdict_save,
)
from cards.stats import wilson
from evidence.http import HtmxHttpRequest
from evidence.models import Membership
from evidence.selectors import membership_for
from replay.selectors import responses_for_run, run_for_project


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
    refs = [row.passage.ref for row in page.retrieved] + [p.ref for p in page.cited_only]
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
    complete = request.POST.get("complete", "1") != "0"
    status = 200
    try:
        response_mark_complete(response=page.response, author=request.user, complete=complete)
    except ValidationError as exc:
        status = 400
        messages.error(request, "; ".join(_messages(exc)))
    else:
        messages.success(
            request, "Decomposition marked complete." if complete else "Decomposition reopened."
        )
    if status == 200 and not request.htmx:
        return redirect(_case_url(page))
    page = _page(request, slug, run_id, case_id)
    template = "cards/review.html#status" if request.htmx else "cards/review.html"
    return render(
        request, template, _context(page, partial_messages=bool(request.htmx)), status=status
    )


@require_GET
def queue_next(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    response = next_in_queue(membership=membership)
    if response is None:
        messages.info(request, "Your queue is empty: every case assigned to you is reviewed.")
        return redirect("project_detail", slug)
    return redirect("case_detail", slug, response.run.run_id, response.case.case_id)


@require_http_methods(["GET", "POST"])
def run_assign(request: HtmxHttpRequest, slug: str, run_id: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    if not membership.can_lead:
        raise PermissionDenied("Only a lead assigns cases.")
    run = run_for_project(project=membership.project, run_id=run_id)
    responses = list(responses_for_run(run=run))
    members = list(
        Membership.objects.filter(project=membership.project)
        .select_related("user")
        .order_by("user__username")
    )
    if request.method == "POST":
        reviewer = next(
            (m.user for m in members if m.user.username == request.POST.get("reviewer")), None
        )
        chosen = set(request.POST.getlist("responses"))
        picked = [r for r in responses if str(r.pk) in chosen]
        if reviewer is None or not picked:
            messages.error(request, "Choose a reviewer and at least one case.")
        else:
            created = assignment_set(responses=picked, reviewer=reviewer, lead=request.user)
            messages.success(request, f"Assigned {created} new case(s) to {reviewer.username}.")
        return redirect("run_assign", slug, run_id)
    return render(
        request,
        "cards/assign.html",
        {
            "project": membership.project,
            "run": run,
            "responses": responses,
            "members": members,
            "assigned": assignments_for_run(run=run),
        },
    )


@require_GET
def run_disagreements(request: HtmxHttpRequest, slug: str, run_id: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    if not membership.can_lead:
        raise PermissionDenied("Only a lead sees disagreements before adjudicating.")
    run = run_for_project(project=membership.project, run_id=run_id)
    return render(
        request,
        "cards/disagreements.html",
        {"project": membership.project, "run": run, "items": disagreements(run=run)},
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


CASES_PER_PAGE = 50
BLIND_FIGURES = (
    "This project reviews blind: figures built from other reviewers' verdicts are for leads "
    "until the review is over."
)


def blind_for(membership: Membership) -> bool:
    """Blind double review hides others' verdicts from reviewers, in aggregates too."""
    return membership.project.blind_review and not membership.can_lead


def _fraction(raw: str | None, default: float, low: float, high: float) -> float:
    try:
        value = float(raw) / 100 if raw else default
    except ValueError:
        return default
    return value if low <= value <= high else default


@require_GET
def run_figures(
    request: HtmxHttpRequest, slug: str, run_id: str, fmt: str = "html"
) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    if blind_for(membership):
        raise PermissionDenied(BLIND_FIGURES)
    run = run_for_project(project=membership.project, run_id=run_id)
    source = Source.parse(request.GET.get("source"))
    figures = run_metrics(run=run, source=source)
    if fmt == "json":
        response = JsonResponse(
            figures.as_json(), json_dumps_params={"ensure_ascii": False, "indent": 1}
        )
        response["Content-Disposition"] = f'attachment; filename="{run.run_id}-figures.json"'
        return response
    if fmt == "csv":
        response = HttpResponse(figures_csv(figures), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{run.run_id}-figures.csv"'
        return response
    annotators = annotators_of(run=run)
    chosen = [a for a in request.GET.getlist("annotator") if a in annotators]
    agreement = run_agreement(run=run, annotators=chosen or annotators)
    helper = sample_size_help(
        margin=_fraction(request.GET.get("margin"), 0.05, 0.005, 0.5),
        confidence=_fraction(request.GET.get("confidence"), 0.95, 0.5, 0.999),
        current_n=figures.totals["claims"],
    )
    context = {
        "project": membership.project,
        "membership": membership,
        "run": run,
        "figures": figures,
        "source": source,
        "annotators": annotators,
        "agreement": agreement,
        "agreement_interval": (
            wilson(agreement.raw.k, agreement.raw.n) if agreement.raw.defined else None
        ),
        "labels": [label for label, _ in Support.choices],
        "bar": verdict_bar(figures),
        "verdict_counts": verdict_counts(figures),
        "intervals": interval_rows(figures),
        "retrieval": retrieval_table(figures),
        # 10,000 cases make a page nobody reads: the per-case table is paginated.
        "cases": Paginator(case_rows(figures), CASES_PER_PAGE).get_page(request.GET.get("page")),
        "prechecks": precheck_counts(figures),
        "helper": helper,
        "width": WIDTH,
    }
    template = (
        "cards/figures.html#sample-size"
        if request.htmx and request.GET.get("helper")
        else "cards/figures.html"
    )
    return render(request, template, context)
