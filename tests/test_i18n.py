"""The interface in English and Italian (docs/i18n.md).

Three checks keep the Italian whole, and name what is missing:

- the catalog holds every string the code and the templates mark (`make messages` was run),
- every Italian msgstr is written and none is fuzzy,
- every main page, rendered in Italian with the demo data, shows none of the catalog's
  English strings of two words or more (not in its text, not in its attributes), no text of
  its own that is a one-word English entry of the catalog, and no snake_case or source code
  (`qualifier_dropped`, `default`, `annotator:NAME`) outside the places that show codes on
  purpose (`mono`, `code`, `kbd`, attributes).

English stays the default: a request that asks for nothing gets the English pages the
rest of the suite reads.
"""

from __future__ import annotations

import ast
import html
import re
import shutil
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import resolve, reverse
from django.utils.functional import Promise
from django.utils.translation import override

from cards.dashboard import FIGURE_TITLES
from cards.models import Claim, Diagnosis
from cards.views.card_cache import fragments
from compare.labels import FACT_STATUS_TITLES, REASON_TITLES
from compare.reports import comparison_json
from evidence.models import Role
from evidence.services import project_create
from jobs.models import Job
from replay.models import Run
from tests.cards.conftest import judge
from tests.conftest import _member, bundle_bytes
from tests.factories import synthetic_bundle

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "locale" / "it" / "LC_MESSAGES" / "django.po"
# What `make messages` leaves out (the Makefile's list).
NOT_SCANNED = [".venv", "var", "tests", "bench", "mutants", "build"]
PLACEHOLDER = re.compile(r"%\(\w+\)[sdr]|%%|<[^>]*>")


@dataclass
class Entry:
    msgid: str
    plural: str = ""
    context: str = ""
    msgstrs: list[str] = field(default_factory=list)
    fuzzy: bool = False


def read_catalog(path: Path) -> list[Entry]:
    """The entries of a .po file (the header left out): enough of the format for ours."""
    entries: list[Entry] = []
    current, target = Entry(""), None
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if not line.strip():
            if current.msgid:
                entries.append(current)
            current, target = Entry(""), None
        elif line.startswith("#,"):
            current.fuzzy = "fuzzy" in line
        elif line.startswith("#"):
            continue
        elif line.startswith("msgctxt "):
            current.context, target = ast.literal_eval(line[8:]), "context"
        elif line.startswith("msgid_plural "):
            current.plural, target = ast.literal_eval(line[13:]), "plural"
        elif line.startswith("msgid "):
            current.msgid, target = ast.literal_eval(line[6:]), "msgid"
        elif line.startswith("msgstr"):
            current.msgstrs.append(ast.literal_eval(line.split(" ", 1)[1]))
            target = "msgstr"
        elif target == "msgstr":
            current.msgstrs[-1] += ast.literal_eval(line)
        else:
            setattr(current, target, getattr(current, target) + ast.literal_eval(line))
    return entries


def key(entry: Entry) -> str:
    return f"{entry.context}\x04{entry.msgid}" if entry.context else entry.msgid


def english_phrases(entries: list[Entry]) -> set[str]:
    """The English of the catalog a page must not show once it is in Italian: every run of
    words between placeholders and tags, of two words or more, that no translation keeps
    (a code, a command, a name written the same in both)."""
    italian = " ".join(s for e in entries for s in e.msgstrs)
    phrases = set()
    for entry in entries:
        for text in filter(None, (entry.msgid, entry.plural)):
            for piece in PLACEHOLDER.split(text.replace("%%", "%")):
                piece = " ".join(piece.split()).strip(" ,.:;()·—")
                if len(re.findall(r"[A-Za-z]{2,}", piece)) >= 2 and piece not in italian:
                    phrases.add(piece)
    return phrases


def english_words(entries: list[Entry]) -> set[str]:
    """The catalog's one-word English entries ("Verdicts", "undefined") that no translation
    writes as a word of its own: the phrases above leave them out."""
    italian = {w.lower() for e in entries for s in e.msgstrs for w in re.findall(r"\w+", s)}
    words = {
        text.strip(" .:").lower()
        for entry in entries
        for text in filter(None, (entry.msgid, entry.plural))
        if re.fullmatch(r"[A-Za-z]{3,}", text.strip(" .:"))
    }
    return words - italian


# A code a page must show by its title: snake_case (`qualifier_dropped`, `support_assessed`),
# and the figures' sources as written in a URL (`default`, `consensus`, `annotator:NAME`).
CODE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b(?:default|consensus)\b|\bannotator:")
# Data that happens to be a catalog word or a code: the lead persona's username ("lead", a
# role in the catalog). Codes shown as codes on purpose are marked `mono`, not listed here.
SHOWN_AS_DATA = {"lead"}


class VisibleText(HTMLParser):
    """The text a reader sees, one string per text node (and the labels a screen reader
    reads): not scripts and styles, not what the page marks as a code (`mono`, `code`,
    `kbd`), not attributes such as `title` and `value` that keep codes on purpose."""

    CODE_TAGS = {"code", "kbd", "samp", "script", "style"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
            "source", "track", "wbr"}  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []  # for each open element: is it a code?
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        inside = bool(self.stack and self.stack[-1])
        code = inside or tag in self.CODE_TAGS or "mono" in (values.get("class") or "").split()
        if not code:
            read = ("aria-label", "placeholder", "alt")
            self.texts += [values[name] for name in read if values.get(name)]
        if tag not in self.VOID:
            self.stack.append(code)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if data.strip() and not (self.stack and self.stack[-1]):
            self.texts.append(" ".join(data.split()))


def visible_texts(response) -> list[str]:
    parser = VisibleText()
    parser.feed(response.content.decode())
    return parser.texts


def shown(response) -> str:
    """A page as its reader gets it: entities decoded, white space as one space."""
    return " ".join(html.unescape(response.content.decode()).split())


# --- the catalog -------------------------------------------------------------------------------


def test_every_italian_msgstr_is_written_and_none_is_fuzzy():
    missing = [
        e.msgid for e in read_catalog(CATALOG) if e.fuzzy or not all(s.strip() for s in e.msgstrs)
    ]
    assert not missing, f"translate these in {CATALOG.relative_to(ROOT)}: {missing}"


def test_the_catalog_holds_every_string_the_code_marks(tmp_path, monkeypatch):
    """`make messages` gathered every marked string: a string added since is listed here.

    Gathered again in a copy of the tree, so that the catalog in git is never touched."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".*", "*.mo", *NOT_SCANNED))
    monkeypatch.chdir(tree)
    monkeypatch.setattr(settings, "LOCALE_PATHS", [tree / "locale"])
    call_command(
        "makemessages", locale=["it"], no_location=True, no_obsolete=True,
        ignore_patterns=NOT_SCANNED, verbosity=0,
    )  # fmt: skip
    committed = {key(e) for e in read_catalog(CATALOG)}
    marked = {key(e) for e in read_catalog(tree / CATALOG.relative_to(ROOT))}
    assert sorted(marked - committed) == [], "run `make messages`, then translate them"
    assert sorted(committed - marked) == [], "no longer marked anywhere: run `make messages`"


def test_the_compiled_catalog_is_built_from_the_current_one():
    compiled = CATALOG.with_suffix(".mo")
    assert compiled.exists(), "run `make install` (it compiles the translations)"
    assert compiled.stat().st_mtime >= CATALOG.stat().st_mtime, "run `make install` again"


# --- every main page in Italian ------------------------------------------------------------------


@pytest.fixture
def italian(db):
    """A browser of its own that chose Italian (the `client` fixture stays English)."""
    browser = Client()
    browser.cookies[settings.LANGUAGE_COOKIE_NAME] = "it"
    return browser


@pytest.fixture
def judged(demo_runs, reviewer, second_reviewer) -> Claim:
    """A claim of q017-r1 that alice and bob judged apart (a disagreement, notes, history)."""
    claim = Claim.objects.filter(response__run__run_id="q017-r1").order_by("pk").first()
    judge(claim, reviewer, "supported", note="Ask the policy team.")
    judge(claim, second_reviewer, "unsupported", contradicts=True, diagnosis="qualifier_dropped")
    return claim


def reviewer_pages(claim: Claim) -> list[str]:
    case = reverse("case_detail", args=["demo", "q017-r1", "Q-017"])
    return [
        reverse("home"),
        reverse("project_detail", args=["demo"]),
        reverse("run_detail", args=["demo", "q017-r1"]),
        case,
        f"{case}?card={claim.key}",
        f"{case}?revise={claim.key}",
        reverse("claim_suggestions", args=["demo", "q017-r3", "Q-017"]),
        reverse("case_detail", args=["demo", "resi-r1", "resi-1"]),
        reverse("my_work", args=["demo"]),
        reverse("run_figures", args=["demo", "q017-r1"]),
        reverse("run_compare", args=["demo"]) + "?a=q017-r1&b=q017-r2",
        reverse("run_compare", args=["demo"]) + "?a=q017-r1&b=q017-r3",
        reverse("project_drift", args=["demo"]),
        reverse("project_members", args=["demo"]),
        reverse("project_settings", args=["demo"]),  # 403: alice is no lead
        "/p/nowhere/",  # 404
        reverse("account"),  # the API tokens
    ]


LEAD_PAGES = [
    ("project_settings", ["demo"]),
    ("bundle_upload", ["demo"]),
    ("audit_export", ["demo"]),
    ("run_assign", ["demo", "q017-r1"]),
    ("run_disagreements", ["demo", "q017-r1"]),
]


def assert_in_italian(response, phrases: set[str], words: set[str] | None = None) -> None:
    """No English phrase of the catalog anywhere in the page; no text node that is a
    one-word English entry; no code where a reader expects a title."""
    page = shown(response)
    where = response.request["PATH_INFO"] + (
        f"?{response.request['QUERY_STRING']}" if response.request.get("QUERY_STRING") else ""
    )
    left = sorted(p for p in phrases if p in page)
    assert left == [], f"{where} shows English: {left}"
    assert '<html lang="it">' in page
    texts = visible_texts(response)
    if words is None:
        words = english_words(read_catalog(CATALOG))
    single = sorted({t for t in texts if t.strip(" .:;,()·—").lower() in words} - SHOWN_AS_DATA)
    assert single == [], f"{where} shows English words: {single}"
    codes = sorted({m for t in texts for m in CODE.findall(t)} - SHOWN_AS_DATA)
    assert codes == [], f"{where} shows codes instead of titles: {codes}"


def test_every_page_of_a_reviewer_is_in_italian(italian, reviewer, judged):
    phrases = english_phrases(read_catalog(CATALOG))
    italian.force_login(reviewer)
    for url in reviewer_pages(judged):
        assert_in_italian(italian.get(url), phrases)


def test_every_page_of_a_lead_is_in_italian(italian, lead, judged):
    phrases = english_phrases(read_catalog(CATALOG))
    italian.force_login(lead)
    for name, args in LEAD_PAGES:
        assert_in_italian(italian.get(reverse(name, args=args)), phrases)


def test_the_agreement_page_the_other_sources_and_the_rarer_pages_are_in_italian(
    italian, reviewer, second_reviewer, judged
):
    """The judges against people (a disagreement), figures by one annotator and by
    consensus, a card's whole history, an empty queue, a refused CSRF token."""
    # seed-protocol, imported, judged C-017-2 partial: bob disagrees.
    judge(Claim.objects.get(response=judged.response, key="C-017-2"), second_reviewer, "supported")
    words = english_words(read_catalog(CATALOG))
    phrases = english_phrases(read_catalog(CATALOG))
    italian.force_login(reviewer)
    figures = reverse("run_figures", args=["demo", "q017-r1"])
    case = reverse("case_detail", args=["demo", "q017-r1", "Q-017"])
    pages = {
        reverse("run_agreement", args=["demo", "q017-r1"]): "Giudici automatici",
        f"{figures}?source=annotator:seed-protocol": "seed-protocol",
        f"{figures}?source=annotator:alice": "alice",
        f"{figures}?source=consensus": "Giudizi",
        f"{case}?card=C-017-2&history=all": "C-017-2",
    }
    for url, expected in pages.items():
        response = italian.get(url)
        assert response.status_code == 200, url
        assert_in_italian(response, phrases, words)
        assert expected in shown(response), url
    empty = project_create(slug="vuoto", name="Vuoto")
    alone = Client()
    alone.cookies[settings.LANGUAGE_COOKIE_NAME] = "it"
    alone.force_login(_member(empty, "carla", Role.REVIEWER))
    queue = alone.get(reverse("queue_next", args=["vuoto"]))
    assert_in_italian(queue, phrases, words)
    assert "La tua coda è vuota" in shown(queue)
    strict = Client(enforce_csrf_checks=True)
    strict.cookies[settings.LANGUAGE_COOKIE_NAME] = "it"
    strict.force_login(reviewer)
    refused = strict.post(reverse("claim_add", args=["demo", "q017-r1", "Q-017"]), {})
    assert refused.status_code == 403
    assert_in_italian(refused, phrases, words)


def lead_job(browser: Client, url: str, data: dict) -> Job:
    """The job a lead's POST queues (and, in the tests, runs at once), from its page's URL."""
    response = browser.post(url, data)
    assert response.status_code == 302, response
    return Job.objects.get(code=resolve(response["Location"]).kwargs["code"])


def test_every_job_page_of_a_lead_is_in_italian(italian, lead, judged):
    """The jobs page, an import done, an import refused, an export done, one waiting for a
    worker, and the upload page with its recent imports."""
    phrases = english_phrases(read_catalog(CATALOG))
    italian.force_login(lead)
    upload = reverse("bundle_upload", args=["demo"])
    bundle = bundle_bytes(*synthetic_bundle(run_id="nuova-r1", cases=1))
    imported = lead_job(italian, upload, {"bundle": SimpleUploadedFile("nuova.jsonl", bundle)})
    broken = SimpleUploadedFile("rotta.jsonl", bundle + b"not json\n")
    refused = lead_job(italian, upload, {"bundle": broken})
    exported = lead_job(italian, reverse("export_start", args=["demo"]), {"run": "q017-r1"})
    queued = Job.objects.create(kind=Job.Kind.IMPORT, project=imported.project, requested_by=lead)
    expected = {
        imported: "Esecuzione nuova-r1 importata",
        refused: "Importazione rifiutata: non è stato salvato nulla",
        exported: "Pacchetto pronto",
        queued: "In attesa di un worker.",
    }
    for job, italian_text in expected.items():
        page = italian.get(reverse("job_detail", args=["demo", job.code]))
        assert_in_italian(page, phrases)
        assert italian_text in re.sub(r"<[^>]+>", "", shown(page))
    listed = italian.get(reverse("job_list", args=["demo"]))
    assert_in_italian(listed, phrases)
    assert "Non riuscita" in shown(listed) and "Completata" in shown(listed)
    with_imports = italian.get(upload)
    assert_in_italian(with_imports, phrases)
    assert "Importazioni recenti" in shown(with_imports)


def test_the_login_page_and_a_refused_login_are_in_italian(italian, reviewer):
    phrases = english_phrases(read_catalog(CATALOG))
    assert_in_italian(italian.get(reverse("login")), phrases)
    refused = italian.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert_in_italian(refused, phrases)
    assert "Nome utente e password non corrispondono." in shown(refused)


def test_the_italian_returns_card_reads_as_italian_with_its_data_marked_italian(
    italian, reviewer, demo_runs
):
    italian.force_login(reviewer)
    page = shown(italian.get(reverse("case_detail", args=["demo", "resi-r1", "resi-1"])))
    assert "Aggiungi affermazione" in page
    assert '<p class="query" lang="it-IT">Posso restituire un articolo che ho già aperto?' in page
    assert 'class="answer" id="answer"' in page and 'lang="it-IT" hx-disable>' in page


def test_the_diagnoses_legend_names_each_diagnosis_as_the_verdict_form_does(
    italian, reviewer, demo_runs
):
    """Its codes sit in `mono`, which the code check allows: the title beside each is what
    makes the legend readable, and matches the verdict form's choice."""
    italian.force_login(reviewer)
    page = shown(italian.get(reverse("case_detail", args=["demo", "resi-r1", "resi-1"])))
    legend = page[page.index('id="diagnoses"') :]
    for code, title in Diagnosis.choices:
        with override("it"):
            title = str(title)
        assert f'<dt>{title} <span class="mono small">{code}</span></dt>' in legend, code


def test_counts_agree_with_their_number_in_italian(italian, reviewer, demo_runs):
    """resi-r1 has one response, reviewed: "1 risposta: 1 revisionata", never "1 risposte"."""
    italian.force_login(reviewer)
    page = re.sub(
        r"<[^>]+>", "", shown(italian.get(reverse("run_figures", args=["demo", "resi-r1"])))
    )
    assert "1 risposta: 1 revisionata (0 astensioni), 0 non revisionate ed escluse" in page
    assert "3 affermazioni fattuali" in page
    assert "Giudizi (fonte predefinita)" in page


# --- switching, and what stays English or a code -----------------------------------------------


def test_a_request_that_asks_for_nothing_is_answered_in_english(client, reviewer, demo_runs):
    client.force_login(reviewer)
    page = shown(client.get(reverse("project_detail", args=["demo"])))
    assert '<html lang="en">' in page and "Next in my queue" in page


def test_the_header_switches_the_language_by_a_plain_form_post(client, reviewer, demo_runs):
    client.force_login(reviewer)
    project = reverse("project_detail", args=["demo"])
    header = shown(client.get(project))
    assert 'action="/language/"' in header and 'lang="it">Italiano</button>' in header
    switched = client.post(reverse("set_language"), {"language": "it", "next": project})
    assert switched.status_code == 302 and switched["Location"] == project
    in_italian = shown(client.get(project))
    assert "Prossimo nella mia coda" in in_italian
    assert 'lang="en">English</button>' in in_italian  # each language named in itself
    client.post(reverse("set_language"), {"language": "en", "next": project})
    assert "Next in my queue" in shown(client.get(project))


def test_the_switch_works_before_logging_in(client):
    login = reverse("login")
    client.post(reverse("set_language"), {"language": "it", "next": login})
    assert "Accedi" in shown(client.get(login))


def test_labels_stay_codes_in_the_figures_json_and_csv(italian, client, reviewer, judged):
    italian.force_login(reviewer)
    url = reverse("run_figures_json", args=["demo", "q017-r1"])
    in_italian = italian.get(url).content
    client.force_login(reviewer)
    assert in_italian == client.get(url).content
    assert b'"supported"' in in_italian and b"Supportata" not in in_italian
    csv = italian.get(reverse("run_figures_csv", args=["demo", "q017-r1"])).content.decode()
    assert "verdicts_supported" in csv and "Supportata" not in csv


def test_labels_are_shown_translated_and_stored_as_codes(italian, reviewer, judged):
    italian.force_login(reviewer)
    card = shown(
        italian.get(
            reverse("card_detail", args=["demo", "q017-r1", "Q-017", judged.key]),
            HTTP_HX_REQUEST="true",
        )
    )
    assert "Supportata" in card and "Non supportata" in card
    assert 'value="supported"' in card
    assert set(judged.verdicts.values_list("support", flat=True)) == {"supported", "unsupported"}


def comparison_titles(response) -> list[tuple[str, Promise]]:
    """The codes a comparison page shows, with their titles: its figures, the status of
    each fact in each run, and the reasons its pairs are not comparable."""
    titles = [(name, FIGURE_TITLES[name]) for name, *_ in response.context["figure_rows"]]
    for row in response.context["rows"]:
        pair = row["pair"]
        statuses = {status for fact in pair.facts.values() for status in (fact.a, fact.b)}
        titles += [(status, FACT_STATUS_TITLES[status]) for status in sorted(statuses)]
        codes = [reason.partition(":")[0] for reason in pair.reasons]
        titles += [(code, REASON_TITLES[code]) for code in codes]
    return titles


def test_a_comparison_shows_its_figures_statuses_and_reasons_as_italian_titles(
    italian, reviewer, judged
):
    """Single words such as "Absent" escape the phrases of the page tests: each code the
    two comparisons of `reviewer_pages` show must be shown by its Italian title."""
    italian.force_login(reviewer)
    seen = set()
    for url in reviewer_pages(judged):
        if not url.startswith(reverse("run_compare", args=["demo"])):
            continue
        response = italian.get(url)
        text = shown(response)
        for code, title in comparison_titles(response):
            with override("en"):
                english = str(title)
            with override("it"):
                assert str(title) != english and str(title) in text, (url, code)
            assert not re.search(rf"\b{re.escape(english)}\b", text), (url, code, english)
            seen.add(code)
    # The demo runs show each kind: every figure, judged, unjudged and absent facts, drift.
    kinds = {"unsupported", "unreviewed", "absent", "passage_drift"}
    assert set(FIGURE_TITLES) | kinds <= seen, seen


def test_a_comparison_stays_codes_in_its_json(judged):
    runs = {run.run_id: run for run in Run.objects.filter(run_id__in=["q017-r1", "q017-r3"])}
    answers = []
    for language in ("en", "it"):
        with override(language):
            answers.append(comparison_json(run_a=runs["q017-r1"], run_b=runs["q017-r3"]))
    assert answers[0] == answers[1]
    [pair] = answers[1]["pairs"]
    assert (
        pair["reasons"][0].startswith("passage_drift: ")
        and "support" in answers[1]["metrics"]["a"]
    )


def test_dates_and_numbers_follow_the_language(italian, client, reviewer, demo_runs):
    italian.force_login(reviewer)
    client.force_login(reviewer)
    run = reverse("run_detail", args=["demo", "q017-r1"])
    assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", shown(client.get(run)))
    # Lowercase, as Italian writes a month (Django's own catalog says "Settembre").
    assert re.search(r"\d{1,2} settembre 2026 \d{2}:\d{2} UTC", shown(italian.get(run)))
    figures = reverse("run_figures", args=["demo", "q017-r1"])
    assert "p = 0.5" in shown(client.get(figures)) and "p = 0,5" in shown(italian.get(figures))
    case = reverse("case_detail", args=["demo", "q017-r1", "Q-017"])
    scores = re.findall(r"punteggio (\d+[.,]\d+)", shown(italian.get(case)))
    assert scores and all("," in s for s in scores)


# --- the fragment cache keeps languages apart ----------------------------------------------------


def test_an_italian_case_page_never_gets_an_english_fragment_nor_the_reverse(
    client, reviewer, judged
):
    case = reverse("case_detail", args=["demo", "q017-r1", "Q-017"])
    english_texts = ("Open card", "Keyboard", "Retrieved passages", "score ")
    italian_texts = ("Apri la scheda", "Tastiera", "Passaggi recuperati", "punteggio ")
    for first, second in (("en", "it"), ("it", "en")):
        fragments.clear()
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = first
        client.force_login(reviewer)
        client.get(case)  # every fragment now cached in the first language
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = second
        page = shown(client.get(case))
        wanted, unwanted = (
            (italian_texts, english_texts) if second == "it" else (english_texts, italian_texts)
        )
        assert all(text in page for text in wanted)
        assert not [text for text in unwanted if text in page]


def test_the_case_page_takes_as_many_queries_in_italian_as_in_english(client, reviewer, judged):
    case = reverse("case_detail", args=["demo", "q017-r1", "Q-017"])
    client.force_login(reviewer)
    counts = {}
    for language in ("en", "it"):
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
        client.get(case)  # the fragments of this language cached
        with CaptureQueriesContext(connection) as queries:
            client.get(case)
        counts[language] = len(queries)
    assert counts["it"] == counts["en"]
