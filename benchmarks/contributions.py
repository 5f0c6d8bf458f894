"""SHAP values (``predict(X, pred_contribs=True)``) and interaction values
(``pred_interactions``): jaxboost's exact TreeSHAP against XGBoost's on the same data,
in one process.

Cases (models trained here first, depth 6, learning rate 0.1, 256 bins, 100 rounds,
2 threads; each library explains its own model):

=================  ======================================================================
``breast_cancer``  logistic on sklearn's breast cancer, its 569 rows explained
``digits``         10-class softmax (1,000 trees) on sklearn's digits, 1,000 rows
``friedman1``      squared error on ``make_friedman1`` 20,000 x 10, 1,000 rows
``friedman1_big``  the same model, 20,000 rows
``*_pairs``        interaction values (``pred_interactions``) of ``breast_cancer``'s
                   model on its 569 rows, or ``friedman1``'s on 200 rows
=================  ======================================================================

**first** = the first call for that model (jaxboost: its leaf paths are walked then and
kept with the model), **warm** = the median of ``--repeats`` (5) further calls. Each
row of jaxboost's output is checked to sum to its margin (over the outputs, for
several classes).

Usage::

    python benchmarks/contributions.py
    python benchmarks/contributions.py --cases digits --tag before

Prints a table and writes ``benchmarks/results/contributions-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# predict.py's settings, timing and XGBoost parameters (it sets the same environment:
# CPU, no persistent compilation cache, 2 native threads, before anything imports JAX)
from predict import PARAMS, RESULTS, timed, xgboost_params  # noqa: E402


def data(case):
    from sklearn.datasets import load_breast_cancer, load_digits, make_friedman1

    if case.startswith("breast_cancer"):
        X, y = load_breast_cancer(return_X_y=True)
        return "logistic", X, y, X
    if case == "digits":
        X, y = load_digits(return_X_y=True)
        return "softmax", X, y, X[:1000]
    X, y = make_friedman1(20_000, random_state=0)
    rows = {"friedman1_big": len(X), "friedman1_pairs": 200}.get(case, 1000)
    return "squared", X, y, X[:rows]


def run_case(case, repeats):
    import xgboost as xgb

    import jaxboost

    objective, X, y, Xe = data(case)
    X, Xe = np.asarray(X, np.float32), np.asarray(Xe, np.float32)
    kind = "pred_interactions" if case.endswith("_pairs") else "pred_contribs"
    bst = jaxboost.train(objective, X, y, n_rounds=100, verbose=False, **PARAMS)
    phi, first, warm = timed(lambda: bst.predict(Xe, **{kind: True}), repeats)
    phi = phi.astype(np.float64).reshape(len(Xe), -1)
    sums = np.abs(phi.sum(-1) - bst.predict(Xe, output_margin=True).reshape(len(Xe), -1).sum(-1))
    sums = sums.max()
    xparams = xgboost_params(objective, int(y.max()) + 1 if objective == "softmax" else None)
    xb = xgb.train(xparams, xgb.DMatrix(X, y), 100)
    de = xgb.DMatrix(Xe)
    _, xfirst, xwarm = timed(lambda: xb.predict(de, **{kind: True}), repeats)
    return dict(
        case=case,
        rows=Xe.shape[0],
        trees=bst.trees.n_trees,
        jaxboost=dict(first_s=first, warm_s=warm),
        xgboost=dict(first_s=xfirst, warm_s=xwarm),
        ratio=warm / xwarm,
        max_sum_error=float(sums),
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--cases",
        default="breast_cancer,digits,friedman1,friedman1_big,breast_cancer_pairs,friedman1_pairs",
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tag", default="", help="appended to the JSON file's name")
    args = ap.parse_args(argv)
    results = [run_case(c.strip(), args.repeats) for c in args.cases.split(",") if c.strip()]
    print(
        f"{'case':20s} {'rows':>6s} {'trees':>6s} {'jaxboost first':>15s} {'warm':>8s} "
        f"{'XGBoost first':>14s} {'warm':>8s} {'warm/XGB':>9s} {'|sum - margin|':>15s}"
    )
    for r in results:
        j, x = r["jaxboost"], r["xgboost"]
        print(
            f"{r['case']:20s} {r['rows']:6d} {r['trees']:6d} {j['first_s']:15.4f} "
            f"{j['warm_s']:8.4f} {x['first_s']:14.4f} {x['warm_s']:8.4f} {r['ratio']:9.2f} "
            f"{r['max_sum_error']:15.2e}"
        )
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"contributions-{stamp}{'-' + args.tag if args.tag else ''}.json"
    path.write_text(json.dumps(dict(results=results, argv=sys.argv[1:]), indent=1))
    print(f"raw figures: {path}")


if __name__ == "__main__":
    main()
