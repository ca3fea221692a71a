"""An imported judge held against the people's verdicts, claim by claim (issue 14).

In q017-r1 the imported `seed-protocol` judged all four claims; `labelled` has alice and
then bob judge them too, so the people's verdict (the default source) is bob's.
"""

from __future__ import annotations

import io
import json

from django.core.management import call_command
from django.urls import reverse

from cards.agreement import run_agreement
from cards.models import Claim
from cards.services.verdicts import verdict_save


def seed_protocol(run, *annotators):
    [judged] = run_agreement(run=run, annotators=list(annotators) or None).judges
    assert judged.judge == "seed-protocol"
    return judged


def test_a_judge_is_held_to_the_peoples_verdict_on_each_claim(labelled):
    judged = seed_protocol(labelled)
    assert (judged.raw.k, judged.raw.n) == (3, 4)
    assert judged.confusion["partial"]["supported"] == 1  # rows: the judge
    assert judged.confusion["unsupported"]["unsupported"] == 3
    assert judged.kappa is not None
    [claim] = judged.disagreeing
    assert (claim.case_id, claim.claim_id) == ("Q-017", "C-017-2")
    assert claim.judge[0] == "partial"
    assert claim.people == ("supported", "bob: C-017-2", "bob")


def test_a_leads_adjudication_is_the_peoples_verdict(labelled, lead):
    claim = Claim.objects.get(response__run=labelled, key="C-017-2")
    verdict_save(
        claim=claim, author=lead, support="partial", reason="Only the window is supported.",
        seen_claim_seq=1, seen_own_seq=None, adjudication=True,
        seen_head_seq=claim.verdicts.order_by("-seq").values_list("seq", flat=True).first(),
    )  # fmt: skip
    judged = seed_protocol(labelled)
    assert (judged.raw.k, judged.raw.n) == (4, 4)
    assert judged.disagreeing == []


def test_claims_no_person_judged_are_left_out(demo_runs):
    from replay.models import Run

    judged = seed_protocol(Run.objects.get(run_id="q017-r1"))
    assert judged.raw.n == 0
    assert judged.kappa is None
    assert judged.as_json()["raw_agreement"] is None


def test_only_the_chosen_judges_are_compared(labelled):
    assert run_agreement(run=labelled, annotators=["alice", "bob"]).judges == []
    assert seed_protocol(labelled, "alice", "seed-protocol").raw.n == 4


def test_run_agreement_json_adds_each_judge_beside_the_cli_keys(labelled):
    out = io.StringIO()
    call_command("run_agreement", "q017-r1", "--project", "demo", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["disagreements"] == 1  # cli.md's keys as before
    [judged] = printed["judges_vs_people"]
    assert judged["judge"] == "seed-protocol"
    assert judged["claims"] == 4
    assert judged["raw_agreement"]["k"] == 3
    assert judged["disagreements"] == [
        {"case_id": "Q-017", "claim_id": "C-017-2", "judge": "partial", "people": "supported"}
    ]


def test_the_figures_page_links_each_disagreement_with_a_judge_to_its_card(
    client,
    labelled,
    lead,
    django_assert_max_num_queries,
):
    client.force_login(lead)
    # 19: 9 read the stored figures (the demo has several snapshots: drift is asked), and
    # on PostgreSQL one waits for the run's writes in flight (cards.run_writes).
    with django_assert_max_num_queries(19):
        client.get(reverse("run_figures", args=["demo", "q017-r1"]))
    # The agreement panel, loaded after the page: 9 when computed, 10 on PostgreSQL (its
    # own test).
    with django_assert_max_num_queries(10):
        response = client.get(
            reverse("run_agreement", args=["demo", "q017-r1"]), HTTP_HX_REQUEST="true"
        )
    content = response.content.decode()
    assert "Judges against people" in content
    card = reverse("case_detail", args=["demo", "q017-r1", "Q-017"]) + "#card-C-017-2"
    assert f'href="{card}"' in content


def test_a_converted_ragas_judge_is_held_to_a_reviewer(project, reviewer):
    from pathlib import Path

    from ingest.convert import convert_bundle
    from replay.models import Run
    from tests.cards.conftest import judge
    from tests.conftest import import_bytes

    sample = Path(__file__).parent.parent / "ingest" / "samples" / "ragas-result.jsonl"
    bundle = io.BytesIO()
    convert_bundle(fmt="ragas", source=sample.open("rb"), out=bundle, run_id="ragas-1")
    import_bytes(bundle.getvalue())
    for claim in Claim.objects.filter(response__run__run_id="ragas-1"):
        judge(claim, reviewer, "supported", "The context says so.")
    [judged] = run_agreement(run=Run.objects.get(run_id="ragas-1")).judges
    assert judged.judge == "ragas-faithfulness"
    assert (judged.raw.k, judged.raw.n) == (2, 3)
    [differ] = judged.disagreeing
    assert differ.judge[0] == "unsupported" and differ.people[:1] == ("supported",)
