"""What the in-process benchmark scripts share (``cv.py``, ``multi_output.py``,
``everyday_more.py``, ``wide_bins.py``, ``concordance.py``): warm timing, and the JSON
file of a run's figures."""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def timed(fn, repeats, warm=True):
    """``(median wall seconds of repeats calls, the last call's result)``, after one
    call that compiles unless not ``warm``."""
    out = fn() if warm else None
    wall = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        wall.append(time.perf_counter() - t)
    return statistics.median(wall), out


def write_results(prefix, args, rows, **extra):
    """Write ``results/<prefix>-<timestamp>.json`` (or ``args.out``): the time, the
    script's settings, the machine, ``extra`` and ``rows``; print and return its path."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = getattr(args, "out", None) or os.path.join(RESULTS, f"{prefix}-{stamp}.json")
    doc = dict(created=stamp, settings=vars(args), machine=platform.platform(), **extra)
    with open(out, "w") as f:
        json.dump(dict(doc, rows=rows), f, indent=1)
    print(f"\nraw figures: {out}")
    return out
