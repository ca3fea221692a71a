"""Writes of the evidence app: projects and their members."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from evidence.models import Membership, Project, Role


def project_create(*, slug: str, name: str = "") -> Project:
    project, _ = Project.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return project


def membership_set(*, project: Project, user: AbstractBaseUser, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership


@transaction.atomic
def membership_change(
    *, project: Project, actor: AbstractBaseUser, username: str, role: str | None
) -> str:
    """A project admin adds, re-roles (`role`) or removes (`role=None`) a member.

    Returns what happened, for the page. The last admin cannot leave or be
    demoted: a project always has someone who can manage it.
    """
    acting = Membership.objects.filter(project=project, user=actor).first()
    if acting is None or acting.role != Role.ADMIN:
        raise PermissionDenied("Only a project admin manages members.")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError(f"There is no user {username!r}; an administrator creates accounts.")
    if role is not None and role not in Role.values:
        raise ValidationError("A role is reviewer, lead or admin.")
    current = Membership.objects.select_for_update().filter(project=project, user=user).first()
    if current is not None and current.role == Role.ADMIN and role != Role.ADMIN:
        admins = Membership.objects.filter(project=project, role=Role.ADMIN).count()
        if admins == 1:
            raise ValidationError("This is the project's last admin; name another admin first.")
    if role is None:
        if current is None:
            return f"{username} was not a member."
        current.delete()
        return f"{username} removed from the project."
    membership_set(project=project, user=user, role=role)
    return f"{username} is now a {role}."
