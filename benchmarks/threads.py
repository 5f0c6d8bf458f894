"""How many cores a fit uses: ``train(n_jobs=...)`` (issue 31, item 1).

Fits a logistic model on 200,000 x 20 rows (depth 6, 30 rounds) in a fresh process per
setting, twice (the first compiles); for the second (warm) fit it prints the wall
seconds, the process's CPU seconds (every thread's) and their ratio, the cores the fit
kept busy on average. XGBoost's ``nthread`` runs beside it for comparison.

Usage::

    python benchmarks/threads.py

Prints the table and writes ``benchmarks/results/threads-<timestamp>.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

WORKER = r"""
import sys, time
import numpy as np
lib, jobs = sys.argv[1], sys.argv[2]
jobs = None if jobs == "all" else int(jobs)
rng = np.random.default_rng(0)
X = rng.normal(size=(200_000, 20)).astype(np.float32)
y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=200_000) > 0).astype(np.float32)
if lib == "jaxboost":
    import jaxboost
    def fit():
        jaxboost.train("logistic", X, y, n_rounds=30, max_depth=6, n_jobs=jobs,
                       verbose=False)
else:
    import xgboost as xgb
    def fit():
        xgb.train(dict(objective="binary:logistic", max_depth=6, tree_method="hist",
                       nthread=jobs or 0), xgb.DMatrix(X, label=y), 30)
fit()
w0, c0 = time.perf_counter(), time.process_time()
fit()
wall, cpu = time.perf_counter() - w0, time.process_time() - c0
print(wall, cpu)
"""


def main():
    rows = []
    for lib in ("jaxboost", "xgboost"):
        for jobs in ("1", "all"):
            r = subprocess.run(
                [sys.executable, "-c", WORKER, lib, jobs],
                capture_output=True,
                text=True,
                check=True,
            )
            wall, cpu = map(float, r.stdout.split()[-2:])
            rows.append(dict(lib=lib, n_jobs=jobs, wall_s=wall, cpu_s=cpu, cores=cpu / wall))
    print(f"cores available: {len(os.sched_getaffinity(0))}")
    print(f"{'library':<9} {'n_jobs':>6} {'wall s':>7} {'CPU s':>7} {'CPU/wall':>9}")
    for r in rows:
        print(
            f"{r['lib']:<9} {r['n_jobs']:>6} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} {r['cores']:9.2f}"
        )
    path = os.path.join(
        os.path.dirname(__file__), "results", f"threads-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    with open(path, "w") as f:
        json.dump({"command": "python benchmarks/threads.py", "rows": rows}, f, indent=1)
    print(path)


if __name__ == "__main__":
    main()
