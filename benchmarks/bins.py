"""Bins that follow the data (issue 27): warm training time with the programs' bins
padded to ``max_bin`` (before) and with the data's bin bucket (after), against XGBoost
3.2 ``hist`` with the same settings.

Workloads: scikit-learn's ``load_digits`` (1,797 x 64, at most 17 values per feature,
10 classes, the catalogue's ``softmax`` / XGBoost's ``multi:softprob``) and
``load_breast_cancer`` (569 x 30, continuous, ``logistic`` / ``binary:logistic``); depth 6,
100 rounds, learning rate 0.3, ``reg_lambda`` 1, ``min_child_weight`` 1, ``max_bin``
256. Each jaxboost variant fits once to compile, then ``--repeats`` more times (the
median is reported); XGBoost likewise, ``nthread`` = 2, its ``QuantileDMatrix`` built
inside the timed call (jaxboost's binning is inside its fit too). The padded and the
data-following models are checked to be bit-identical.

    .venv/bin/python benchmarks/bins.py                # about a minute and a half
    .venv/bin/python benchmarks/bins.py --repeats 1    # smoke run

Raw figures go to ``benchmarks/results/bins-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

DEPTH, ROUNDS, LR = 6, 100, 0.3


def workloads():
    from sklearn.datasets import load_breast_cancer, load_digits

    Xd, yd = load_digits(return_X_y=True)
    Xb, yb = load_breast_cancer(return_X_y=True)
    return {
        "digits softmax": (Xd.astype(np.float32), yd.astype(np.float32), "softmax"),
        "breast cancer logistic": (Xb.astype(np.float32), yb.astype(np.float32), "logistic"),
    }


def timed(fn, repeats):
    """``(first, median of the next repeats, result)``: seconds of a cold call, then
    of warm ones."""
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    warm = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        warm.append(time.perf_counter() - t0)
    return first, statistics.median(warm), warm, out


def jaxboost_fit(X, y, objective, padded):
    import jaxboost
    from jaxboost.engine.binning import PAD_BINS_ENV

    def fit():
        if padded:
            os.environ[PAD_BINS_ENV] = "1"
        else:
            os.environ.pop(PAD_BINS_ENV, None)
        try:
            return jaxboost.train(
                objective, X, y, n_rounds=ROUNDS, max_depth=DEPTH, learning_rate=LR, verbose=False
            )
        finally:
            os.environ.pop(PAD_BINS_ENV, None)

    return fit


def xgboost_fit(X, y, objective):
    import xgboost as xgb

    params = dict(
        tree_method="hist",
        max_depth=DEPTH,
        eta=LR,
        reg_lambda=1.0,
        min_child_weight=1.0,
        max_bin=256,
        grow_policy="depthwise",
        nthread=2,
    )
    if objective == "softmax":
        params.update(objective="multi:softprob", num_class=int(y.max()) + 1)
    else:
        params.update(objective="binary:logistic")

    def fit():
        d = xgb.QuantileDMatrix(X, label=y, max_bin=256, nthread=2)
        return xgb.train(params, d, ROUNDS)

    return fit


def accuracy(pred, y):
    pred = np.asarray(pred)
    label = pred.argmax(axis=1) if pred.ndim == 2 else (pred > 0.5)
    return float((label == y).mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import jax
    import xgboost as xgb

    import jaxboost

    results = dict(
        jax=jax.__version__,
        xgboost=xgb.__version__,
        jaxboost=jaxboost.__version__,
        machine=platform.machine(),
        cores=os.cpu_count(),
        settings=dict(max_depth=DEPTH, n_rounds=ROUNDS, learning_rate=LR),
        repeats=args.repeats,
        workloads={},
    )
    for name, (X, y, objective) in workloads().items():
        row = {}
        models = {}
        for variant, padded in (("before (padded)", True), ("after (data bins)", False)):
            first, med, warm, bst = timed(jaxboost_fit(X, y, objective, padded), args.repeats)
            models[variant] = bst
            row[variant] = dict(
                first_s=first,
                warm_median_s=med,
                warm_s=warm,
                bins=bst.bin_edges.n_bins,
                train_accuracy=accuracy(bst.predict(X), y),
            )
        a, b = (m.ensemble.to_numpy() for m in models.values())
        same = all(
            (x is None and z is None) or np.asarray(x).tobytes() == np.asarray(z).tobytes()
            for x, z in zip(a, b)
        )
        first, med, warm, bst = timed(xgboost_fit(X, y, objective), args.repeats)
        row["xgboost hist"] = dict(
            first_s=first,
            warm_median_s=med,
            warm_s=warm,
            train_accuracy=accuracy(bst.predict(xgb.DMatrix(X)), y),
        )
        row["bit_identical"] = same
        results["workloads"][name] = row
        print(f"{name} ({X.shape[0]} x {X.shape[1]}), warm median of {args.repeats}:")
        for variant in ("before (padded)", "after (data bins)", "xgboost hist"):
            r = row[variant]
            bins = f"B = {r['bins']:3d}" if "bins" in r else "       "
            print(
                f"  {variant:18s} {bins}  {r['warm_median_s']:7.3f} s  "
                f"(first fit {r['first_s']:.2f} s, train accuracy {r['train_accuracy']:.4f})"
            )
        print(f"  padded and data-bin models bit-identical: {same}", flush=True)
    out = Path(
        args.out or Path(__file__).parent / "results" / time.strftime("bins-%Y%m%d-%H%M%S.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"raw figures: {out}")


if __name__ == "__main__":
    main()
