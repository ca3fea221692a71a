"""Pages of the evidence app: the project list, a project, and bundle upload."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from evidence.forms import BundleUploadForm
from evidence.http import HtmxHttpRequest
from evidence.models import Membership, Role
from evidence.selectors import membership_for, projects_for_user
from evidence.services import BundleInvalid, bundle_import, membership_change
from replay.selectors import runs_for_project


def forbidden(request: HtmxHttpRequest, project, action: str) -> HttpResponse:
    """403 for a member who may not do this (an outsider gets 404 before reaching here)."""
    context = {"project": project, "action": action}
    return render(request, "evidence/forbidden.html", context, status=403)


@require_GET
def home(request: HtmxHttpRequest) -> HttpResponse:
    projects = list(projects_for_user(user=request.user))
    return render(request, "evidence/home.html", {"projects": projects})


@require_GET
def project_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    project = membership.project
    runs = list(runs_for_project(project=project))
    return render(
        request,
        "evidence/project.html",
        {"project": project, "membership": membership, "runs": runs},
    )


@require_http_methods(["GET", "POST"])
def bundle_upload(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    project = membership.project
    if not membership.can_lead:
        return forbidden(request, project, "import runs")
    form = BundleUploadForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    summary = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            upload = form.cleaned_data["bundle"]
            try:
                summary = bundle_import(
                    stream=upload.file,
                    project_slug=project.slug,
                    user=request.user,
                    source_name=upload.name,
                    dry_run=form.cleaned_data["dry_run"],
                    new_expectation_versions=form.cleaned_data["new_expectation_version"],
                )
            except BundleInvalid as exc:
                problems = exc.lines()
                status = 400
            else:
                if not summary.dry_run:
                    messages.success(
                        request,
                        f"Imported run {summary.run_id}: {summary.responses} responses, "
                        f"{summary.claims} claims.",
                    )
                    url = f"/p/{project.slug}/runs/{summary.run_id}/"
                    if request.htmx:
                        return HttpResponseClientRedirect(url)
                    return redirect(url)
        else:
            status = 400
    context = {
        "project": project,
        "membership": membership,
        "form": form,
        "problems": problems,
        "summary": summary,
    }
    template = "evidence/upload.html#result" if request.htmx else "evidence/upload.html"
    return render(request, template, context, status=status)


@require_http_methods(["GET", "POST"])
def project_members(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    project = membership.project
    if request.method == "POST":
        role = request.POST.get("role") or None
        try:
            done = membership_change(
                project=project,
                actor=request.user,
                username=request.POST.get("username", "").strip(),
                role=None if request.POST.get("remove") else role,
            )
        except PermissionDenied:
            return forbidden(request, project, "manage members")
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
