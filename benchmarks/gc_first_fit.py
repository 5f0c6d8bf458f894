"""How much of a first fit is Python's garbage collector, with and without ``gc.freeze()``.

A notebook imports pandas and scikit-learn before it trains; tracing the round program
then allocates many short-lived objects, the collector runs, and its full (oldest
generation) collection walks every object those imports made. This script trains a
100-tree random forest on sklearn's digits (softmax, depth 6, row and column sampling)
in fresh processes (jaxboost's persistent cache off: every fit compiles), alternating
two modes:

* ``plain``: the imports, then the fit;
* ``freeze``: the imports, ``gc.freeze()``, then the fit.

Each process reports the fit's wall time, the seconds spent in collections during it
(``gc.callbacks``) and how many of each generation ran, then a "next step" a user might
take (predict, a pandas summary, 200,000 small dicts) and the collections during that
(disabling the collector around the fit only moves its full collection there).
Medians over ``--repeats`` processes per mode are printed; nothing is asserted or
written.

    python benchmarks/gc_first_fit.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKER = r"""
import gc, json, sys, time
import numpy as np, pandas, sklearn.model_selection, jax, jaxboost
from sklearn.datasets import load_digits
if sys.argv[1] == "freeze":
    gc.freeze()
X, y = load_digits(return_X_y=True)
kw = dict(n_rounds=1, num_parallel_tree=100, subsample=0.8, colsample_bynode=0.8,
          learning_rate=1.0, reg_lambda=1e-5, max_depth=6, verbose=False, seed=0)
counts, spent, began = [0, 0, 0], [0.0], [0.0]
def watch(phase, info):
    if phase == "start":
        counts[info["generation"]] += 1
        began[0] = time.perf_counter()
    else:
        spent[0] += time.perf_counter() - began[0]
gc.callbacks.append(watch)
t = time.perf_counter()
bst = jaxboost.train("softmax", X, y, **kw)
jax.block_until_ready(bst.trees)
fit, fit_gc, fit_counts = time.perf_counter() - t, spent[0], list(counts)
t = time.perf_counter()
bst.predict(X); pandas.DataFrame(X).describe(); [dict(a=i) for i in range(200_000)]
print(json.dumps(dict(fit_s=fit, fit_gc_s=fit_gc, fit_collections=fit_counts,
                      next_s=time.perf_counter() - t, next_gc_s=spent[0] - fit_gc,
                      next_collections=[a - b for a, b in zip(counts, fit_counts)])))
"""


def run(mode: str) -> dict:
    env = dict(os.environ, JAXBOOST_COMPILATION_CACHE="0")
    env.setdefault("JAX_PLATFORMS", "cpu")
    out = subprocess.run(
        [sys.executable, "-c", WORKER, mode], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per mode")
    args = ap.parse_args(argv)
    got = {"plain": [], "freeze": []}
    for _ in range(args.repeats):
        for mode in got:
            got[mode].append(run(mode))
    print("mode     fit s  gc in fit s  collections (gen 0/1/2)  next step s  gc in next s")
    for mode, runs in got.items():

        def med(key, runs=runs):
            return statistics.median(r[key] for r in runs)

        c = runs[0]["fit_collections"]
        counts = f"{c[0]:>6d} / {c[1]} / {c[2]}"
        print(
            f"{mode:7s} {med('fit_s'):6.3f} {med('fit_gc_s'):12.3f}  {counts:<23s}"
            f"{med('next_s'):11.3f} {med('next_gc_s'):13.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
