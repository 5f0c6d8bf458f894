"""The base-margin fit: what a first ``train`` call waits for before its first tree.

``train`` starts from the constant margin that minimises the loss
(``jaxboost.engine.autodiff.fit_base_margin``): Newton steps, then a bracket and a
bisection. Each workload runs in a fresh process with the compilation cache off
(``JAXBOOST_COMPILATION_CACHE=0``): ``first s`` is its first call (trace, compile,
run), ``run ms`` the median of 3 calls after it. The losses: logistic and absolute
error (the catalogue's), the catalogue's ``aft`` on intervals, and a log-normal
interval likelihood written as a loss of one's own (``examples/interval_censored.py``'s
``interval_nll``, norm.logcdf of both ends; its data without events, which that loss
does not take). Each process is ``_process.launch_measured``'s. Nothing is asserted;
prints a table and writes ``benchmarks/results/base-margin-<timestamp>.json``.

    python benchmarks/base_margin.py
    python benchmarks/base_margin.py --rows 2000,1000000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TAG = "@@MARGIN "
sys.path.insert(0, str(HERE))

from _process import launch_measured  # noqa: E402

WORKER = r"""
import json, sys, time, statistics
import numpy as np
import jax.numpy as jnp
sys.path.insert(0, {root!r})
sys.path.insert(0, {examples!r})
import objectives
from jaxboost.engine.autodiff import fit_base_margin

name, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
t = np.exp(rng.normal(size=n)).astype(np.float32)
kind = np.arange(n) % 4
lo = np.select([kind == 0, kind == 1, kind == 2], [t, 0.7 * t, 0 * t], 0.8 * t)
hi = np.select([kind == 0, kind == 1, kind == 2], [t, np.inf + t, 1.3 * t], 1.5 * t)
intervals = {{"lower": jnp.asarray(lo, jnp.float32), "upper": jnp.asarray(hi, jnp.float32)}}
if name == "logistic":
    loss, y = objectives.logistic, jnp.asarray((rng.random(n) < 0.3).astype(np.float32))
elif name == "absolute":
    loss, y = objectives.absolute, jnp.asarray(rng.normal(size=n).astype(np.float32))
elif name == "aft":
    loss, y = objectives.aft, intervals
else:  # the example's loss of one's own: intervals only (open at 0 and inf), no events
    from interval_censored import interval_nll
    import functools
    event = kind == 0
    lo, hi = np.where(event, 0.9 * t, lo), np.where(event, 1.1 * t, hi)
    y = {{"lower": jnp.asarray(lo, jnp.float32), "upper": jnp.asarray(hi, jnp.float32)}}
    loss = functools.partial(interval_nll, sigma=1.0)
t0 = time.perf_counter()
c = float(fit_base_margin(loss, y))
first = time.perf_counter() - t0
runs = []
for _ in range(3):
    t0 = time.perf_counter()
    float(fit_base_margin(loss, y))
    runs.append(time.perf_counter() - t0)
print({tag!r} + json.dumps(dict(margin=c, first_s=first, run_s=statistics.median(runs))))
"""


def measure(name: str, rows: int) -> dict:
    code = WORKER.format(root=str(ROOT), examples=str(ROOT / "examples"), tag=TAG)
    res = launch_measured([sys.executable, "-c", code, name, str(rows)], name, 1800, TAG)
    if "error" in res:
        raise RuntimeError(f"{name} on {rows} rows failed:\n{res['error']}")
    return {k: res[k] for k in ("margin", "first_s", "run_s")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="2000,1000000", help="comma-separated row counts")
    ap.add_argument(
        "--losses",
        default="logistic,absolute,aft,interval_nll",
        help="comma-separated: logistic, absolute, aft, interval_nll",
    )
    args = ap.parse_args()
    rows = [int(r) for r in args.rows.split(",")]
    results = []
    print(f"{'loss':14s} {'rows':>9s} {'first s':>8s} {'run ms':>9s}  margin")
    for n in rows:
        for name in args.losses.split(","):
            r = dict(loss=name, rows=n, **measure(name, n))
            results.append(r)
            print(
                f"{name:14s} {n:9d} {r['first_s']:8.3f} {1e3 * r['run_s']:9.1f}  {r['margin']:.7g}",
                flush=True,
            )
    out = HERE / "results" / f"base-margin-{time.strftime('%Y%m%d-%H%M%S')}.json"
    meta = dict(python=platform.python_version(), machine=platform.machine(), cpus=os.cpu_count())
    out.write_text(json.dumps(dict(meta=meta, results=results), indent=1))
    print(f"raw figures: {out}")


if __name__ == "__main__":
    main()
