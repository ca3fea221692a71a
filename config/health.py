"""/healthz and /livez: whether this process can serve (readiness, for a load balancer) and
whether it answers at all (liveness, for a supervisor)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

# Once every migration is applied it stays so for the life of this process (a deploy that
# brings new ones starts new processes): reading the migration files again on every probe
# would cost more than the probe's SELECT.
_migrated = False


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers and every migration is applied, else 503 saying which."""
    global _migrated
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        if not _migrated:
            executor = MigrationExecutor(connection)
            pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
            if pending:
                return JsonResponse(
                    {"status": "migrations pending", "pending": len(pending)}, status=503
                )
            _migrated = True
    except DatabaseError:
        return JsonResponse({"status": "database unreachable"}, status=503)
    return JsonResponse({"status": "ok"})


@login_not_required
@never_cache
@require_GET
def livez(request: HttpRequest) -> JsonResponse:
    """200 while the process answers, whatever the database: a supervisor that restarted
    every app server when PostgreSQL was away would only add restarts to the outage."""
    return JsonResponse({"status": "alive"})
