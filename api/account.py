"""The account page: the user's API tokens, made (shown once) and revoked."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from api.models import ApiToken
from api.selectors import token_of_user, tokens_for_user
from api.services import token_create, token_revoke
from evidence.http import HtmxHttpRequest


@require_GET
def account(request: HtmxHttpRequest) -> HttpResponse:
    return _page(request)


@require_POST
def token_add(request: HtmxHttpRequest) -> HttpResponse:
    """Make a token and show it in this answer only: it is not kept, in the session or anywhere."""
    try:
        row, token = token_create(user=request.user, name=request.POST.get("name", ""))
    except ValidationError as exc:
        return _page(request, error=" ".join(exc.messages), status=400)
    response = _page(request, new=row, token=token)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def token_remove(request: HtmxHttpRequest, prefix: str) -> HttpResponse:
    token = token_of_user(user=request.user, prefix=prefix)
    messages.success(request, token_revoke(token=token))
    if request.htmx:
        return _page(request)
    return redirect("account")


def _page(
    request: HtmxHttpRequest,
    *,
    new: ApiToken | None = None,
    token: str = "",
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    context = {
        "tokens": list(tokens_for_user(user=request.user)),
        "new": new,
        "token": token,
        "error": error,
        "partial_messages": bool(request.htmx),
    }
    template = "api/account.html#tokens" if request.htmx else "api/account.html"
    return render(request, template, context, status=status)
