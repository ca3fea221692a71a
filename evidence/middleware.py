"""Requests carrying text no database can store are refused before a view sees them."""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import BadRequest
from django.core.signals import request_finished
from django.http import Http404, HttpRequest, HttpResponse, QueryDict

from evidence.logs import request_id, request_id_from


class RequestId:
    """Every log line written for a request carries its id, and the response sends it back.

    The id is the proxy's `X-Request-ID` when it is sane (`evidence.logs.SANE_ID`), else a
    new one. It is kept until the response is closed, not only while the middleware runs:
    Django logs a 4xx or 5xx after the last middleware has returned. First in MIDDLEWARE,
    so a redirect to https carries one too.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        current = request_id_from(request.headers.get("X-Request-ID"))
        request_id.set(current)
        response = self.get_response(request)
        response["X-Request-ID"] = current
        return response


def _forget_request_id(**kwargs) -> None:
    request_id.set("")


request_finished.connect(_forget_request_id, dispatch_uid="evidence.middleware.request_id")


class RefuseUnstorableText:
    """A NUL character in the path answers 404, in the query string or a form field 400.

    PostgreSQL refuses a NUL in any text parameter (SQLite stores it), so a `%00` in a
    run id or a filter reached a query and failed there as a 500. Invalid UTF-8 and so
    lone surrogates cannot arrive this way: Django keeps such path bytes percent-encoded
    and replaces them in query strings and forms. Forms check their fields too
    (`ProhibitNullCharactersValidator`), but several views read `request.GET` or
    `request.POST` directly.

    The form check runs in `process_view`, after the CSRF and login middleware, so a
    body is never parsed here for a request those refuse.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path_info:
            raise Http404("No such page.")
        if _holds_nul(request.GET):
            raise BadRequest("The query string holds a NUL character.")
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> None:
        if request.method == "POST" and _holds_nul(request.POST):
            raise BadRequest("A form field holds a NUL character.")


def _holds_nul(data: QueryDict) -> bool:
    return any("\x00" in key or any("\x00" in v for v in values) for key, values in data.lists())
