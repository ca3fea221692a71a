"""gunicorn's settings for the review benchmark beyond its command line (`-c` this file).

The GIL's switch interval, in milliseconds from $REVIEW_BENCH_SWITCH_INTERVAL (Python's
default is 5). A threaded worker's thread that waited on PostgreSQL waits up to that long
again for the GIL while another thread renders a page; a save does so after each of the
statements it runs holding its claim's lock, so every save on that claim waits too. At
0.5 ms, under the same load, 8 clients on one claim made 84–89 saves/s instead of
59–74, and the floor save 187–205 instead of 107–129.
"""

from __future__ import annotations

import gc
import os
import sys


def post_worker_init(worker) -> None:
    interval = os.environ.get("REVIEW_BENCH_SWITCH_INTERVAL")
    if interval:
        sys.setswitchinterval(float(interval) / 1000)
    gc.freeze()  # as config/gunicorn.py: what the worker loaded to start is never collected
