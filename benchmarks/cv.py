"""Cross-validation curves: ``jaxboost.cv`` against XGBoost's ``xgb.cv`` and LightGBM's
``lgb.cv``, in one process, warm (the median of ``--repeats`` after one call that
compiles).

Workloads (5 folds, the same folds for every library, depth 6, learning rate 0.3,
256 bins, ``reg_lambda=1``, 2 threads):

* breast cancer (569 x 30), logistic, 100 rounds;
* digits (1,797 x 64, 10 classes), softmax, 50 rounds;
* breast cancer, logistic, up to 500 rounds with early stopping after 10 rounds
  without improvement of the mean test log loss.

Every library evaluates the training and the held-out rows of each fold after each
round (XGBoost's and jaxboost's default; LightGBM's ``eval_train_metric=True``).
Printed: seconds, the ratio to XGBoost, and the final mean test metric. Nothing is
asserted.

    python benchmarks/cv.py [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _timing import timed, write_results  # noqa: E402  (benchmarks/_timing.py)


def workloads():
    from sklearn.datasets import load_breast_cancer, load_digits

    import jaxboost

    Xb, yb = load_breast_cancer(return_X_y=True)
    Xd, yd = load_digits(return_X_y=True)
    data = {
        "breast_cancer": (Xb.astype(np.float32), yb.astype(np.float32), "logistic", 100, None),
        "digits": (Xd.astype(np.float32), yd.astype(np.float32), "softmax", 50, None),
        "bc early stop": (Xb.astype(np.float32), yb.astype(np.float32), "logistic", 500, 10),
    }
    out = {}
    for name, (X, y, objective, rounds, esr) in data.items():
        folds = jaxboost.adapters.cv.make_folds(len(y), 5, seed=0)
        out[name] = (X, y, objective, rounds, esr, folds)
    return out


def run_jaxboost(X, y, objective, rounds, esr, folds, threads):
    import jaxboost

    metric = "logloss" if objective == "logistic" else "mlogloss"
    res = jaxboost.cv(
        objective,
        X,
        y,
        folds=folds,
        n_rounds=rounds,
        max_depth=6,
        learning_rate=0.3,
        max_bin=256,
        eval_metric=metric,
        early_stopping_rounds=esr,
        n_jobs=threads,
    )
    return len(res.mean["test"][metric]), float(res.mean["test"][metric][-1])


def run_xgboost(X, y, objective, rounds, esr, folds, threads):
    import xgboost as xgb

    params = dict(tree_method="hist", max_depth=6, eta=0.3, max_bin=256, nthread=threads)
    if objective == "logistic":
        params.update(objective="binary:logistic", eval_metric="logloss")
        metric = "logloss"
    else:
        params.update(objective="multi:softprob", num_class=10, eval_metric="mlogloss")
        metric = "mlogloss"
    d = xgb.DMatrix(X, label=y)
    res = xgb.cv(params, d, rounds, folds=folds, early_stopping_rounds=esr, as_pandas=False)
    curve = res[f"test-{metric}-mean"]
    return len(curve), float(curve[-1])


def run_lightgbm(X, y, objective, rounds, esr, folds, threads):
    import lightgbm as lgb

    params = dict(
        max_depth=6,
        num_leaves=64,
        learning_rate=0.3,
        max_bin=255,
        min_data_in_leaf=1,
        min_sum_hessian_in_leaf=1,
        num_threads=threads,
        verbose=-1,
    )
    if objective == "logistic":
        params.update(objective="binary", metric="binary_logloss")
        metric = "binary_logloss"
    else:
        params.update(objective="multiclass", num_class=10, metric="multi_logloss")
        metric = "multi_logloss"
    callbacks = [] if esr is None else [lgb.early_stopping(esr, verbose=False)]
    res = lgb.cv(
        params,
        lgb.Dataset(X, y),
        rounds,
        folds=folds,
        callbacks=callbacks,
        eval_train_metric=True,
    )
    curve = res[f"valid {metric}-mean"]
    return len(curve), float(curve[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    runners = {"jaxboost": run_jaxboost, "xgboost": run_xgboost}
    try:
        import lightgbm  # noqa: F401

        runners["lightgbm"] = run_lightgbm
    except ImportError:
        pass
    rows = []
    for name, work in workloads().items():
        base = None
        for lib, fn in runners.items():
            secs, (n, value) = timed(lambda f=fn, w=work: f(*w, args.threads), args.repeats)
            if lib == "xgboost":
                base = secs
            rows.append(dict(workload=name, library=lib, seconds=secs, rounds=n, test=value))
        for r in rows:
            if r["workload"] == name:
                r["ratio"] = r["seconds"] / base
    print(f"{'workload':14s} {'library':9s} {'warm s':>7s} {'/XGB':>6s} {'rounds':>6s}  test mean")
    for r in rows:
        print(
            f"{r['workload']:14s} {r['library']:9s} {r['seconds']:7.3f} {r['ratio']:6.2f} "
            f"{r['rounds']:6d}  {r['test']:.4f}"
        )
    write_results("cv", args, rows)


if __name__ == "__main__":
    main()
