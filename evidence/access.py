"""Who may see and do what in a project: one rule for every page, command and service.

An outsider (no membership) gets 404 everywhere, as if the project did not
exist; a member whose role is too low gets 403 with a sentence saying who may.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils.translation import gettext

from evidence.models import Membership, Role

# Each role may do everything the roles before it may.
RANK = {Role.REVIEWER: 0, Role.LEAD: 1, Role.ADMIN: 2}


def has_role(membership: Membership, role: str) -> bool:
    return RANK[Role(membership.role)] >= RANK[Role(role)]


def require_role(membership: Membership, role: str, action: str) -> None:
    """Refuse with 403 unless the member holds `role` or a higher one."""
    if not has_role(membership, role):
        refusal = {
            Role.ADMIN: gettext("Only an admin of %(project)s may %(action)s."),
            Role.LEAD: gettext("Only a lead of %(project)s may %(action)s."),
            Role.REVIEWER: gettext("Only a reviewer of %(project)s may %(action)s."),
        }[Role(role)]
        raise PermissionDenied(refusal % {"project": membership.project.name, "action": action})


def membership_for(
    *, user: AbstractBaseUser, slug: str, role: str | None = None, action: str = ""
) -> Membership:
    """The user's membership of project `slug`: 404 for outsiders, 403 without `role`."""
    membership = (
        Membership.objects.select_related("project", "user")
        .filter(user=user, project__slug=slug)
        .first()
    )
    if membership is None:
        raise Http404("No such project.")
    if role is not None:
        require_role(membership, role, action)
    return membership
