"""Settings for the review benchmark: the project's own, plus the floor page's URL.

Only two things differ from `config.settings`: the URLconf (the project's
URLs plus one floor view) and STATIC_ROOT, which the benchmark points at a
temporary directory so `collectstatic` for the manifest storage (DEBUG=0)
writes nothing into the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor"
if os.environ.get("BENCH_STATIC_ROOT"):
    STATIC_ROOT = Path(os.environ["BENCH_STATIC_ROOT"])
