"""Memory at rest after a scikit-learn fit: jaxboost against XGBoost and LightGBM
(issue 31, item 5), and what the runtimes alone hold.

Each case runs in its own fresh process: imports scikit-learn (as a notebook does),
then either only imports a library (``*-runtime``: for jaxboost, JAX's CPU client is
started too, as any fit does), or fits a classifier on 10,000 x 20 rows, 100 rounds,
depth 6, and drops its training data. The resident set (``VmRSS``) is read after
``gc.collect()``; the runtime rows show how much of a fit's figure is the library's
code and runtime rather than anything the fit keeps.

Usage::

    python benchmarks/memory_at_rest.py

Prints the table and writes ``benchmarks/results/memory-at-rest-<timestamp>.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

WORKER = r"""
import gc, sys
import numpy as np
import sklearn.datasets  # noqa: F401  (a notebook's usual imports)

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024

case = sys.argv[1]
lib, what = case.split("-")
if what == "runtime":
    if lib == "jaxboost":
        import jax.numpy as jnp
        import jaxboost.sklearn  # noqa: F401
        jnp.zeros(3).block_until_ready()
    elif lib == "xgboost":
        import xgboost  # noqa: F401
    else:
        import lightgbm  # noqa: F401
else:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10_000, 20)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=10_000) > 0).astype(np.int64)
    kw = dict(n_estimators=100, max_depth=6, learning_rate=0.3)
    if lib == "jaxboost":
        from jaxboost.sklearn import JaxBoostClassifier as C
    elif lib == "xgboost":
        from xgboost import XGBClassifier as C
        kw.update(tree_method="hist", n_jobs=2)
    else:
        from lightgbm import LGBMClassifier as C
        kw.update(n_jobs=2, verbose=-1, num_leaves=63)
    model = C(**kw).fit(X, y)
    del X, y
gc.collect()
print(rss())
"""

CASES = (
    "jaxboost-runtime",
    "xgboost-runtime",
    "lightgbm-runtime",
    "jaxboost-fit",
    "xgboost-fit",
    "lightgbm-fit",
)


def main():
    out = {}
    for case in CASES:
        r = subprocess.run(
            [sys.executable, "-c", WORKER, case], capture_output=True, text=True, check=True
        )
        out[case] = float(r.stdout.strip().splitlines()[-1])
    ref = out["xgboost-fit"]
    print(f"{'case':<18} {'RSS MiB':>8} {'/ XGBoost fit':>14}")
    for case, mib in out.items():
        print(f"{case:<18} {mib:8.0f} {mib / ref:14.2f}")
    kept = out["jaxboost-fit"] - out["jaxboost-runtime"]
    print(f"jaxboost: the fit keeps {kept:.0f} MiB beyond its runtime")
    path = os.path.join(
        os.path.dirname(__file__),
        "results",
        f"memory-at-rest-{time.strftime('%Y%m%d-%H%M%S')}.json",
    )
    with open(path, "w") as f:
        json.dump({"command": "python benchmarks/memory_at_rest.py", "rss_mib": out}, f, indent=1)
    print(path)


if __name__ == "__main__":
    main()
