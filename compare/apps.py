from __future__ import annotations

from django.apps import AppConfig


class CompareConfig(AppConfig):
    name = "compare"
    verbose_name = "Replay comparison"
