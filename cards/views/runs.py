"""Pages about a project's runs and their review progress: project, run, assignments,
disagreements and drift."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from cards.blind import run_unblinded
from cards.drift import drifted_refs
from cards.oversight import assignments_for_run, disagreements
from cards.progress import responses_for_run, runs_for_project
from cards.services.assignments import assignment_deal, assignment_set
from cards.views.lead import lead_run_action
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from evidence.models import Membership, Role
from replay.models import Run
from replay.selectors import run_for_project


@require_GET
def project_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    project = membership.project
    runs = list(runs_for_project(project=project))
    return render(
        request,
        "cards/project.html",
        {"project": project, "membership": membership, "runs": runs},
    )


@require_GET
def run_detail(request: HtmxHttpRequest, slug: str, run_id: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    run = run_for_project(project=membership.project, run_id=run_id)
    responses = list(responses_for_run(run=run))
    blind_lead = membership.project.blind_review and membership.can_lead
    return render(
        request,
        "cards/run.html",
        {
            "project": membership.project,
            "membership": membership,
            "run": run,
            "responses": responses,
            "run_unblinded": blind_lead and run_unblinded(run=run),
        },
    )


@require_GET
def project_drift(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    return render(
        request,
        "cards/drift.html",
        {
            "project": membership.project,
            "membership": membership,
            "refs": drifted_refs(project=membership.project),
        },
    )


@require_http_methods(["GET", "POST"])
def run_assign(request: HtmxHttpRequest, slug: str, run_id: str) -> HttpResponse:
    membership = membership_for(
        user=request.user, slug=slug, role=Role.LEAD, action=gettext_lazy("assign cases")
    )
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
            messages.error(request, gettext("Choose a reviewer and at least one case."))
        else:
            created = assignment_set(responses=picked, reviewer=reviewer, lead=request.user)
            messages.success(
                request,
                ngettext(
                    "Assigned %(n)s new case to %(who)s.",
                    "Assigned %(n)s new cases to %(who)s.",
                    created,
                )
                % {"n": created, "who": reviewer.username},
            )
        return redirect("run_assign", slug, run_id)
    return render(
        request,
        "cards/assign.html",
        {
            "project": membership.project,
            "run": run,
            "responses": responses,
            "members": members,
            "rotation": [m.user.username for m in members if m.in_rotation],
            "assigned": assignments_for_run(run=run),
        },
    )


@require_POST
def run_assign_deal(request: HtmxHttpRequest, slug: str, run_id: str) -> HttpResponse:
    """Deal the run's cases that lack reviewers, as the project's settings say."""

    def deal(run: Run) -> str:
        dealt = assignment_deal(run=run, lead=request.user)
        if not dealt.created and not dealt.short:
            return gettext("Every case already has its reviewers: nothing to assign.")
        done = ngettext(
            "Assigned %(n)s new case place.", "Assigned %(n)s new case places.", dealt.created
        ) % {"n": dealt.created}
        if dealt.short:
            short = ngettext(
                "%(n)s case still lacks reviewers: fewer members are in rotation than "
                "reviewers per case.",
                "%(n)s cases still lack reviewers: fewer members are in rotation than "
                "reviewers per case.",
                dealt.short,
            ) % {"n": dealt.short}
            return f"{done} {short}"
        return done

    return lead_run_action(
        request, slug, run_id, action=gettext_lazy("assign cases"), act=deal, then="run_assign"
    )


@require_GET
def run_disagreements(request: HtmxHttpRequest, slug: str, run_id: str) -> HttpResponse:
    membership = membership_for(
        user=request.user, slug=slug, role=Role.LEAD, action=gettext_lazy("see disagreements")
    )
    run = run_for_project(project=membership.project, run_id=run_id)
    return render(
        request,
        "cards/disagreements.html",
        {"project": membership.project, "run": run, "items": disagreements(run=run)},
    )
