"""Django's database sessions, the row read with one statement written as SQL.

Every request of a logged-in member reads its session: through the ORM, compiling that
`get` cost more CPU than running it. The same row, the same rule (the key, and not
expired), the same table and cookie: a session deleted on the server (logout, password
change, an admin) is refused at once, as with `django.contrib.sessions.backends.db`.
"""

from __future__ import annotations

from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.db import connections, router
from django.utils import timezone

from evidence.rows import prepared_cursor

SESSION = """
SELECT session_key, session_data, expire_date FROM django_session
 WHERE session_key = %s AND expire_date > %s
"""


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> Session | None:
        key = self.session_key  # None when the cookie held no valid key
        if key is not None:
            connection = connections[router.db_for_read(Session)]
            now = connection.ops.adapt_datetimefield_value(timezone.now())
            with prepared_cursor(connection.alias) as cursor:
                cursor.execute(SESSION, [key, now])
                row = cursor.fetchone()
            if row is not None:
                return Session(session_key=row[0], session_data=row[1], expire_date=row[2])
        self._session_key = None
        return None
