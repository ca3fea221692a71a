"""The case page's fragment cache: compact cards, the answer, the passages section, a whole
card's rows and forms, each keyed by the hashes of what it shows (append-only rows sealed by
SHA-256: never stale).

The fragments are kept in this process (`Fragments`), not in Django's cache: a key names its
content, so no process needs another's entries and none can be stale, and a card of a claim
judged hundreds of times looks up two fragments per verdict on every save, where Django's
local-memory cache checked each key and unpickled each value.
"""

from __future__ import annotations

import functools
import hashlib

from django.conf import settings
from django.template.loader import get_template, render_to_string
from django.utils.safestring import mark_safe
from django.utils.translation import get_language

from cards.labels import SUPPORT_KEYS
from cards.selectors import (
    Card,
)
from evidence.recent import Recent


class Fragments(Recent[str, str]):
    """Rendered fragments by key (HTML), the least recently used dropped past `max_entries`."""


# 1–2 KB each (a passages section 45 KB): some 30 MB per process when full.
fragments = Fragments(settings.FRAGMENT_CACHE_ENTRIES)
# The templates the cached fragments come from.
TEMPLATES = ("cards/review.html", "cards/_verdict_form.html", "replay/_passage.html")


@functools.cache
def _template_version() -> str:
    """The fragments' templates' own hash: a deploy that changes a card never serves an old
    one."""
    sources = [get_template(name).template.source for name in TEMPLATES]
    return hashlib.sha256("\0".join(sources).encode()).hexdigest()[:12]


def _version() -> str:
    """The templates' hash and the active language: every key starts with both, so an
    Italian page never gets a fragment rendered in English, nor the other way round."""
    return f"{_template_version()}-{get_language()}"


def _digest(kind: str, *parts) -> str:
    return f"{kind}:" + hashlib.sha256(repr((_version(), *parts)).encode()).hexdigest()


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


def compact_cards(context: dict) -> dict:
    """Render the page's compact cards, each from the cache when what it shows is unchanged.

    Thirty compact cards were half the time of the case page; most are unchanged from
    one load to the next. The whole card is never cached (forms carry a CSRF token).
    """
    cards = context["page"].cards
    compact = [card for card in cards if not card.full]
    keys = {card.claim.pk: _compact_key(card, context) for card in compact}
    found = fragments.get_many(keys.values())
    fresh = {}
    for card in compact:
        key = keys[card.claim.pk]
        if key not in found:
            found[key] = fresh[key] = render_to_string(
                "cards/review.html#card", {**context, "card": card}
            )
        card.html = mark_safe(found[key])  # our template's own output, escaped there
    fragments.set_many(fresh)
    if len(compact) == len(cards):  # all compact: joined here, not in a loop of the template
        context["cards_html"] = mark_safe("".join([card.html for card in cards]))
    return context


def query_and_help(context: dict) -> dict:
    """The page's query panel (keyed by its expectation's hash) and its help on diagnoses
    and keys (the same on every page), from the cache."""
    expectation = context["expectation"]
    keys = {
        "query_html": _digest(
            "review-query", expectation.pk, expectation.sha256, context["run"].locale
        ),
        "help_html": _digest("review-help"),
    }
    found = fragments.get_many(keys.values())
    for name, key in keys.items():
        if key not in found:
            partial = name.removesuffix("_html")
            found[key] = render_to_string(f"cards/review.html#{partial}", context)
            fragments.set(key, found[key])
        context[name] = mark_safe(found[key])  # our template's own output, escaped there
    return context


def whole_rows(card: Card) -> Card:
    """A whole card's verdicts, history entries and other annotators' labels, each rendered
    once and then from the cache, joined: a row is sealed by its hash, and only the flags
    beside it change its HTML.

    A card shows every verdict of its claim twice (the list and the history): on a claim
    judged again and again, rendering them grew with every save, and so did looking each
    up (the key is the row's own hash, not a hash of it) and looping over them in the
    template (they are joined here).
    """
    version, blind = _version(), f"{card.blind:d}"
    informed = card.informed
    shown = card.lines_newest
    verdicts = [f"review-verdict:{version}:{v.sha256}:{v.pk in informed:d}" for v in shown]
    # An entry's body does not show whether it is superseded (its opening tag does): the
    # verdict a save supersedes keeps its body, and a save renders one entry, not two.
    history = [
        f"review-history:{version}:{e.kind}:{e.row.sha256}:{e.informed:d}{blind}"
        for e in card.history_shown
    ]
    opening = [f"review-history-open:{version}:{e.superseded:d}" for e in card.history_shown]
    # The header's other annotators' labels: a save of mine leaves theirs as they were.
    others = [f"review-other:{version}:{v.sha256}" for v in card.others]
    found = fragments.get_many(verdicts + history + list(set(opening)) + others)
    fresh = {}
    for keys, rows, partial, name in (
        (others, card.others, "other-label", "v"),
        (verdicts, shown, "verdict-item", "v"),
        (history, card.history_shown, "history-body", "entry"),
        (opening, card.history_shown, "history-open", "entry"),
    ):
        for key, row in zip(keys, rows, strict=True):
            if key not in found:
                context = {name: row, "card": card}
                found[key] = fresh[key] = render_to_string(f"cards/review.html#{partial}", context)
    if fresh:
        fragments.set_many(fresh)
    # Each part is our template's own output, escaped there.
    card.others_html = mark_safe("".join([found[key] for key in others]))
    card.verdicts_html = mark_safe("".join([found[key] for key in verdicts]))
    card.history_html = mark_safe(
        "".join([found[open_] + found[key] for open_, key in zip(opening, history, strict=True)])
    )
    return card


def form_bodies(card: Card) -> Card:
    """A whole card's verdict forms, all but their CSRF token and hidden inputs, from the
    cache when a form shows nothing typed (a refused one, bound to what was posted, is
    rendered afresh).

    Keyed by every value the body shows: the claim's key (its ids), the button, whether
    the claim cites anything, the support, diagnosis, contradiction and relevance chosen.
    A save answers with its card: its form was two thirds of rendering it.
    """
    for form, label in ((card.form, "Save"), (card.adjudicate_form, "Adjudicate")):
        if form is None or form.is_bound:
            continue
        key = _digest(
            "verdict-form", card.claim.key, label, bool(card.revision.citations),
            form["support"].value(), form["diagnosis"].value(), form["contradicts"].value(),
            [(ref, field.value()) for ref, field in form.relevance_fields()],
            form["reason"].value(), form["note"].value(), SUPPORT_KEYS,
        )  # fmt: skip
        form.body_html = _rendered(
            key, "cards/_verdict_form.html#body",
            {"form": form, "card": card, "action_label": label, "support_keys": SUPPORT_KEYS},
        )  # fmt: skip
    return card


def _shown(passage) -> tuple:
    """What the page shows of a passage, beside its text (which its hash stands for)."""
    return (
        passage.ref, passage.sha256, passage.version_status, passage.superseded_by,
        passage.title, passage.url,
    )  # fmt: skip


def passages_section(context: dict) -> dict:
    """The page's retrieved passages (20 of 2 KB in a large case), from the cache.

    Keyed by what the section shows: each passage by its hash, its rank and score, and
    the refs that badge it.
    """
    page = context["page"]
    key = _digest(
        "review-passages", context["run"].locale,
        [(r.rank, r.score, *_shown(r.passage)) for r in page.retrieved],
        [_shown(p) for p in page.cited_only], sorted(page.cited_refs),
        sorted(page.relevant_refs), sorted(page.expected_refs),
    )  # fmt: skip
    context["passages_html"] = _rendered(key, "cards/review.html#passages", context)
    return context


def answer_section(context: dict) -> dict:
    """The page's answer, its pieces coloured by the claims over them, from the cache.

    Keyed by every piece as shown (its text, where it starts, its marker's passage, the
    claims over it and their support) and the citations placed nowhere: a claim added,
    rewritten or judged changes a piece, so a new key. Its 60-odd pieces were most of
    what the page rendered around the cached cards.
    """
    page = context["page"]
    key = _digest(
        "review-answer", context["run"].locale, len(page.response.text),
        [(p.start, p.text, p.citation and p.citation.passage.ref, p.claims, p.support)
         for p in page.pieces],
        [(c.marker, c.passage.ref) for c in page.unplaced_citations],
    )  # fmt: skip
    context["answer_html"] = _rendered(key, "cards/review.html#answer", context)
    return context


def add_claim_body(context: dict) -> dict:
    """The add-claim form but its CSRF token, from the cache when it shows nothing typed.

    Keyed by the case it adds to (its links) and the hash of the expectation whose facts
    and gaps it offers. Its fields, checkboxes and links were the largest part of what the
    page rendered around the cached fragments.
    """
    form = context["add_form"]
    if form.is_bound:
        return context  # a refused add: shown with what was typed and its errors
    key = _digest(
        "add-claim", context["project"].slug, context["run"].run_id,
        context["response"].case.case_id, context["expectation"].sha256,
    )  # fmt: skip
    context["add_claim_body"] = _rendered(key, "cards/review.html#add-claim-body", context)
    return context


def _rendered(key: str, template: str, context: dict) -> str:
    """The fragment cached under `key`, or `template` rendered with `context` and kept."""
    html = fragments.get(key)
    if html is None:
        html = render_to_string(template, context)
        fragments.set(key, html)
    return mark_safe(html)  # our template's own output, escaped there
