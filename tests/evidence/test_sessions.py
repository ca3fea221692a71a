"""evidence.sessions and evidence.auth.UserBackend: the session and the user of each request
read as SQL keep the server's word: deleted, expired, deactivated or with another password is
logged out at once."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.sessions.models import Session
from django.utils import timezone

from evidence.auth import UserBackend
from evidence.sessions import SessionStore


def test_the_site_keeps_its_sessions_with_this_engine():
    assert settings.SESSION_ENGINE == "evidence.sessions"


def test_a_logged_in_member_stays_logged_in(client, reviewer):
    client.force_login(reviewer)
    assert client.get("/").status_code == 200


def test_a_session_deleted_on_the_server_is_logged_out_at_once(client, reviewer):
    client.force_login(reviewer)
    Session.objects.all().delete()
    assert client.get("/").status_code == 302  # to the login page


def test_an_expired_session_is_logged_out(client, reviewer):
    client.force_login(reviewer)
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    assert client.get("/").status_code == 302


def test_it_reads_what_djangos_own_engine_wrote(db):
    store = SessionStore()
    store["answer"] = 42
    store.save()
    again = SessionStore(store.session_key)
    assert again["answer"] == 42
    assert SessionStore("no-such-session-key").load() == {}


def test_the_logged_in_user_is_read_as_djangos_own_backend_reads_them(client, reviewer):
    assert settings.AUTHENTICATION_BACKENDS == ["evidence.auth.UserBackend"]
    backend = UserBackend()
    user = backend.get_user(reviewer.pk)
    assert (user.pk, user.username, user.password) == (reviewer.pk, "alice", reviewer.password)
    assert backend.get_user(str(reviewer.pk)) == user  # as the session stores it
    assert backend.get_user(10**9) is None
    reviewer.is_active = False
    reviewer.save()
    assert backend.get_user(reviewer.pk) is None


def test_a_password_changed_elsewhere_logs_the_session_out(client, reviewer):
    client.force_login(reviewer)
    reviewer.set_password("another horse battery staple")
    reviewer.save()
    assert client.get("/").status_code == 302
