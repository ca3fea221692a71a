"""Logging in: after a handful of failures, per username and per address, the form asks to wait."""

from __future__ import annotations

import hashlib

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache


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
        "throttled": (
            "Too many failed logins for this account or from this address. "
            "Wait %(minutes)s minutes, then try again."
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
