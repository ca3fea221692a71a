"""Reads of the evidence app."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from evidence.models import Membership, Project


def projects_for_user(*, user: AbstractBaseUser) -> QuerySet[Project]:
    return Project.objects.filter(memberships__user=user).order_by("slug")


def memberships_for_user(*, user: AbstractBaseUser) -> QuerySet[Membership]:
    """The user's projects with their role in each, by slug."""
    return Membership.objects.filter(user=user).select_related("project").order_by("project__slug")


class ProjectChoiceError(Exception):
    pass


def project_for_command(*, slug: str | None) -> Project:
    """`--project` when given, else the only project (cli.md)."""
    if slug:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise ProjectChoiceError(f"project {slug!r} does not exist")
        return project
    projects = list(Project.objects.order_by("slug")[:2])
    if len(projects) == 1:
        return projects[0]
    if not projects:
        raise ProjectChoiceError("there is no project yet; name one with --project")
    raise ProjectChoiceError("there are several projects; name one with --project")
