"""Pages of the evidence app: the project list, a project and its members."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from evidence.access import membership_for, require_role
from evidence.http import HtmxHttpRequest
from evidence.models import Membership, Role
from evidence.selectors import projects_for_user
from evidence.services import membership_change


@require_GET
def home(request: HtmxHttpRequest) -> HttpResponse:
    projects = list(projects_for_user(user=request.user))
    return render(request, "evidence/home.html", {"projects": projects})


@require_http_methods(["GET", "POST"])
def project_members(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    project = membership.project
    if request.method == "POST":
        require_role(membership, Role.ADMIN, "manage members")
        role = request.POST.get("role") or None
        try:
            done = membership_change(
                project=project,
                actor=request.user,
                username=request.POST.get("username", "").strip(),
                role=None if request.POST.get("remove") else role,
            )
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        else:
            messages.success(request, done)
        return redirect("project_members", slug)
    members = (
        Membership.objects.filter(project=project)
        .select_related("user")
        .order_by("user__username")
    )
    return render(
        request,
        "evidence/members.html",
        {"project": project, "membership": membership, "members": members, "roles": Role.choices},
    )
