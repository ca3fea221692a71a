"""Tokens for the personas, and a client that sends one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from api.services import token_create


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def token_of() -> Callable:
    """A new token of `user`, as the account page would show it."""

    def make(user) -> str:
        return token_create(user=user, name="tests")[1]

    return make


@pytest.fixture
def api_as(token_of) -> Callable:
    """A client whose every request carries a new token of `user`: `api_as(lead).get(…)`."""

    def make(user) -> Client:
        return Client(headers=bearer(token_of(user)))

    return make
