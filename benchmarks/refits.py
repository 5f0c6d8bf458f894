"""Repeated fits in one process: peak memory, CPU and page faults per fit, with glibc's
default ``malloc`` and with a fixed mmap threshold.

A notebook fits the same large data again and again in one process. glibc's ``malloc``
raises its mmap threshold (up to 32 MiB) each time a large block is freed, so later
blocks of a few MB come from its heap, which it keeps; from one fit to the next the heap
grows in pieces it cannot hand back. ``MALLOC_MMAP_THRESHOLD_=1048576`` (set before
Python starts) fixes the threshold at 1 MiB: larger blocks are mapped and unmapped
each time, so the heap stays small, at the price of page faults for every block
allocated afresh. This script measures both, for jaxboost and XGBoost ``hist``.

Each (library, allocator) runs in its own fresh process: W1's data (``run.py``'s cache,
1,000,000 x 28 float32, logistic), ``--fits`` fits of 100 rounds, depth 6, 256 bins,
the previous model dropped before the next fit. Per fit: wall and CPU seconds (user,
system) and minor page faults; per process: peak resident memory (``VmHWM``).

Usage::

    python benchmarks/refits.py                    # 3 fits, both allocators, both libraries
    python benchmarks/refits.py --rows 200000 --fits 2

Prints a table and writes ``benchmarks/results/refits-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import dataset_spec, ensure_dataset, machine_info  # noqa: E402

MMAP_THRESHOLD = 1 << 20

WORKER = r"""
import gc, json, resource, sys, time
sys.path.insert(0, sys.argv[4])
import numpy as np
import run
lib, spec, fits = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
X, y, _, _ = run.load_dataset(spec)
if lib == "jaxboost":
    import jax
    import jaxboost

    def fit():
        bst = jaxboost.train("logistic", X, y, n_rounds=100, max_bin=run.MAX_BIN,
                             max_depth=run.MAX_DEPTH, learning_rate=run.LEARNING_RATE,
                             reg_lambda=run.REG_LAMBDA, min_child_weight=run.MIN_CHILD_WEIGHT,
                             verbose=False)
        jax.block_until_ready(bst.trees)
        return bst
else:
    import xgboost as xgb

    def fit():
        d = xgb.QuantileDMatrix(X, y, max_bin=run.MAX_BIN)
        p = run.xgboost_params(objective="binary:logistic")
        return xgb.train(p, d, num_boost_round=100)

out = []
for _ in range(fits):
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    model = fit()
    r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    out.append(dict(wall_s=t1 - t0, user_s=r1.ru_utime - r0.ru_utime,
                    sys_s=r1.ru_stime - r0.ru_stime, minor_faults=r1.ru_minflt - r0.ru_minflt))
    del model
    gc.collect()
print(json.dumps(dict(fits=out, peak_mib=run.peak_rss_mib())))
"""


def run_case(lib: str, spec: dict, fits: int, fixed: bool) -> dict:
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["JAXBOOST_COMPILATION_CACHE"] = "0"
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    if fixed:
        env["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    bench = str(Path(__file__).resolve().parent)
    res = subprocess.run(
        [sys.executable, "-c", WORKER, lib, json.dumps(spec), str(fits), bench],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise SystemExit(f"{lib} worker failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--fits", type=int, default=3)
    ap.add_argument("--libs", default="jaxboost,xgboost")
    args = ap.parse_args(argv)
    spec = dataset_spec("W1", args.rows)
    ensure_dataset(spec["gen"])  # generated once, cached for every worker
    rows = []
    for lib in args.libs.split(","):
        for fixed in (False, True):
            r = run_case(lib, spec, args.fits, fixed)
            r.update(lib=lib, malloc="mmap 1 MiB" if fixed else "default")
            rows.append(r)
    print(f"{'library':9s} {'malloc':11s} {'peak MiB':>8s}  per fit: wall / user / sys s, faults")
    for r in rows:
        fits = "  ".join(
            f"{f['wall_s']:.2f}/{f['user_s']:.2f}/{f['sys_s']:.2f}/{f['minor_faults'] // 1000}k"
            for f in r["fits"]
        )
        print(f"{r['lib']:9s} {r['malloc']:11s} {r['peak_mib']:8.0f}  {fits}")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = ROOT / "benchmarks" / "results" / f"refits-{stamp}.json"
    out.write_text(
        json.dumps(
            dict(
                created=stamp,
                command=["python", "benchmarks/refits.py"] + (argv or sys.argv[1:]),
                machine=machine_info(),
                rows=args.rows,
                results=rows,
            ),
            indent=1,
        )
    )
    print(f"raw figures: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
