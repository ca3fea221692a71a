from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from api.models import ApiToken
from api.selectors import valid_token
from api.services import token_create, token_revoke, token_used
from api.tokens import TOKEN, digest_of, token_from_header


def test_a_token_is_stored_only_as_its_hash_and_prefix(reviewer):
    row, token = token_create(user=reviewer, name="nightly CI")
    assert TOKEN.fullmatch(token)
    stored = ApiToken.objects.filter(pk=row.pk).values().get()
    assert token not in {str(value) for value in stored.values()}
    assert stored["digest"] == digest_of(token)
    assert token.startswith(f"evr_{stored['prefix']}_")


def test_two_tokens_of_a_user_differ(reviewer):
    assert token_create(user=reviewer, name="")[1] != token_create(user=reviewer, name="")[1]


def test_a_token_finds_its_user(reviewer):
    _row, token = token_create(user=reviewer, name="")
    assert valid_token(token=token).user == reviewer


def test_a_token_with_a_known_prefix_and_another_secret_is_refused(reviewer):
    _row, token = token_create(user=reviewer, name="")
    forged = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert valid_token(token=forged) is None


def test_a_revoked_token_is_refused(reviewer):
    row, token = token_create(user=reviewer, name="")
    token_revoke(token=row)
    assert valid_token(token=token) is None
    assert ApiToken.objects.get(pk=row.pk).revoked_at is not None


def test_the_token_of_a_deactivated_user_is_refused(reviewer):
    _row, token = token_create(user=reviewer, name="")
    reviewer.is_active = False
    reviewer.save()
    assert valid_token(token=token) is None


def test_a_name_longer_than_the_column_is_refused(reviewer):
    with pytest.raises(ValidationError, match="at most 100"):
        token_create(user=reviewer, name="x" * 101)


def test_the_last_use_is_written_at_most_once_a_minute(reviewer, django_assert_num_queries):
    row, _token = token_create(user=reviewer, name="")
    with django_assert_num_queries(1):
        token_used(token=row)
    first = ApiToken.objects.get(pk=row.pk).last_used_at
    assert first is not None
    with django_assert_num_queries(0):
        token_used(token=row)
    row.last_used_at = first - timedelta(minutes=2)
    with django_assert_num_queries(1):
        token_used(token=row)


@pytest.mark.parametrize(
    "header",
    ["Basic dXNlcjpwYXNz", "Bearer", "Bearer evr_zzzzzzzz_" + "a" * 43, "Bearer a b", "evr_x"],
)
def test_a_header_without_a_token_of_the_right_shape_gives_none(header):
    assert token_from_header(header) is None


def test_the_scheme_is_read_whatever_its_case():
    token = "evr_0123abcd_" + "a" * 43
    assert token_from_header(f"bearer {token}") == token


def test_the_command_prints_a_token_that_works(reviewer):
    out = io.StringIO()
    call_command("api_token", "alice", stdout=out)
    token = out.getvalue().strip()
    assert valid_token(token=token).user == reviewer
    assert ApiToken.objects.get(user=reviewer).name == "command line"


def test_the_command_revokes_every_token_of_the_user(reviewer, second_reviewer):
    mine = [token_create(user=reviewer, name="")[1] for _ in range(2)]
    _row, bobs = token_create(user=second_reviewer, name="")
    out = io.StringIO()
    call_command("api_token", "alice", "--revoke", stdout=out)
    assert "2 token(s) of alice revoked" in out.getvalue()
    assert [valid_token(token=t) for t in mine] == [None, None]
    assert valid_token(token=bobs) is not None


def test_the_command_names_an_unknown_user(db):
    with pytest.raises(CommandError, match="no user 'nobody'") as raised:
        call_command("api_token", "nobody")
    assert raised.value.returncode == 1
