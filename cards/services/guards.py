"""What a write of the cards app checks before it writes: who, and which chain head.

Every write to a claim's chain locks the claim first (SELECT … FOR UPDATE on
PostgreSQL; on SQLite every transaction already begins IMMEDIATE, which
serialises writers), reads the chain head, and appends the next revision with
the head's hash. Two people saving at once therefore get contiguous numbers
and neither save is lost; the unique (claim, seq) constraints and the
cross-table trigger refuse anything that slips past.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.utils.translation import gettext

from cards.models import Claim, ClaimRevision, VerdictRevision
from cards.run_writes import announce_write, lock_for_write
from evidence.models import Membership

BLANK = re.compile(r"^\s*$")


class StaleCard(Exception):
    """The card changed since the form was loaded; nothing was saved."""


@dataclass(frozen=True)
class ChainHead:
    seq: int
    sha256: str | None


def identity(claim: Claim) -> dict[str, str]:
    """The names a revision document carries (`cards.chain`): project, run, case, claim."""
    response = claim.response
    return {
        "project": response.run.project.slug,
        "run_id": response.run.run_id,
        "case_id": response.case.case_id,
        "claim_id": claim.key,
    }


def lock_claim(claim_pk: int) -> tuple[Claim, ChainHead]:
    """The claim, locked until the transaction ends, and the head of its chain."""
    announce_write(claim_pk=claim_pk)  # before its row lock (cards.run_writes)
    claim = (
        Claim.objects.select_for_update(of=("self",))
        .select_related("response__run__project", "response__case", "response__expectation")
        .get(pk=claim_pk)
    )
    heads = [
        row
        for row in (
            ClaimRevision.objects.filter(claim=claim)
            .order_by("-seq")
            .values_list("seq", "sha256")
            .first(),
            VerdictRevision.objects.filter(claim=claim)
            .order_by("-seq")
            .values_list("seq", "sha256")
            .first(),
        )
        if row is not None
    ]
    seq, digest = max(heads) if heads else (0, None)
    return claim, ChainHead(seq, digest)


def lock_claim_row(claim_pk: int) -> None:
    """Lock the claim until the transaction ends, in a statement of its own.

    Under READ COMMITTED each statement reads what was committed when it began, and a
    statement that waits for the lock still reads from before the wait: a read of the
    chain folded into this one missed the revision of the save it waited for, and two
    saves took the same number. The read must come after, as its own statement. SQLite
    needs no lock (its transactions begin IMMEDIATE, one writer at a time) and gets none.
    """
    if not connection.features.has_select_for_update:
        return
    # The write is announced to the claim's run in the same statement (cards.run_writes).
    if not lock_for_write(
        "cards_claim c JOIN replay_response r ON r.id = c.response_id",
        run_column="r.run_id",
        where="c.id = %s",
        params=[claim_pk],
        of="c",
    ):
        raise Claim.DoesNotExist("No such claim.")


def refuse_non_member(membership: Membership | None, *, lead: bool = False) -> None:
    """PermissionDenied unless `membership` exists (and, with `lead`, may lead)."""
    if membership is None or (lead and not membership.can_lead):
        raise PermissionDenied(
            gettext("Only a lead of this project may do this.")
            if lead
            else gettext("Not a member.")
        )


def require_member(*, project_id: int, user: AbstractBaseUser, lead: bool = False) -> Membership:
    membership = Membership.objects.filter(project_id=project_id, user=user).first()
    refuse_non_member(membership, lead=lead)
    return membership


def clean_text(value: str, field: str, refusal: str) -> str:
    """The value without its outer blanks, or `refusal` (a whole sentence) for `field`."""
    if value is None or BLANK.match(value):
        raise ValidationError({field: refusal})
    return value.strip()
