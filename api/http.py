"""How an API request is answered: its token, its method, and every error as JSON.

The API reads who is asking from `Authorization: Bearer …` and from nothing else: a
session cookie is ignored, so a page on another site cannot make a logged-in browser act
through the API (there is no cookie to ride on). That is why an API view may be exempt
from CSRF, and it is exempt only through this decorator, after a token was checked
(docs/security.md, "The API").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from api.openapi import document
from api.selectors import valid_token
from api.services import token_used
from api.tokens import token_from_header

NO_TOKEN = "Send an API token: Authorization: Bearer evr_… (made on your account page)."
BAD_TOKEN = "This API token is not valid: it was revoked, or never issued."


def json_answer(data: dict, status: int = 200) -> JsonResponse:
    return JsonResponse(data, status=status, json_dumps_params={"ensure_ascii": False})


def json_error(status: int, message: str) -> JsonResponse:
    response = JsonResponse({"error": message}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


UNKNOWN_PARAMETER = (
    "Unknown query parameter: {}. The document (/api/openapi.json) lists each operation's."
)


@functools.cache
def _query_names(route: str, method: str) -> frozenset[str]:
    path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route).removeprefix("api/")
    operation = document()["paths"].get(path, {}).get(method.lower(), {})
    return frozenset(p["name"] for p in operation.get("parameters", []) if p["in"] == "query")


def documented_query(request: HttpRequest) -> frozenset[str]:
    """The query parameters the document gives this request's operation: any other is a
    400, so a misspelt `formt=alce` is not silently the default."""
    match = request.resolver_match
    if match is None:
        return frozenset()
    return _query_names(match.route, request.method or "GET")


class ApiError(Exception):
    """A refusal with its own status, answered as `{"error": message}` (413, 415, 503 …)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


View = Callable[..., HttpResponse]


def api_view(*methods: str) -> Callable[[View], View]:
    """An operation of the API: `methods` only, a valid token's user as `request.user`,
    errors as JSON.

    405 for another method, 401 without a valid token, then the view's own checks: 404 for
    an outsider, 403 for a member without the role, as on the pages (evidence.access).
    """

    def decorate(view: View) -> View:
        @csrf_exempt
        @login_not_required
        @functools.wraps(view)
        def answer(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method not in methods:
                allowed = " or ".join(methods)
                response = json_error(405, f"{request.method} is not allowed here; use {allowed}.")
                response["Allow"] = ", ".join(methods)
                return response
            header = request.headers.get("Authorization")
            if not header:
                return json_error(401, NO_TOKEN)
            raw = token_from_header(header)
            token = valid_token(token=raw) if raw else None
            if token is None:
                return json_error(401, BAD_TOKEN)
            token_used(token=token)
            request.user = token.user
            unknown = sorted(set(request.GET) - documented_query(request))
            if unknown:
                return json_error(400, UNKNOWN_PARAMETER.format(", ".join(unknown)))
            try:
                response = view(request, *args, **kwargs)
            except Http404 as exc:
                return json_error(404, str(exc) or "Not found.")
            except PermissionDenied as exc:
                return json_error(403, str(exc) or "Forbidden.")
            except BadRequest as exc:
                return json_error(400, str(exc) or "Bad request.")
            except ApiError as exc:
                return json_error(exc.status, str(exc))
            # What one user may read: never kept by a shared cache, nor by the client.
            response["Cache-Control"] = "no-store"
            return response

        return answer

    return decorate


api_get = api_view("GET")  # a read
api_post = api_view("POST")  # a write: it queues a job


def body_upload(request: HttpRequest, *, name: str, limit: int) -> UploadedFile:
    """The request's body as a file named `name`, to a temporary file (as the upload page's
    handler writes one); 413 past `limit` bytes, before reading any when Content-Length says so.

    Read from the stream, never through `request.body`, which would hold it all in memory
    (and refuses anything past DATA_UPLOAD_MAX_MEMORY_SIZE).
    """
    too_large = ApiError(
        413,
        f"The body is larger than {limit:,} bytes; uploads are limited to {limit:,} bytes "
        "(BUNDLE_UPLOAD_MAX_BYTES). Use `manage.py import_bundle` for larger bundles.",
    )
    length = request.META.get("CONTENT_LENGTH")
    if not length and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        # A chunked body: the WSGI server would hand Django none of it, and the import
        # would fail as empty, which says nothing of the cause.
        raise ApiError(411, "Send the body with its Content-Length (curl --data-binary does).")
    # Neither a length nor chunks: HTTP's empty body, which the import job refuses as empty.
    length = length or "0"
    try:
        declared = int(length)
    except ValueError:
        raise BadRequest("Content-Length is not a number.") from None
    if declared > limit:
        raise too_large
    upload = TemporaryUploadedFile(name, request.content_type, 0, None)
    received = 0
    while chunk := request.read(UPLOAD_CHUNK_BYTES):
        received += len(chunk)
        if received > limit:
            upload.close()
            raise too_large
        upload.write(chunk)
    upload.size = received
    upload.seek(0)
    return upload


UPLOAD_CHUNK_BYTES = 1024 * 1024


def error_view(status: int, fallback: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Django's error page for `status`, as JSON under /api/ (config.urls' handlers).

    Errors raised before an API view runs: a path no URL matches, a NUL refused by
    evidence.middleware, an exception nobody caught.
    """

    def handler(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.path_info.startswith("/api/"):
            return json_error(status, _MESSAGES[status])
        return fallback(request, *args, **kwargs)

    return handler


_MESSAGES = {
    400: "Bad request.",
    403: "Forbidden.",
    404: "Not found.",
    500: "Server error.",
}
