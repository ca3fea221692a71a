"""/healthz answers a probe: the database reachable and every migration applied; /livez
only that the process answers."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.db.migrations.executor import MigrationExecutor

from config import health


@pytest.fixture(autouse=True)
def unknown_migrations(monkeypatch):
    monkeypatch.setattr(health, "_migrated", False)


def test_it_says_ok_to_anyone_when_the_database_is_migrated(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_it_answers_503_while_migrations_are_pending(client, db, monkeypatch):
    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [1, 2])
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "migrations pending", "pending": 2}


def test_it_answers_503_when_the_database_does_not(client, db, monkeypatch):
    def refuse(*args, **kwargs):
        raise OperationalError("connection refused")

    with monkeypatch.context() as patched:  # undone before the test's rollback
        patched.setattr("django.db.backends.utils.CursorWrapper.execute", refuse)
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "database unreachable"}


def test_it_reads_the_migrations_once_they_are_all_applied(client, db, monkeypatch):
    assert client.get("/healthz").status_code == 200
    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [1])
    assert client.get("/healthz").status_code == 200


def test_it_is_exempt_from_the_https_redirect(client, db, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz").status_code == 200
    assert client.get("/login/").status_code == 301


def test_livez_answers_without_the_database(client, db, monkeypatch, django_assert_num_queries):
    def refuse(*args, **kwargs):
        raise OperationalError("connection refused")

    with monkeypatch.context() as patched, django_assert_num_queries(0):
        patched.setattr("django.db.backends.utils.CursorWrapper.execute", refuse)
        response = client.get("/livez")
    assert response.status_code == 200
    assert response.json() == {"status": "alive"}
    assert "no-cache" in response["Cache-Control"]


def test_livez_is_exempt_from_the_https_redirect(client, db, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/livez").status_code == 200
