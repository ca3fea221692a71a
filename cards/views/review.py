"""The case review page and its actions. Each action works as an HTMX swap and as a plain post.

An HTMX action answers with the fragments it changed, swapped where they are: the
page, the answer and whatever else was typed stay. A refused one (400, 403, 409)
shows its message in the form or card it came from, with what was typed kept.

A plain post always redirects, so reloading the page it leads to never posts again.
A refused plain post keeps its message and what was typed in the session, and the
page shows them once, in the form or card the post came from.
"""

from __future__ import annotations

import functools
import hashlib
from urllib.parse import urlencode

from django.contrib import messages
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import get_template, render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap, retarget, trigger_client_event

from cards.forms import ClaimAddForm, ClaimReviseForm, VerdictForm
from cards.labels import DIAGNOSIS_HELP, SUPPORT_KEYS
from cards.prechecks import PRECHECK_HELP
from cards.selectors import (
    Card,
    ReviewPage,
    SuggestedClaim,
    claim_for,
    review_card,
    review_page,
    suggestions_for,
)
from cards.services.claims import claim_cite_sentence, claim_create, claim_revise
from cards.services.guards import StaleCard
from cards.services.reviews import response_mark_complete
from cards.services.verdicts import verdict_save
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from evidence.models import Membership
from replay.models import Run
from replay.selectors import run_for_project

# The session key of a refused plain post: its message and what was typed, shown once.
KEPT = "review-kept"


def _run(request: HtmxHttpRequest, slug: str, run_id: str) -> tuple[Membership, Run]:
    """The viewer's membership and the run, or 404 (an outsider, another project's run)."""
    membership = membership_for(user=request.user, slug=slug)
    return membership, run_for_project(project=membership.project, run_id=run_id)


def _page(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> ReviewPage:
    membership, run = _run(request, slug, run_id)
    return review_page(run=run, case_id=case_id, membership=membership)


def _case_url(
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


def _keep(request: HtmxHttpRequest, response_id: int, *, action: str, **entry) -> None:
    """Keep a plain post's outcome (a message, what was typed) for the page it redirects to."""
    data = {k: request.POST.getlist(k) for k in request.POST if k != "csrfmiddlewaretoken"}
    request.session[KEPT] = {"response": response_id, "action": action, "data": data, **entry}


def _take_kept(request: HtmxHttpRequest, page: ReviewPage) -> dict | None:
    """The kept entry of this case, once: a reload shows the page as it is."""
    kept = request.session.pop(KEPT, None)
    if not kept or kept.get("response") != page.response.pk:
        return None
    data = QueryDict(mutable=True)
    for key, values in kept.get("data", {}).items():
        data.setlist(key, values)
    kept["data"] = data
    return kept


def _errors(exc: ValidationError) -> dict[str, list[str]]:
    if hasattr(exc, "message_dict"):
        return {field: list(errors) for field, errors in exc.message_dict.items()}
    return {"__all__": list(exc.messages)}


def _add_errors(form, errors: dict[str, list[str]]) -> None:
    for name, messages_ in errors.items():
        for message in messages_:
            form.add_error(name if name in form.fields else None, message)


def _joined(errors: dict[str, list[str]]) -> str:
    return " ".join(message for messages_ in errors.values() for message in messages_)


def _refused(exc: StaleCard | ValidationError) -> tuple[int, str]:
    """The status and message of a refused claim change: 409 when the card is stale."""
    if isinstance(exc, StaleCard):
        return 409, str(exc)
    return 400, _joined(_errors(exc))


# --- suggestions -------------------------------------------------------------------------------


def _suggestion_rows(page: ReviewPage, kept: dict | None = None) -> list[SuggestedClaim]:
    """The page's suggestions; a refused plain accept brings back its text and message."""
    rows = suggestions_for(page=page)
    if kept and kept["action"] == "suggestion":
        for one in [r for row in rows for r in (row, *row.parts)]:
            if one.number == kept["data"].get("number"):
                one.text, one.error, one.taken = kept["data"].get("text", ""), kept["message"], ""
    return rows


# --- the page ------------------------------------------------------------------------------------


def _verdict_form(card: Card, data=None, *, adjudicate: bool = False) -> VerdictForm:
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


def _typed_form(membership: Membership, card: Card, data: QueryDict) -> VerdictForm:
    """A refused verdict form, what was typed kept, against the fresh card.

    An adjudication posted by someone who may not adjudicate comes back as their own
    verdict form, so that the next save is one they may make.
    """
    adjudicate = data.get("adjudicate") == "True"
    if adjudicate and not membership.can_lead:
        data = data.copy()
        data["adjudicate"], adjudicate = "", False
    return _verdict_form(card, data, adjudicate=adjudicate)


def _card_forms(card: Card, membership: Membership, submitted: VerdictForm | None) -> None:
    """Show the card whole, with its forms: a refused one as it was typed.

    A lead adjudicates only where the annotators disagree; a refused adjudication comes
    back wherever it was posted, so what was typed is never lost.
    """
    card.full = True
    adjudicating = submitted is not None and submitted["adjudicate"].value() in {True, "True"}
    card.form = _verdict_form(card) if submitted is None or adjudicating else submitted
    card.adjudicate_form = None
    if membership.can_lead and (card.disagree or adjudicating):
        card.adjudicate_form = submitted if adjudicating else _verdict_form(card, adjudicate=True)


def _card_context(card: Card, membership: Membership, **extra) -> dict:
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


def _context(page: ReviewPage, *, kept: dict | None = None, **extra) -> dict:
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
            forms[key] = _typed_form(page.membership, page.card(key), data)
            _add_errors(forms[key], kept.get("errors", {}))
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
            _add_errors(add_form, kept.get("errors", {}))
        if action == "merge":
            extra |= {
                "merge_text": data.get("text", ""),
                "merge_picks": data.getlist("pick"),
                "merge_error": kept.get("message"),
            }
    if only:
        _card_forms(page.card(only), page.membership, forms.get(only))
    if extra.get("revise_key"):
        extra["rv"] = _revise_values(page.card(extra["revise_key"]), extra.get("revise_data"))
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


@functools.cache
def _template_version() -> str:
    """The page template's own hash: a deploy that changes a card never serves an old one."""
    source = get_template("cards/review.html").template.source
    return hashlib.sha256(source.encode()).hexdigest()[:12]


def _digest(kind: str, *parts) -> str:
    return f"{kind}:" + hashlib.sha256(repr((_template_version(), *parts)).encode()).hexdigest()


def _compact_key(card: Card, context: dict) -> str:
    """Everything a compact card shows, by the hashes of its sealed revisions, and its URLs.

    Revisions are append-only and each is sealed by a SHA-256 of its content: a new claim
    or verdict revision makes a new key, so nothing is ever stale (ids could be reused by
    a database rebuilt, hashes could not). What blind review hides never reaches the key.
    """

    def sha(row) -> str | None:
        return row.sha256 if row is not None else None

    response = context["response"]
    return _digest(
        "review-card", context["project"].slug, response.run.run_id, response.case.case_id,
        card.claim.key, sha(card.revision), sha(card.current), sha(card.mine),
        sha(card.mine_adjudication), tuple(v.sha256 for v in card.others), card.disagree,
        card.blind, tuple(card.hints), tuple(card.rereview),
    )  # fmt: skip


def _compact_cards(context: dict) -> dict:
    """Render the page's compact cards, each from the cache when what it shows is unchanged.

    Thirty compact cards were half the time of the case page; most are unchanged from
    one load to the next. The whole card is never cached (forms carry a CSRF token).
    """
    compact = [card for card in context["page"].cards if not card.full]
    keys = {card.claim.pk: _compact_key(card, context) for card in compact}
    found = cache.get_many(keys.values())
    fresh = {}
    for card in compact:
        key = keys[card.claim.pk]
        if key not in found:
            found[key] = fresh[key] = render_to_string(
                "cards/review.html#card", {**context, "card": card}
            )
        card.html = mark_safe(found[key])  # our template's own output, escaped there
    cache.set_many(fresh, timeout=24 * 3600)
    return context


def _shown(passage) -> tuple:
    """What the page shows of a passage, beside its text (which its hash stands for)."""
    return (
        passage.ref, passage.sha256, passage.version_status, passage.superseded_by,
        passage.title, passage.url,
    )  # fmt: skip


def _passages(context: dict) -> dict:
    """The page's retrieved passages (20 of 2 KB in a large case), from the cache.

    Keyed by what the section shows: each passage by its hash, its rank and score, and
    the refs that badge it.
    """
    page = context["page"]
    key = _digest(
        "review-passages", [(r.rank, r.score, *_shown(r.passage)) for r in page.retrieved],
        [_shown(p) for p in page.cited_only], sorted(page.cited_refs),
        sorted(page.relevant_refs), sorted(page.expected_refs),
    )  # fmt: skip
    html = cache.get(key)
    if html is None:
        html = render_to_string("cards/review.html#passages", context)
        cache.set(key, html, timeout=24 * 3600)
    context["passages_html"] = mark_safe(html)  # our template's own output, escaped there
    return context


def _revise_values(card: Card, data: QueryDict | None) -> dict:
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


@require_GET
def case_detail(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> HttpResponse:
    page = _page(request, slug, run_id, case_id)
    revise = request.GET.get("revise")
    if revise:  # the rewrite form of one card, on demand (30 of them would double the page)
        card = page.card(revise)
        context = _context(page, card=card, revise_key=revise, only=revise)
        template = "cards/review.html#revise" if request.htmx else "cards/review.html"
        return render(request, template, context)
    kept = _take_kept(request, page)
    # ?card=KEY: that card whole, as a compact card's link shows it without JavaScript.
    shown = request.GET.get("card")
    if shown:
        page.card(shown)  # 404 for a claim not of this case
    context = _context(page, kept=kept, only=shown or None)
    return render(request, "cards/review.html", _passages(_compact_cards(context)))


@require_GET
def card_detail(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, key: str
) -> HttpResponse:
    """One card whole, from its own rows: what a compact card loads on focus or click."""
    membership, run = _run(request, slug, run_id)
    card = review_card(run=run, case_id=case_id, key=key, membership=membership)
    if not request.htmx:
        url = reverse("case_detail", args=[slug, run_id, case_id])
        return redirect(f"{url}?{urlencode({'card': key})}#card-{key}")  # the page, it whole
    _card_forms(card, membership, None)
    return render(request, "cards/review.html#card", _card_context(card, membership))


@require_GET
def claim_suggestions(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str
) -> HttpResponse:
    page = _page(request, slug, run_id, case_id)
    kept = None if request.htmx else _take_kept(request, page)
    # The partial shows no card; the page may show one whole (?card=KEY, a claim just added).
    only = "" if request.htmx else request.GET.get("card") or None
    context = _context(page, kept=kept, only=only, suggestions=_suggestion_rows(page, kept))
    template = "cards/review.html#suggestions" if request.htmx else "cards/review.html"
    return render(request, template, context)


# --- actions -----------------------------------------------------------------------------------


@require_POST
def claim_add(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> HttpResponse:
    """Add a claim from the add form, an accepted suggestion (or part), or merged suggestions."""
    page = _page(request, slug, run_id, case_id)
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
            errors = _errors(exc)
    if claim is None:
        message = _joined({**form.errors, **errors}) if origin != "add" else ""
        if not request.htmx:
            _keep(request, page.response.pk, action=origin, errors=errors, message=message)
            if origin == "add":
                return redirect(_case_url(page, "add-claim"))
            anchor = "merge-form" if origin == "merge" else f"suggestion-{data.get('number')}"
            return redirect(_case_url(page, anchor, name="claim_suggestions"))
        context = _context(page, only="")  # no card is shown: build no verdict form
        if origin == "add":
            _add_errors(form, errors)
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
        messages.success(request, f"Claim {claim.key} added.")
        if origin == "add":
            return redirect(_case_url(page, f"card-{claim.key}", card=claim.key))
        return redirect(
            _case_url(page, f"card-{claim.key}", name="claim_suggestions", card=claim.key)
        )
    page = _page(request, slug, run_id, case_id)
    card = page.card(claim.key)
    # The suggestions are open: mark the ones the claim took (the others, and what is
    # typed in them, stay as they are).
    rows = _suggestion_rows(page) if data.get("suggestions") else []
    taken = [row for row in rows if row.taken] + [
        part for row in rows if not row.taken for part in row.parts if part.taken
    ]
    context = _context(page, card=card, only=claim.key, taken_rows=taken)
    response = render(request, "cards/review.html#claim-added", context)
    return trigger_client_event(
        response, "claim-added", {"key": claim.key, "number": data.get("number", "")},
        after="settle",
    )  # fmt: skip


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
            status, message = _refused(exc)
    else:
        status, message = 400, _joined(form.errors)
    return _card_answer(request, page, key, status, message, revision, action="revise")


@require_POST
def claim_attach(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, key: str
) -> HttpResponse:
    """Attach a citation of the claim's sentence: one action on the card."""
    page = _page(request, slug, run_id, case_id)
    card = page.card(key)
    status, message, revision = 200, "", None
    try:
        seen = int(request.POST.get("seen_claim_seq", ""))
    except ValueError:
        status, message = 400, "This form is incomplete: reload the page."
    else:
        try:
            revision = claim_cite_sentence(
                claim=card.claim, author=request.user, seen_claim_seq=seen,
                ref=request.POST.get("ref", ""),
            )  # fmt: skip
        except (StaleCard, ValidationError) as exc:
            status, message = _refused(exc)
    return _card_answer(request, page, key, status, message, revision, action="attach")


def _card_answer(
    request: HtmxHttpRequest, page: ReviewPage, key: str, status: int, message: str,
    revision, *, action: str,
) -> HttpResponse:  # fmt: skip
    """The answer to a claim change: its card swapped in place, or a redirect to it."""
    notice = f"Claim {key} revised: revision {revision.seq}." if revision else ""
    if not request.htmx:
        if revision is not None:
            messages.success(request, notice)
            _keep(request, page.response.pk, action="saved", key=key, message=notice)
        else:
            _keep(request, page.response.pk, action=action, key=key, message=message)
        return redirect(_case_url(page, f"card-{key}"))
    page = review_page(run=page.response.run, case_id=page.response.case.case_id,
                       membership=page.membership)  # fmt: skip
    card = page.card(key)
    extra = {"notice": notice, "notice_key": key} if revision else {}
    if revision is None and action == "revise":
        # A refused change keeps what was typed, in the card's open revise form.
        extra = {"revise_key": key, "revise_data": request.POST}
    context = _context(
        page, card=card, only=key, card_message=message, card_message_key=key, **extra
    )
    return render(request, "cards/review.html#card-changed", context, status=status)


@require_POST
def verdict_add(
    request: HtmxHttpRequest, slug: str, run_id: str, case_id: str, key: str
) -> HttpResponse:
    membership, run = _run(request, slug, run_id)
    claim, revision = claim_for(run=run, case_id=case_id, key=key)  # not the whole page yet
    form = VerdictForm(request.POST, refs=revision.citations)
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
            status, errors = 400, _errors(exc)
        except PermissionDenied as exc:
            status, message = 403, str(exc)
    else:
        status = 400
    notice = f"Saved, revision {saved.seq}." if saved else ""
    if not request.htmx:
        if saved is not None:
            messages.success(request, f"Verdict on {key} saved: revision {saved.seq}.")
            _keep(request, claim.response_id, action="saved", key=key, message=notice)
        else:
            _keep(request, claim.response_id, action="verdict", key=key, errors=errors,
                  message=message)  # fmt: skip
        return redirect(reverse("case_detail", args=[slug, run_id, case_id]) + f"#card-{key}")
    # Only the saved card, from its own rows: the page around it is as it was.
    card = review_card(run=run, case_id=case_id, key=key, membership=membership)
    submitted = None
    if status != 200:
        # The fresh card, with what the person typed kept, so nothing is lost.
        submitted = _typed_form(membership, card, request.POST)
        _add_errors(submitted, errors)
    _card_forms(card, membership, submitted)
    context = _card_context(
        card, membership, card_message=message, card_message_key=key, notice=notice,
        notice_key=key,
    )  # fmt: skip
    response = render(request, "cards/review.html#card", context, status=status)
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
    page = _page(request, slug, run_id, case_id)
    was_blind = page.blind
    complete = request.POST.get("complete", "1") != "0"
    status = 200
    try:
        response_mark_complete(response=page.response, author=request.user, complete=complete)
    except ValidationError as exc:
        status = 400
        messages.error(request, _joined(_errors(exc)))
    else:
        messages.success(
            request,
            "Your review is complete: everyone's verdicts on this case are shown."
            if complete and was_blind
            else "Decomposition marked complete."
            if complete
            else "Decomposition reopened.",
        )
    if not request.htmx:
        return redirect(_case_url(page, "review-status" if status != 200 else ""))
    page = _page(request, slug, run_id, case_id)
    if request.htmx and was_blind and not page.blind:
        # Blind review is over for this reviewer: every card changes, not only the status.
        context = _compact_cards(_context(page, partial_messages=True))
        response = render(request, "cards/review.html#workspace-swap", context)
        return reswap(retarget(response, "#workspace"), "innerHTML")
    return render(
        request,
        "cards/review.html#status",
        _context(page, only="", partial_messages=True),
        status=status,
    )
