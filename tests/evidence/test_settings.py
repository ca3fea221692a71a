from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings import database_from_url, env_bool, env_int


def test_an_unset_database_url_means_the_embedded_sqlite_file():
    database = database_from_url(None)
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert str(database["NAME"]).endswith("var/evidence.sqlite3")


def test_a_postgres_url_gives_persistent_connections():
    database = database_from_url("postgres://ev:s%40cret@db.example:6543/evidence?sslmode=require")
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["USER"], database["PASSWORD"]) == ("ev", "s@cret")
    assert (database["HOST"], database["PORT"], database["NAME"]) == (
        "db.example",
        "6543",
        "evidence",
    )
    assert database["OPTIONS"] == {"sslmode": "require"}
    assert database["CONN_MAX_AGE"] > 0
    assert database["CONN_HEALTH_CHECKS"] is True


@pytest.mark.parametrize(
    "url", ["mysql://x@y/z", "postgres://x@y", "postgres://x@y:notaport/z", "sqlite://"]
)
def test_a_bad_database_url_fails_loudly(url):
    with pytest.raises(ImproperlyConfigured):
        database_from_url(url)


def test_booleans_and_integers_fail_loudly_on_nonsense(monkeypatch):
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        env_bool("X_FLAG", False)
    monkeypatch.setenv("X_FLAG", "off")
    assert env_bool("X_FLAG", True) is False
    monkeypatch.setenv("X_NUM", "12a")
    with pytest.raises(ImproperlyConfigured, match="X_NUM"):
        env_int("X_NUM", 1)
