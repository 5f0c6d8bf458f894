"""Warm timing shared by the in-process benchmark scripts (``cv.py``,
``multi_output.py``): one call that compiles, then the median of several."""

from __future__ import annotations

import statistics
import time


def timed(fn, repeats):
    """``(median wall seconds of repeats warm calls, the last call's result)``."""
    out = fn()
    wall = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        wall.append(time.perf_counter() - t)
    return statistics.median(wall), out
