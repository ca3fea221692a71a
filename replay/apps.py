from __future__ import annotations

from django.apps import AppConfig


class ReplayConfig(AppConfig):
    name = "replay"
