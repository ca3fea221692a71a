"""Management commands for the browser tests' server database, in one process.

Each test imports its own copy of a bundle into the server's database. A
`manage.py` subprocess per command spends most of its time starting Django; this
worker starts it once and runs the commands it reads on stdin, one JSON list of
arguments a line, answering one JSON object a line: the exit code and what the
command printed. Run by tests/browser/conftest.py with the server's environment.
"""

from __future__ import annotations

import io
import json
import os
import sys
import traceback


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.management import CommandError, call_command
    from django.db import connections

    django.setup()
    for line in sys.stdin:
        out, err, code = io.StringIO(), io.StringIO(), 0
        try:
            call_command(*json.loads(line), stdout=out, stderr=err)
        except CommandError as error:
            err.write(f"CommandError: {error}\n")
            code = 1
        except Exception:  # noqa: BLE001 - reported to the test, which fails on it
            err.write(traceback.format_exc())
            code = 1
        finally:
            # Hold no SQLite lock (nor PostgreSQL session) while the server works.
            connections.close_all()
        answer = {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
