"""A lead's action on a run, as a plain post: the shape several run pages share."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpResponse
from django.shortcuts import redirect

from evidence.access import membership_for
from evidence.http import HtmxHttpRequest, say_outcome
from evidence.models import Role
from replay.models import Run
from replay.selectors import run_for_project


def lead_run_action(
    request: HtmxHttpRequest, slug: str, run_id: str, *, action: str,
    act: Callable[[Run], str], then: str,
) -> HttpResponse:  # fmt: skip
    """Check the lead, `act` on the run (a service call that says what it did), redirect.

    `action` completes the refusal a non-lead gets ("… may not {action}"); a service's
    ValidationError becomes an error message, its return value a success message.
    """
    membership = membership_for(user=request.user, slug=slug, role=Role.LEAD, action=action)
    run = run_for_project(project=membership.project, run_id=run_id)
    say_outcome(request, lambda: act(run))
    return redirect(then, slug, run_id)
