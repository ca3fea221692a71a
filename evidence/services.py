"""Writes of the evidence app: projects and their members."""

from __future__ import annotations

from collections.abc import Collection

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, ngettext

from evidence.access import require_role
from evidence.models import MAX_REVIEWERS_PER_CASE, AssignmentMode, Membership, Project, Role


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
        raise PermissionDenied(gettext("Only a project admin manages members."))
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError(
            gettext("There is no user %(name)r; an administrator creates accounts.")
            % {"name": username}
        )
    if role is not None and role not in Role.values:
        raise ValidationError(gettext("A role is reviewer, lead or admin."))
    current = Membership.objects.select_for_update().filter(project=project, user=user).first()
    if current is not None and current.role == Role.ADMIN and role != Role.ADMIN:
        admins = Membership.objects.filter(project=project, role=Role.ADMIN).count()
        if admins == 1:
            raise ValidationError(
                gettext("This is the project's last admin; name another admin first.")
            )
    if role is None:
        if current is None:
            return gettext("%(name)s was not a member.") % {"name": username}
        current.delete()
        return gettext("%(name)s removed from the project.") % {"name": username}
    membership_set(project=project, user=user, role=role)
    return gettext("%(name)s is now a %(role)s.") % {
        "name": username,
        "role": Role(role).label.lower(),
    }


@transaction.atomic
def project_settings_update(
    *, project: Project, actor: AbstractBaseUser, blind_review: bool, reviewers_per_case: int,
    assignment: str, rotation: Collection[str],
) -> list[str]:  # fmt: skip
    """A lead sets how the project reviews: blind or not, reviewers per case, and how cases
    are dealt (by hand, or round-robin or random across the members in `rotation`).

    Returns what changed, for the page. Switching blind review on records when
    (`blind_since`): before that moment reviewers could see every verdict, which
    cards.blind takes into account when it decides which verdicts were blind.
    """
    acting = Membership.objects.filter(project=project, user=actor).first()
    if acting is None:
        raise PermissionDenied(gettext("Not a member."))
    acting.project = project
    require_role(acting, Role.LEAD, gettext_lazy("change the project's settings"))
    if assignment not in AssignmentMode.values:
        modes = gettext("Assignment is by hand, round-robin or random.")
        raise ValidationError({"assignment": modes})
    if not 1 <= reviewers_per_case <= MAX_REVIEWERS_PER_CASE:
        raise ValidationError(
            {
                "reviewers_per_case": gettext("Between 1 and %(max)s reviewers per case.")
                % {"max": MAX_REVIEWERS_PER_CASE}
            }
        )
    project = Project.objects.select_for_update().get(pk=project.pk)
    members = {
        m.user.get_username(): m
        for m in Membership.objects.filter(project=project).select_related("user")
    }
    chosen = set(rotation)
    if unknown := chosen - set(members):
        names = ", ".join(sorted(unknown))
        raise ValidationError({"rotation": gettext("Not a member: %(names)s.") % {"names": names}})
    if assignment != AssignmentMode.MANUAL and len(chosen) < reviewers_per_case:
        raise ValidationError(
            {
                "rotation": gettext("Choose at least %(reviewers)s to deal per case.")
                % {"reviewers": _reviewers(reviewers_per_case)}
            }
        )
    changes = []
    if blind_review != project.blind_review:
        changes.append(gettext("blind review on") if blind_review else gettext("blind review off"))
        if blind_review:
            project.blind_since = timezone.now()
    if reviewers_per_case != project.reviewers_per_case:
        reviewers = _reviewers(reviewers_per_case)
        changes.append(gettext("%(reviewers)s per case") % {"reviewers": reviewers})
    if assignment != project.assignment:
        changes.append(
            gettext("assignment %(mode)s") % {"mode": AssignmentMode(assignment).label.lower()}
        )
    if chosen != {name for name, m in members.items() if m.in_rotation}:
        names = ", ".join(sorted(chosen)) or gettext("nobody")
        changes.append(gettext("dealt to %(names)s") % {"names": names})
        dealt = Membership.objects.filter(project=project, user__username__in=chosen)
        dealt.update(in_rotation=True)
        Membership.objects.filter(project=project).exclude(pk__in=dealt).update(in_rotation=False)
    project.blind_review = blind_review
    project.reviewers_per_case = reviewers_per_case
    project.assignment = assignment
    project.save(update_fields=["blind_review", "blind_since", "reviewers_per_case", "assignment"])
    return changes


def _reviewers(n: int) -> str:
    return ngettext("%(n)s reviewer", "%(n)s reviewers", n) % {"n": n}
