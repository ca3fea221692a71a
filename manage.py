#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # No SECRET_KEY means a development machine: development defaults, so that a fresh
    # checkout's `python manage.py …` works. The WSGI and ASGI entry points do not do
    # this: a server started without a SECRET_KEY still stops at once.
    if not os.environ.get("SECRET_KEY"):
        os.environ.setdefault("DEBUG", "1")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
