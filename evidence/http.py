from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request after django-htmx's middleware, for type checkers."""

    htmx: HtmxDetails
