"""Accounts: login throttling, password rules, and a production configuration that passes
`check --deploy`."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.cache import cache
from django.core.exceptions import ValidationError

from tests.conftest import DEMO_PASSWORD, PASSWORD

WAIT = "Too many failed logins for this account or from this address. Wait 15 minutes"


@pytest.fixture(autouse=True)
def no_failures_yet():
    cache.clear()
    yield
    cache.clear()


def log_in(client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(
        "/login/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


def test_a_member_logs_in_after_a_few_failures(client, reviewer):
    for _ in range(4):
        assert log_in(client, "alice", "wrong").status_code == 200
    assert log_in(client, "alice", PASSWORD).status_code == 302


def test_after_five_failures_even_the_right_password_must_wait(client, reviewer):
    for _ in range(5):
        assert WAIT not in log_in(client, "alice", "wrong").text
    response = log_in(client, "alice", PASSWORD, address="10.0.0.2")
    assert response.status_code == 200
    assert WAIT in response.text
    assert "_auth_user_id" not in client.session


def test_the_username_count_ignores_case(client, reviewer):
    for _ in range(5):
        log_in(client, "ALICE", "wrong", address=f"10.0.1.{_}")
    assert WAIT in log_in(client, "alice", PASSWORD, address="10.0.0.9").text


def test_after_five_failures_from_one_address_every_account_must_wait(
    client, reviewer, second_reviewer
):
    for name in ("x1", "x2", "x3", "x4", "x5"):
        log_in(client, name, "guess")
    assert WAIT in log_in(client, "bob", PASSWORD).text
    assert log_in(client, "bob", PASSWORD, address="10.0.0.3").status_code == 302


def test_the_wait_ends_with_the_window(client, reviewer, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    for _ in range(2):
        log_in(client, "alice", "wrong")
    assert "Wait" in log_in(client, "alice", PASSWORD).text
    cache.clear()  # what the end of LOGIN_FAILURE_WINDOW_SECONDS does
    assert log_in(client, "alice", PASSWORD).status_code == 302


@pytest.mark.parametrize("password", ["password123", "qwertyuiop", "12345678901234", "31415926"])
def test_common_and_all_numeric_passwords_are_refused(password):
    with pytest.raises(ValidationError):
        validate_password(password)


@pytest.mark.parametrize("password", [PASSWORD, DEMO_PASSWORD])
def test_the_test_and_demo_passwords_are_accepted(password):
    validate_password(password)


def production_env(**changes: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTEST_VERSION", "DATABASE_URL"} and not key.startswith("SECURE_")
    }
    return env | {
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "review.example.org",
        **changes,
    }


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_check_deploy_finds_nothing_in_a_production_environment():
    done = check_deploy(production_env())
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "System check identified no issues (1 silenced).\n"


def test_each_https_setting_can_be_switched_off_for_plain_http(settings):
    done = check_deploy(
        production_env(SECURE_COOKIES="0", SECURE_SSL_REDIRECT="0", SECURE_HSTS_SECONDS="0")
    )
    assert done.returncode == 1
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in done.stderr


def test_the_admin_login_counts_the_same_failures(client, django_user_model):
    django_user_model.objects.create_user("staff", password=PASSWORD, is_staff=True)
    for _ in range(5):
        log_in(client, "staff", "wrong")
    response = client.post(
        "/admin/login/", {"username": "staff", "password": PASSWORD}, REMOTE_ADDR="10.0.0.7"
    )
    assert response.status_code == 200
    assert WAIT in response.text
