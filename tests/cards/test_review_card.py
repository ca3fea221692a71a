"""One card of the case page: compact on the page, whole on demand, from its own rows."""

from __future__ import annotations

import re

import pytest

from cards.models import VerdictRevision
from cards.selectors import VerdictRecord, card_passages, frozen_rows
from cards.services.claims import claim_revise
from cards.views.card_cache import fragments
from tests.cards.conftest import case_url, judge, page_for, verdict_url

HTMX = {"HTTP_HX_REQUEST": "true"}


def whole_card(client, key: str) -> str:
    response = client.get(case_url("q017-r3", "Q-017", "card_detail", key), **HTMX)
    assert response.status_code == 200
    return response.content.decode()


def header(content: str) -> str:
    return content[content.index('<header class="card-head">') : content.index("</header>")]


def test_the_header_shows_my_verdict_and_each_others_newest(
    client, claim, reviewer, second_reviewer
):
    judge(claim, reviewer, "supported", "Alice.")
    judge(claim, second_reviewer, "partial", "Bob first.")
    judge(claim, second_reviewer, "unsupported", "Bob again.")
    client.force_login(reviewer)
    page = client.get(case_url("q017-r3", "Q-017")).content.decode()
    for content in (
        header(page[page.index(f'id="card-{claim.key}"') :]),
        header(whole_card(client, claim.key)),
    ):
        assert 'You: <strong class="support-supported">Supported</strong>' in content
        assert 'bob: <strong class="support-unsupported">Unsupported</strong>' in content
        assert "Partial" not in content  # bob's older verdict is not his current one


def test_while_blind_the_header_shows_mine_and_nothing_of_the_others(
    client, blind, claim, reviewer, second_reviewer
):
    judge(claim, second_reviewer, "unsupported", "Bob.")
    judge(claim, reviewer, "supported", "Alice.")
    card = page_for(reviewer, "q017-r3", "Q-017").card(claim.key)
    assert (card.others, card.disagree) == ([], False)
    client.force_login(reviewer)
    for content in (
        client.get(case_url("q017-r3", "Q-017")).content.decode(),
        whole_card(client, claim.key),
    ):
        assert "bob" not in content and '<strong class="support-unsupported">' not in content
        assert "disagreement" not in content


def test_superseded_revisions_are_marked_in_the_history(client, claim, reviewer, second_reviewer):
    judge(claim, reviewer, "partial", "Alice first.")
    judge(claim, second_reviewer, "partial", "Bob.")
    judge(claim, reviewer, "supported", "Alice again.")
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, text="Rewritten.", reason="R.")
    card = page_for(reviewer, "q017-r3", "Q-017").card(claim.key)
    marked = {
        (entry.kind, entry.row.reason or entry.row.text): entry.superseded
        for entry in card.history
    }
    assert marked == {
        ("claim", "R."): False,
        ("verdict", "Alice again."): False,
        ("verdict", "Bob."): False,  # another annotator's line: not replaced by alice's
        ("verdict", "Alice first."): True,
        ("claim", "Final-sale items are excluded from returns."): True,
    }
    client.force_login(reviewer)
    history = whole_card(client, claim.key)
    history = history[history.index('class="history-list"') :]
    superseded = [item for item in history.split("<li")[1:] if 'class="superseded"' in item]
    assert len(superseded) == 2
    assert "Alice first." in superseded[0] and "split the claim" in superseded[1]
    assert all('<span class="badge">superseded</span>' in item for item in superseded)


@pytest.mark.parametrize(
    ("bobs", "shown"), [("supported", False), ("unsupported", True)], ids=["agree", "disagree"]
)
def test_a_lead_sees_the_adjudicate_form_only_where_reviewers_disagree(
    client, claim, reviewer, second_reviewer, lead, bobs, shown
):
    judge(claim, reviewer, "supported", "Alice.")
    judge(claim, second_reviewer, bobs, "Bob.")
    client.force_login(lead)
    content = whole_card(client, claim.key)
    assert ("Adjudicate (lead)" in content) is shown
    assert ("disagreement" in content) is shown
    page = client.get(case_url("q017-r3", "Q-017"), {"card": claim.key}).content.decode()
    assert ("Adjudicate (lead)" in page) is shown


def test_a_reviewer_never_sees_the_adjudicate_form(client, claim, reviewer, second_reviewer):
    judge(claim, reviewer, "supported", "Alice.")
    judge(claim, second_reviewer, "unsupported", "Bob.")
    client.force_login(reviewer)
    content = whole_card(client, claim.key)
    assert "disagreement" in content and "Adjudicate (lead)" not in content


def test_a_cached_compact_card_shows_a_new_verdict_at_once(
    client, claim, reviewer, second_reviewer
):
    client.force_login(reviewer)
    url = case_url("q017-r3", "Q-017")
    assert "bob:" not in client.get(url).content.decode()  # the card is cached now
    judge(claim, second_reviewer, "partial", "Bob.")
    # A new revision is a new key: the card is rendered again, never served stale.
    assert (
        'bob: <strong class="support-partial">Partial</strong>' in client.get(url).content.decode()
    )


def test_the_cached_page_is_the_page_rendered_afresh(
    client, claim, reviewer, django_assert_max_num_queries
):
    client.force_login(reviewer)
    url = case_url("q017-r3", "Q-017")
    fragments.clear()
    frozen_rows.clear()
    with django_assert_max_num_queries(20) as first:
        fresh = client.get(url).content.decode()
    with django_assert_max_num_queries(20) as second:
        cached = client.get(url).content.decode()
    masked = [re.sub(r"\b[A-Za-z0-9]{64}\b", "TOKEN", html) for html in (fresh, cached)]
    assert masked[0] == masked[1]  # but for the CSRF tokens
    # The response's retrieval and citations are frozen: read once per process.
    assert len(second.captured_queries) == len(first.captured_queries) - 2
    assert not any("replay_retrieval t" in q["sql"] for q in second.captured_queries)


def test_a_whole_card_from_cached_fragments_is_the_card_rendered_afresh(
    client, claim, reviewer, second_reviewer, lead
):
    judge(claim, reviewer, "supported", "Alice.")
    judge(claim, second_reviewer, "unsupported", "Bob.")
    client.force_login(lead)  # a lead's card has two forms: the verdict and the adjudication
    fragments.clear()
    fresh = whole_card(client, claim.key)
    cached = whole_card(client, claim.key)
    masked = [re.sub(r"\b[A-Za-z0-9]{64}\b", "TOKEN", html) for html in (fresh, cached)]
    assert masked[0] == masked[1]  # but for the CSRF tokens
    assert "Adjudicate (lead)" in cached and cached.count('class="verdict-form"') == 2


def test_a_whole_card_reads_its_claims_frozen_passages_once_per_process(
    client, claim, reviewer, django_assert_max_num_queries
):
    client.force_login(reviewer)
    fragments.clear()
    card_passages.clear()
    with django_assert_max_num_queries(20) as first:
        fresh = whole_card(client, claim.key)
    with django_assert_max_num_queries(20) as second:
        again = whole_card(client, claim.key)
    assert len(second.captured_queries) == len(first.captured_queries) - 1
    assert not any("evidence_passage p" in q["sql"] for q in second.captured_queries)
    masked = [re.sub(r"\b[A-Za-z0-9]{64}\b", "TOKEN", html) for html in (fresh, again)]
    assert masked[0] == masked[1]
    # A rewrite citing other passages is another key: read again, never the old ones.
    claim_revise(claim=claim, author=reviewer, reason="Relinked.", citations=[], seen_claim_seq=1)
    assert "no citation attached" in whole_card(client, claim.key)


def test_a_project_of_one_snapshot_is_never_asked_for_drift(client, claim, reviewer, monkeypatch):
    # No other snapshot, no other text: the run's own query says so (replay.selectors).
    import cards.selectors

    def asked(**kwargs):
        raise AssertionError(f"drift asked: {kwargs}")

    monkeypatch.setattr(cards.selectors, "newer_drift", asked)
    client.force_login(reviewer)
    assert client.get(case_url("q017-r3", "Q-017")).status_code == 200
    whole_card(client, claim.key)


def test_a_pages_pre_checks_are_computed_once_until_a_claim_changes(
    client, claim, reviewer, monkeypatch
):
    import cards.selectors

    client.force_login(reviewer)
    url = case_url("q017-r3", "Q-017")
    before = {c.claim.key: c.hints for c in client.get(url).context["page"].cards}
    computed = []
    real = cards.selectors.prechecks
    monkeypatch.setattr(cards.selectors, "prechecks", lambda f: computed.append(f) or real(f))
    again = {c.claim.key: c.hints for c in client.get(url).context["page"].cards}
    assert (again, computed) == (before, [])  # from the process's cache
    claim_revise(
        claim=claim, author=reviewer, seen_claim_seq=1, reason="R.",
        text="Refunds take 999 days.",
    )  # fmt: skip
    after = {c.claim.key: c.hints for c in client.get(url).context["page"].cards}
    assert len(computed) == 1
    assert "number_not_in_evidence" in after[claim.key]
    assert "number_not_in_evidence" not in before[claim.key]


def test_a_cached_verdict_form_shows_the_verdict_saved_since(client, claim, reviewer):
    client.force_login(reviewer)
    assert "checked" not in whole_card(client, claim.key).split('name="support"')[1][:40]
    judge(claim, reviewer, "partial", "Alice.")
    card = whole_card(client, claim.key)
    assert '<input type="radio" name="support" value="partial" checked' in card


def test_a_verdict_record_has_the_fields_of_a_verdict_revision_in_their_order():
    names = [f.attname for f in VerdictRevision._meta.concrete_fields]
    fields = [name.removesuffix("_json") for name in VerdictRecord._fields]
    assert fields == ["pk", *names[1:]] and names[0] == "id"


# --- a claim judged again and again --------------------------------------------------------


def test_a_whole_card_shows_the_newest_history_and_each_annotators_newest_verdict(
    client, claim, reviewer, second_reviewer
):
    from cards.selectors import HISTORY_SHOWN

    for n in range(HISTORY_SHOWN + 4):
        judge(claim, reviewer, "partial", f"Reading {n}.")
    judge(claim, second_reviewer, "unsupported", "Bob.")
    total = HISTORY_SHOWN + 4 + 1 + 1  # the verdicts and the claim's own revision
    client.force_login(reviewer)
    card = whole_card(client, claim.key)
    history = card.split('class="history-list"')[1].split("</ol>")[0]
    assert history.count("<li") == HISTORY_SHOWN
    assert f'start="{total}"' in card  # the entries keep their place in the whole chain
    assert f"{total - HISTORY_SHOWN} older entries not shown." in card
    assert "Show the whole history" in card and "Reading 0." not in history
    # The list of verdicts: each annotator's newest; the superseded ones are in the history.
    verdicts = card.split('class="verdicts"')[1].split("</ul>")[0]
    assert verdicts.count("<li") == 2
    assert "Reading 23." in verdicts and "Bob." in verdicts and "Reading 22." not in verdicts
    # The whole history on demand: in place, and as the page without JavaScript.
    url = case_url("q017-r3", "Q-017", "card_detail", claim.key) + "?history=all"
    whole = client.get(url, **HTMX).content.decode()
    assert whole.split('class="history-list"')[1].split("</ol>")[0].count("<li") == total
    assert "older entries not shown" not in whole
    plain = client.get(url)
    assert plain.status_code == 302 and "history=all" in plain.url
    page = client.get(plain.url).content.decode()
    assert "Reading 0." in page and "older entries not shown" not in page


def test_a_save_answers_with_a_card_that_does_not_grow_with_its_chain(client, claim, reviewer):
    from cards.selectors import HISTORY_SHOWN

    client.force_login(reviewer)
    sizes = []
    for n in range(HISTORY_SHOWN + 10):
        mine = claim.verdicts.filter(author=reviewer).order_by("-seq").first()
        answer = client.post(
            verdict_url("q017-r3", "Q-017", claim.key),
            {"support": "partial", "reason": f"Reading {n:02}.", "seen_claim_seq": 1,
             "seen_own_seq": mine.seq if mine else ""},
            **HTMX,
        )  # fmt: skip
        assert answer.status_code == 200
        sizes.append(len(answer.content))
    assert max(sizes[HISTORY_SHOWN:]) - min(sizes[HISTORY_SHOWN:]) < 200


def test_a_pages_kept_pre_checks_see_a_passage_drift_that_came_after_them(client, reviewer):
    # The drift is in the key of the kept pre-checks (cards.selectors.page_hints): a newer
    # snapshot changes what they say without any change to the claims.
    from tests.conftest import import_fixture

    import_fixture("q017-r1.jsonl")
    client.force_login(reviewer)
    url = case_url("q017-r1", "Q-017")
    assert "passage_drift" not in client.get(url).context["page"].response_hints
    import_fixture("q017-r3.jsonl")  # a newer snapshot: D-01 has another text there
    hints = client.get(url).context["page"].response_hints
    assert hints["passage_drift"] == ["D-01@returns-v4#p04"]


def test_a_save_asked_compact_answers_with_the_compact_card_and_a_refusal_whole(
    client, claim, reviewer, second_reviewer, django_assert_max_num_queries
):
    """The page's script asks for the card back compact when nothing else is typed or open
    in it: the saved card comes back as the page shows a card the reviewer is not in (its
    labels, its reason's first line, the confirmation), without forms or history; a refused
    save comes back whole, with what was typed, whatever was asked."""
    judge(claim, second_reviewer, "partial", "Bob.")
    client.force_login(reviewer)
    url = verdict_url("q017-r3", "Q-017", claim.key)
    data = {"support": "unsupported", "reason": "Not in D-01.\nSecond line.", "seen_claim_seq": 1,
            "seen_own_seq": "", "card": "compact"}  # fmt: skip
    with django_assert_max_num_queries(10):  # what a whole card's answer reads: no more
        answer = client.post(url, data, **HTMX)
    content = answer.content.decode()
    assert answer.status_code == 200
    assert content.lstrip().startswith("<article") and " data-compact" in content
    assert "<form" not in content and "history-list" not in content
    assert 'You: <strong class="support-unsupported">Unsupported</strong>' in header(content)
    assert "Saved, revision 3." in content
    assert '<p class="reason-line small" hx-disable>Not in D-01.</p>' in content
    assert "verdict-saved" in answer.headers["HX-Trigger-After-Settle"]
    assert answer.headers["X-Card"] == "compact"  # the page's script then moves the focus on
    # The same save without asking: the card whole, its forms and history.
    data |= {"seen_own_seq": 3, "reason": "Still not in D-01."}
    whole = client.post(url, {k: v for k, v in data.items() if k != "card"}, **HTMX)
    assert whole.status_code == 200 and "data-compact" not in whole.content.decode()
    assert "X-Card" not in whole.headers
    assert "data-verdict-form" in whole.content.decode()
    # Refused (a blank reason), asked compact: whole, with the label typed kept.
    refused = client.post(url, data | {"seen_own_seq": 4, "reason": "  "}, **HTMX)
    content = refused.content.decode()
    assert refused.status_code == 400 and "data-compact" not in content
    assert 'value="unsupported" checked' in content
    assert "A written reason is required" in content
    # Stale (a rewrite since), asked compact: whole, with the message.
    stale = client.post(url, data | {"seen_own_seq": 4, "seen_claim_seq": 0}, **HTMX)
    assert stale.status_code == 409 and "data-compact" not in stale.content.decode()
    assert "X-Card" not in stale.headers
