from __future__ import annotations

from django.apps import AppConfig


class EvidenceConfig(AppConfig):
    name = "evidence"
