from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request after django-htmx's middleware, for type checkers."""

    htmx: HtmxDetails


def say_outcome(request: HttpRequest, act: Callable[[], str]) -> None:
    """Run `act` (a service call that says what it did) and tell the user, as a message.

    Its return value becomes a success message; a ValidationError it raises, an error
    message. The shape of a plain-post action that redirects afterwards.
    """
    try:
        done = act()
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, done)
