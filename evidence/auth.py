"""Logging in: after a handful of failures, per username and per address, the form asks to
wait; and the logged-in user read on every request."""

from __future__ import annotations

import functools
import hashlib

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.db import connections, router
from django.utils.translation import ngettext_lazy

from evidence.rows import Columns, prepared_cursor


class LoginThrottle(AuthenticationForm):
    """A login form that refuses to check a password once too many checks failed.

    Failures are counted per username (against guessing one account's password) and
    per client address (against trying one password on many accounts), for
    LOGIN_FAILURE_WINDOW_SECONDS from the first failure. Past LOGIN_FAILURE_LIMIT of
    either, the password is not checked at all, right or wrong, until the window ends.
    REMOTE_ADDR is the address: behind a proxy it is the proxy's, so the per-address
    count then covers everyone and the per-username count is what protects an account.
    """

    error_messages = AuthenticationForm.error_messages | {
        "throttled": ngettext_lazy(
            "Too many failed logins for this account or from this address. "
            "Wait %(minutes)s minute, then try again.",
            "Too many failed logins for this account or from this address. "
            "Wait %(minutes)s minutes, then try again.",
            "minutes",
        ),
    }

    throttled = False  # the page then shows the wait, not "do not match"

    def clean(self):
        keys = self.failure_keys()
        limit = settings.LOGIN_FAILURE_LIMIT
        if any(cache.get(key, 0) >= limit for key in keys):
            self.throttled = True
            minutes = -(-settings.LOGIN_FAILURE_WINDOW_SECONDS // 60)
            raise forms.ValidationError(
                self.error_messages["throttled"], code="throttled", params={"minutes": minutes}
            )
        try:
            return super().clean()
        except forms.ValidationError as error:
            if self.cleaned_data.get("password") is not None:
                for key in keys:
                    # add() starts the window at the first failure; incr() keeps it.
                    if not cache.add(key, 1, settings.LOGIN_FAILURE_WINDOW_SECONDS):
                        try:
                            cache.incr(key)
                        except ValueError:  # expired between add() and incr()
                            cache.add(key, 1, settings.LOGIN_FAILURE_WINDOW_SECONDS)
            raise error

    def failure_keys(self) -> list[str]:
        username = (self.cleaned_data.get("username") or "").casefold()
        address = self.request.META.get("REMOTE_ADDR", "") if self.request else ""
        # Hashed: a username is any text, a cache key is not.
        return [
            "login-failures:user:" + hashlib.sha256(username.encode()).hexdigest(),
            "login-failures:addr:" + hashlib.sha256(address.encode()).hexdigest(),
        ]


class ThrottledAuthenticationForm(LoginThrottle):
    """The login page's form."""


class ThrottledAdminAuthenticationForm(LoginThrottle, AdminAuthenticationForm):
    """The admin's login form: the same counts, or the admin would be a way around them."""


class UserBackend(ModelBackend):
    """Django's `ModelBackend`, the logged-in user of each request read with a statement
    written as SQL: through the ORM, compiling that `get` cost more CPU than running it.

    The same checks follow in `django.contrib.auth.get_user`: an inactive user is no user,
    and the session must carry the hash of the user's current password.
    """

    def get_user(self, user_id):
        model = get_user_model()
        columns, sql = _user_read()
        connection = connections[router.db_for_read(model)]
        with prepared_cursor(connection.alias) as cursor:
            cursor.execute(sql, [model._meta.pk.to_python(user_id)])
            row = cursor.fetchone()
        if row is None:
            return None
        user = columns.build(row, using=connection.alias)
        return user if self.user_can_authenticate(user) else None


@functools.cache
def _user_read() -> tuple[Columns, str]:
    model = get_user_model()
    columns = Columns(model, "u")
    table, pk = model._meta.db_table, model._meta.pk.column
    return columns, f'SELECT {columns.sql} FROM "{table}" u WHERE u."{pk}" = %s'
