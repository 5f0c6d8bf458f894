"""Prediction speed: jaxboost's native CPU kernel and its compiled XLA program against
XGBoost ``inplace_predict``, in one process.

Cases (models trained here first, depth 6, learning rate 0.1, 256 bins, 2 threads):

=============  ============================================================================
``w1``         logistic, 100 trees, trained on 200,000 x 28 ``make_classification`` rows,
               predicting 1,000,000 rows (W1's model size on W1's row count)
``digits``     10-class softmax, 100 rounds (1,000 trees) on sklearn's digits, predicting
               its 1,797 rows: the notebook case, where fixed costs dominate
``small``      logistic, 100 trees on breast cancer, ``predict`` of 143 rows (one fold's
               scoring in ``cross_val_score``)
``one_row``    the digits model predicting one row (a served model's latency)
``friedman1``  squared error, 100 trees on ``make_friedman1`` 200,000 x 10, predicting its
               200,000 rows (everyday.py's friedman1 row)
``sparse``     logistic, 100 trees on a CSR matrix of 20,000 x 5,000 word-presence
               columns (1 % stored), predicting 100,000 such rows (absent = missing;
               the compiled path is not run: it reads dense blocks)
=============  ============================================================================

For each case and path: **first** = the first ``predict`` of that model in this process
(for the XLA path: tracing and compiling included), **warm** = the median of
``--repeats`` (5) further calls. ``native`` is what ``Booster.predict`` runs on the CPU;
``xla`` is the same call with the native kernel switched off for prediction
(``jaxboost.engine.tree.predict_margin``, what runs on GPUs and TPUs); outputs of the
two are compared bit for bit (the models differ from XGBoost's, so its outputs are
not compared).

Usage::

    python benchmarks/predict.py                  # every case
    python benchmarks/predict.py --cases digits   # some

Prints a table and writes ``benchmarks/results/predict-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("JAXBOOST_COMPILATION_CACHE", "0")
os.environ.setdefault("JAXBOOST_NATIVE_THREADS", "2")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PARAMS = dict(max_depth=6, learning_rate=0.1, max_bin=256)


def data(case):
    from sklearn.datasets import (
        load_breast_cancer,
        load_digits,
        make_classification,
        make_friedman1,
    )

    if case == "w1":
        X, y = make_classification(1_200_000, 28, n_informative=20, random_state=0, flip_y=0.05)
        X = X.astype(np.float32)
        return "logistic", X[:200_000], y[:200_000], X[200_000:]
    if case in ("digits", "one_row"):
        X, y = load_digits(return_X_y=True)
        return "softmax", X, y, X if case == "digits" else X[:1]
    if case == "sparse":
        import scipy.sparse as sp

        rng = np.random.default_rng(0)
        X = sp.random(120_000, 5_000, density=0.01, format="csr", random_state=0)
        X.data[:] = 1.0
        X = X.astype(np.float32)
        w = rng.normal(size=5_000)
        y = (X @ w + 0.1 * rng.normal(size=X.shape[0]) > 0).astype(np.float32)
        return "logistic", X[:20_000], y[:20_000], X[20_000:]
    if case == "friedman1":
        X, y = make_friedman1(200_000, random_state=0)
        X = X.astype(np.float32)
        return "squared", X, y, X
    X, y = load_breast_cancer(return_X_y=True)
    return "logistic", X[:426], y[:426], X[426:]


def xgboost_params(objective: str, n_classes=None) -> dict:
    """XGBoost's ``hist`` parameters for ``PARAMS`` and a jaxboost objective name
    (2 threads; ``num_class`` for softmax)."""
    out = dict(
        max_depth=PARAMS["max_depth"],
        eta=PARAMS["learning_rate"],
        max_bin=PARAMS["max_bin"],
        tree_method="hist",
        nthread=2,
        objective={
            "softmax": "multi:softprob",
            "logistic": "binary:logistic",
            "squared": "reg:squarederror",
        }[objective],
    )
    if n_classes:
        out["num_class"] = int(n_classes)
    return out


def timed(fn, repeats):
    """``(fn(), seconds of that first call, median seconds of repeats more)``."""
    t = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t
    warm = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t)
    return out, first, statistics.median(warm)


def run_case(case, repeats):
    import xgboost as xgb

    import jaxboost
    from jaxboost.model import booster as booster_module

    objective, X, y, Xp = data(case)
    n_classes = int(y.max()) + 1 if objective == "softmax" else None
    bst = jaxboost.train(objective, X, y, n_rounds=100, verbose=False, **PARAMS)
    rows = {}
    out_native, first, warm = timed(lambda: bst.predict(Xp), repeats)
    rows["native"] = dict(first_s=first, warm_s=warm)
    out_xla = None
    if case != "sparse":
        enabled = booster_module.native_predict_enabled
        booster_module.native_predict_enabled = lambda: False
        try:
            out_xla, first, warm = timed(lambda: bst.predict(Xp), repeats)
        finally:
            booster_module.native_predict_enabled = enabled
        rows["xla"] = dict(first_s=first, warm_s=warm)
    xparams = xgboost_params(objective, n_classes)
    xb = xgb.train(xparams, xgb.QuantileDMatrix(X, y, max_bin=256), 100)
    out_xgb, first, warm = timed(lambda: xb.inplace_predict(Xp), repeats)
    rows["xgboost"] = dict(first_s=first, warm_s=warm)
    same = None if out_xla is None else bool(np.array_equal(out_native, out_xla))
    for r in rows.values():
        r["ratio_to_xgboost"] = r["warm_s"] / rows["xgboost"]["warm_s"]
    return dict(
        case=case,
        rows=Xp.shape[0],
        trees=bst.trees.n_trees,
        paths=rows,
        native_equals_xla=same,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="w1,digits,small,one_row,friedman1,sparse")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tag", default="", help="appended to the JSON file's name")
    args = ap.parse_args(argv)
    results = [run_case(c.strip(), args.repeats) for c in args.cases.split(",") if c.strip()]
    print(
        f"{'case':8s} {'rows':>9s} {'trees':>6s} {'path':8s} {'first s':>9s} "
        f"{'warm s':>9s} {'warm/XGB':>9s}"
    )
    for r in results:
        for path, p in r["paths"].items():
            print(
                f"{r['case']:8s} {r['rows']:9d} {r['trees']:6d} {path:8s} "
                f"{p['first_s']:9.4f} {p['warm_s']:9.4f} {p['ratio_to_xgboost']:9.2f}"
            )
        print(f"{'':8s} native == xla bit for bit: {r['native_equals_xla']}")
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"predict-{stamp}{'-' + args.tag if args.tag else ''}.json"
    path.write_text(json.dumps(dict(results=results, argv=sys.argv[1:]), indent=1))
    print(f"raw figures: {path}")


if __name__ == "__main__":
    main()
