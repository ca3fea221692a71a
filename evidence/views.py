"""Pages of the evidence app: the project list, a project's members and its settings."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods

from evidence.access import membership_for, require_role
from evidence.forms import ProjectSettingsForm
from evidence.http import HtmxHttpRequest, say_outcome
from evidence.models import Membership, Project, Role
from evidence.selectors import projects_for_user
from evidence.services import membership_change, project_settings_update


@require_GET
def home(request: HtmxHttpRequest) -> HttpResponse:
    projects = list(projects_for_user(user=request.user))
    return render(request, "evidence/home.html", {"projects": projects})


@require_http_methods(["GET", "POST"])
def project_members(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    project = membership.project
    if request.method == "POST":
        require_role(membership, Role.ADMIN, gettext_lazy("manage members"))
        role = None if request.POST.get("remove") else (request.POST.get("role") or None)
        username = request.POST.get("username", "").strip()
        say_outcome(
            request,
            lambda: membership_change(
                project=project, actor=request.user, username=username, role=role
            ),
        )
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


@require_http_methods(["GET", "POST"])
def project_settings(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(
        user=request.user,
        slug=slug,
        role=Role.LEAD,
        action=gettext_lazy("change the project's settings"),
    )
    project = membership.project
    members = _members(project)
    form = ProjectSettingsForm(request.POST or None, project=project, members=members)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            changes = project_settings_update(
                project=project, actor=request.user, blind_review=data["blind_review"],
                reviewers_per_case=data["reviewers_per_case"], assignment=data["assignment"],
                rotation=data["rotation"],
            )  # fmt: skip
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            done = "; ".join(changes) if changes else gettext("nothing changed")
            messages.success(request, gettext("Settings saved: %(changes)s.") % {"changes": done})
            if not request.htmx:
                return redirect("project_settings", slug)
            project.refresh_from_db()
            members = _members(project)
            form = ProjectSettingsForm(project=project, members=members)
    template = "evidence/settings.html#settings-form" if request.htmx else "evidence/settings.html"
    context = {
        "project": project,
        "membership": membership,
        "members": members,
        "form": form,
        "partial_messages": bool(request.htmx),
    }
    return render(request, template, context, status=400 if form.errors else 200)


def _members(project: Project) -> list[Membership]:
    return list(
        Membership.objects.filter(project=project)
        .select_related("user")
        .order_by("user__username")
    )
