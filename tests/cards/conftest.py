"""Claims to review, and helpers that load a card's form the way a browser would.

Most tests split claims out of `q017-r3` (Q-017 replayed after the policy page
changed): it arrives with an answer and two markers but no claim, so every
revision on it is made here.
"""

from __future__ import annotations

import random

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from cards.chain import claim_revision_document, seal, verdict_revision_document
from cards.models import Claim, ClaimRevision, Origin, VerdictRevision
from cards.selectors import ReviewPage, review_page
from cards.services.claims import claim_create, claim_revise
from cards.services.reviews import response_mark_complete
from cards.services.verdicts import verdict_save
from evidence.models import Membership, Project, Role
from evidence.services import membership_set
from replay.models import Response, Run
from tests.conftest import bundle_bytes, import_bytes, import_fixture

# The answer of q017-r3, and the spans of its parts.
ANSWER = (
    "Items bought directly from the store can be returned within 14 calendar days of delivery, "
    "but final-sale items are excluded [D-01]. Refund processing starts once the item reaches "
    "the warehouse [D-02]. The sources do not say how long processing takes."
)
WINDOW = [0, 88]  # "Items bought … of delivery"
FINAL_SALE = [94, 123]  # "final-sale items are excluded", marker [D-01] at 124
REFUND_START = [132, 192]  # "Refund processing … warehouse", marker [D-02] at 193
NO_DURATION = [201, 249]  # "The sources do not say how long processing takes"
D01 = "D-01@returns-v4#p04"
D02 = "D-02@refunds-v2#p07"


def response_for(run_id: str, case_id: str | None = None) -> Response:
    responses = Response.objects.filter(run__run_id=run_id)
    return responses.get(case__case_id=case_id) if case_id else responses.get()


def page_for(user: User, run_id: str, case_id: str) -> ReviewPage:
    run = Run.objects.select_related("project").get(run_id=run_id)
    membership = Membership.objects.select_related("project", "user").get(
        user=user, project=run.project
    )
    return review_page(run=run, case_id=case_id, membership=membership)


def case_url(run_id: str, case_id: str, name: str = "case_detail", *args: str) -> str:
    return reverse(name, args=["demo", run_id, case_id, *args])


def verdict_url(run_id: str, case_id: str, key: str) -> str:
    return case_url(run_id, case_id, "verdict_add", key)


def loaded_form(client, run_id: str, case_id: str, key: str, *, adjudicate=False) -> dict:
    """The hidden fields of a card's verdict form as the card, loaded whole, renders them now."""
    card = client.get(case_url(run_id, case_id, "card_detail", key), HTTP_HX_REQUEST="true")
    card = card.context["card"]
    form = card.adjudicate_form if adjudicate else card.form
    return {
        name: "" if form[name].value() is None else form[name].value()
        for name in ("seen_claim_seq", "seen_own_seq", "seen_head_seq", "adjudicate")
    }


def judge(
    claim: Claim, author: User, support: str = "supported", reason: str = "D-01 says so.", **kwargs
) -> VerdictRevision:
    """verdict_save with a form that is fresh: loaded just now by `author`."""
    origin = Origin.ADJUDICATION if kwargs.get("adjudication") else Origin.REVIEW
    mine = claim.verdicts.filter(author=author, origin=origin).order_by("-seq").first()
    kwargs.setdefault("seen_claim_seq", claim.revisions.order_by("-seq").first().seq)
    kwargs.setdefault("seen_own_seq", mine.seq if mine else None)
    return verdict_save(claim=claim, author=author, support=support, reason=reason, **kwargs)


def member(username: str, role: str = Role.REVIEWER, project: str = "demo") -> User:
    user = User.objects.create_user(username=username)
    membership_set(project=Project.objects.get(slug=project), user=user, role=role)
    return user


def chain_of(claim: Claim) -> list[tuple[ClaimRevision | VerdictRevision, dict]]:
    """Every revision of the claim's chain, by seq, with the document its hash must seal.

    The same recomputation as tests/evidence/test_bundle_round_trip.py: each
    document is rebuilt from the stored row alone.
    """
    claim = Claim.objects.select_related("response__run__project", "response__case").get(
        pk=claim.pk
    )
    identity = {
        "project": claim.response.run.project.slug,
        "run_id": claim.response.run.run_id,
        "case_id": claim.response.case.case_id,
        "claim_id": claim.key,
    }
    chain: list[tuple[ClaimRevision | VerdictRevision, dict]] = []
    for revision in claim.revisions.all():
        document = claim_revision_document(
            **identity, seq=revision.seq, text=revision.text, kind=revision.kind,
            spans=revision.spans, citations=revision.citations, facts=revision.facts,
            gaps=revision.gaps, withdrawn=revision.withdrawn, reason=revision.reason,
            annotator=revision.annotator, origin=revision.origin,
            created_at=revision.created_at, prev_sha256=revision.prev_sha256,
        )  # fmt: skip
        chain.append((revision, document))
    for verdict in claim.verdicts.select_related("supersedes"):
        document = verdict_revision_document(
            **identity, seq=verdict.seq, annotator=verdict.annotator, origin=verdict.origin,
            association=verdict.association, support=verdict.support,
            contradicts=verdict.contradicts, reason=verdict.reason, diagnosis=verdict.diagnosis,
            citation_relevance=verdict.citation_relevance, note=verdict.note,
            stated_at=verdict.stated_at,
            supersedes=verdict.supersedes.seq if verdict.supersedes else None,
            created_at=verdict.created_at, prev_sha256=verdict.prev_sha256,
        )  # fmt: skip
        chain.append((verdict, document))
    return sorted(chain, key=lambda item: item[0].seq)


def assert_chain_holds(claim: Claim) -> int:
    """Seqs 1..n across both tables, each row sealing its document and the one before."""
    chain = chain_of(claim)
    assert [row.seq for row, _ in chain] == list(range(1, len(chain) + 1))
    previous = None
    for row, document in chain:
        assert row.prev_sha256 == previous, row.seq
        assert row.sha256 == seal(document), row.seq
        previous = row.sha256
    return len(chain)


@pytest.fixture
def replay_response(project) -> Response:
    """q017-r3's response: an answer with two markers and no claim yet."""
    if not Run.objects.filter(project=project, run_id="q017-r3").exists():  # demo_runs has it
        import_fixture("q017-r3.jsonl")
    response = response_for("q017-r3")
    assert response.text == ANSWER
    return response


@pytest.fixture
def claim(replay_response, reviewer) -> Claim:
    """One factual claim split by alice; its marker [D-01] follows the span."""
    return claim_create(
        response=replay_response,
        author=reviewer,
        text="Final-sale items are excluded from returns.",
        spans=[FINAL_SALE],
        facts=["G2"],
    )


@pytest.fixture
def blind(project) -> Project:
    Project.objects.filter(pk=project.pk).update(blind_review=True)
    project.refresh_from_db()
    return project


# A claim citing a passage that its bundle declares but its response neither retrieved nor
# marked (bundle.md allows it): the superseded v1 of the return policy, which says 30 days.
ASIDE_ANSWER = "Returns are accepted within 30 days [1]."
CURRENT_POLICY = "R-01@v2#p1"
OLD_POLICY = "R-01@v1#p1"


def aside_bundle(run_id: str = "aside-r1") -> list[dict]:
    def passage(version: str, text: str, **extra) -> dict:
        return {
            "kind": "passage", "ref": f"R-01@{version}#p1", "doc_id": "R-01",
            "version": version, "chunk_id": "p1", "text": text, **extra,
        }  # fmt: skip

    marker = ASIDE_ANSWER.index("[1]")
    return [
        {
            "kind": "run", "schema": "evidence-bundle/1", "run_id": run_id,
            "created_at": "2026-10-01T12:00:00Z", "collection_snapshot": "aside@1",
            "system": {"model": "m"},
        },
        passage("v2", "Returns are accepted within 14 days of delivery.",
                version_status="current"),
        passage("v1", "Returns are accepted within 30 days of delivery.",
                version_status="superseded", superseded_by=CURRENT_POLICY),
        {
            "kind": "case", "case_id": "A-1", "query": "How long is the return window?",
            "required_facts": [
                {"fact_id": "G1", "text": "14 days.", "evidence": [CURRENT_POLICY]}
            ],
        },
        {
            "kind": "response", "case_id": "A-1", "text": ASIDE_ANSWER,
            "retrieved": [{"ref": CURRENT_POLICY, "rank": 1}],
            "citations": [
                {"marker": "[1]", "ref": CURRENT_POLICY, "start": marker, "end": marker + 3}
            ],
            "claims": [
                {
                    "claim_id": "c1", "text": "Returns are accepted within 30 days.",
                    "spans": [[0, marker - 1]], "citations": [OLD_POLICY], "facts": ["G1"],
                }
            ],
        },
    ]  # fmt: skip


@pytest.fixture
def aside_claim(project) -> Claim:
    """c1 of run aside-r1: it cites OLD_POLICY, which its response never retrieved or marked."""
    import_bytes(bundle_bytes(*aside_bundle()))
    return Claim.objects.get(response__run__run_id="aside-r1", key="c1")


@pytest.fixture
def labelled(demo_runs, reviewer, second_reviewer):
    """q017-r1's four claims labelled by alice and bob: they disagree on C-017-2."""
    claims = {c.key: c for c in Claim.objects.filter(response__run__run_id="q017-r1")}
    for key, alice, bob in [
        ("C-017-1", "unsupported", "unsupported"),
        ("C-017-2", "partial", "supported"),
        ("C-017-3", "unsupported", "unsupported"),
        ("C-017-4", "unsupported", "unsupported"),
    ]:
        judge(claims[key], reviewer, alice, f"alice: {key}")
        judge(claims[key], second_reviewer, bob, f"bob: {key}")
    return Run.objects.get(run_id="q017-r1")


LABELS = ["supported", "partial", "unsupported", "not_assessable"]
DIAGNOSES = ["", "not_in_collection"]


def work_over(
    run: Run, rng: random.Random, people: list[User], lead: User, *, steps: int,
    texts: list[str] | None = None,
) -> None:  # fmt: skip
    """Every write that changes a run's figures, `steps` times at random, a verdict five
    times as often as each other: verdicts (with diagnoses, relevance and associations),
    adjudications, relinks (and, with `texts`, rewrites to one of them), withdrawals and
    their undoing, review marks, splits. The reference tests of the stored figures and of
    the stored comparison run it, then recompute."""
    reviewer = people[0]
    for step in range(steps):
        claim = rng.choice(list(Claim.objects.filter(response__run=run)))
        newest = claim.revisions.order_by("-seq").first()
        action = rng.choice(
            [*["verdict"] * 5, "adjudicate", "revise", "withdraw", "mark", "split"]
        )
        if action in ("verdict", "adjudicate") and not newest.withdrawn:
            support = rng.choice(LABELS)
            judge(
                claim, lead if action == "adjudicate" else rng.choice(people), support,
                adjudication=action == "adjudicate",
                diagnosis=rng.choice(DIAGNOSES if support == "unsupported" else [""]),
                citation_relevance={
                    ref: rng.choice(["necessary", "redundant", "irrelevant"])
                    for ref in newest.citations
                },
                association=rng.choice([None, "missing"]) if not newest.citations else None,
            )  # fmt: skip
        elif action == "revise":
            claim_revise(
                claim=claim, author=reviewer, seen_claim_seq=newest.seq, reason="Relinked.",
                text=rng.choice([None, *texts]) if texts else None,
                facts=rng.choice([[], ["G1"], ["G2"], ["G1", "G2"]]),
                gaps=rng.choice([[], [], ["X1"]]),
                kind=rng.choice(["factual", "factual", "abstention"]),
                citations=rng.choice([[], newest.citations]),
            )  # fmt: skip
        elif action == "withdraw":
            claim_revise(
                claim=claim, author=reviewer, seen_claim_seq=newest.seq,
                reason="Withdrawn, or back.", withdrawn=not newest.withdrawn,
            )  # fmt: skip
        elif action == "mark":
            response_mark_complete(
                response=claim.response, author=reviewer, complete=rng.random() < 0.6
            )
        else:
            claim_create(
                response=claim.response, author=reviewer,
                text=rng.choice(texts) if texts else f"Split {step}.",
                spans=[[0, 21]], facts=rng.choice([[], ["G2"]]),
                kind=rng.choice(["factual", "abstention"]), gaps=rng.choice([[], ["X1"]]),
            )  # fmt: skip
