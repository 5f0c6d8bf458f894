"""Vector leaves: jaxboost's ``multi_strategy="multi_output_tree"`` against XGBoost's.

Two workloads, each trained on 75 % of its rows and scored on the rest, every fit
warm (the median of ``--repeats`` after one fit that compiles) and in this process:

* digits (1,797 x 64, 10 classes), softmax, depth 6: jaxboost with the full ``K x K``
  Hessian (its default, ``multi_hessian="full"``) and with its diagonal (XGBoost's
  rule), and one tree per class; XGBoost ``hist`` ``multi:softprob`` with
  ``multi_strategy="multi_output_tree"`` and with one tree per class.
* ``make_regression`` with 3 targets (20,000 x 20), squared error summed over the
  targets, depth 6: jaxboost ``multi_output_tree`` (H = I, so full and diagonal are
  the same model) against XGBoost's.

Same settings on both sides: learning rate 0.3, 256 bins, ``reg_lambda=1``, 2 threads
(``--threads``). The ratio is jaxboost's time over XGBoost's ``multi_output_tree`` on
the same workload. The figures go to stdout and to a JSON file; nothing is asserted.

    python benchmarks/multi_output.py                     # 30 rounds
    python benchmarks/multi_output.py --rounds 100 --out results.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(fn, repeats):
    """``(median wall seconds of repeats warm calls, the last call's result)``."""
    out = fn()
    wall = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        wall.append(time.perf_counter() - t)
    return statistics.median(wall), out


def split(X, Y, seed=0):
    idx = np.random.default_rng(seed).permutation(len(X))
    cut = len(X) * 3 // 4
    tr, te = idx[:cut], idx[cut:]
    return X[tr], Y[tr], X[te], Y[te]


def mlogloss(p, y):
    p = np.clip(np.asarray(p, np.float64), 1e-15, 1.0)
    return float(-np.mean(np.log(p[np.arange(len(y)), y.astype(int)])))


def rmse(pred, Y):
    return float(np.sqrt(np.mean((np.asarray(pred, np.float64) - Y) ** 2)))


def digits_rows(args):
    import xgboost as xgb
    from sklearn.datasets import load_digits

    import jaxboost

    X, y = load_digits(return_X_y=True)
    Xtr, ytr, Xte, yte = split(X.astype(np.float32), y.astype(np.float32))
    kw = dict(n_rounds=args.rounds, max_depth=6, learning_rate=0.3, max_bin=256, verbose=False)
    kw["n_jobs"] = args.threads
    rows = []
    for label, extra in [
        ("jaxboost multi_output_tree, full H", dict(multi_strategy="multi_output_tree")),
        (
            "jaxboost multi_output_tree, diagonal H",
            dict(multi_strategy="multi_output_tree", multi_hessian="diagonal"),
        ),
        ("jaxboost one tree per class", {}),
    ]:
        secs, model = timed(
            lambda e=extra: jaxboost.train("softmax", Xtr, ytr, **kw, **e), args.repeats
        )
        rows.append(
            dict(
                workload="digits",
                fit=label,
                seconds=secs,
                mlogloss=mlogloss(model.predict(Xte), yte),
            )
        )
    params = dict(
        objective="multi:softprob",
        num_class=10,
        tree_method="hist",
        max_depth=6,
        eta=0.3,
        max_bin=256,
        nthread=args.threads,
    )
    for label, extra in [
        ("xgboost multi_output_tree", dict(multi_strategy="multi_output_tree")),
        ("xgboost one tree per class", {}),
    ]:

        def fit(e=extra):
            d = xgb.QuantileDMatrix(Xtr, ytr, max_bin=256)
            return xgb.train({**params, **e}, d, args.rounds)

        secs, booster = timed(fit, args.repeats)
        p = booster.predict(xgb.DMatrix(Xte))
        rows.append(dict(workload="digits", fit=label, seconds=secs, mlogloss=mlogloss(p, yte)))
    return rows


def regression_rows(args):
    import jax.numpy as jnp
    import xgboost as xgb
    from sklearn.datasets import make_regression

    import jaxboost

    X, Y = make_regression(n_samples=20_000, n_features=20, n_targets=3, noise=5.0, random_state=0)
    Xtr, Ytr, Xte, Yte = split(X.astype(np.float32), Y.astype(np.float32))

    def squares(y, f):
        return 0.5 * jnp.sum((y - f) ** 2)

    kw = dict(n_rounds=args.rounds, max_depth=6, learning_rate=0.3, max_bin=256, verbose=False)
    secs, model = timed(
        lambda: jaxboost.train(
            squares,
            Xtr,
            Ytr,
            n_outputs=3,
            multi_strategy="multi_output_tree",
            n_jobs=args.threads,
            **kw,
        ),
        args.repeats,
    )
    rows = [
        dict(
            workload="regression-3",
            fit="jaxboost multi_output_tree",
            seconds=secs,
            rmse=rmse(model.predict(Xte), Yte),
        )
    ]

    def fit():
        d = xgb.QuantileDMatrix(Xtr, Ytr, max_bin=256)
        params = dict(
            tree_method="hist",
            max_depth=6,
            eta=0.3,
            max_bin=256,
            nthread=args.threads,
            multi_strategy="multi_output_tree",
        )
        return xgb.train(params, d, args.rounds)

    secs, booster = timed(fit, args.repeats)
    rows.append(
        dict(
            workload="regression-3",
            fit="xgboost multi_output_tree",
            seconds=secs,
            rmse=rmse(booster.predict(xgb.DMatrix(Xte)), Yte),
        )
    )
    return rows


def table(rows):
    base = {r["workload"]: r["seconds"] for r in rows if r["fit"] == "xgboost multi_output_tree"}
    lines = [f"{'workload':13s} {'fit':40s} {'warm s':>8s} {'/XGB mot':>9s}  quality"]
    for r in rows:
        q = f"mlogloss {r['mlogloss']:.4f}" if "mlogloss" in r else f"rmse {r['rmse']:.3f}"
        ratio = r["seconds"] / base[r["workload"]]
        r["ratio"] = ratio
        lines.append(f"{r['workload']:13s} {r['fit']:40s} {r['seconds']:8.3f} {ratio:9.2f}  {q}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/)")
    args = ap.parse_args(argv)
    rows = digits_rows(args) + regression_rows(args)
    print(table(rows))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or os.path.join(HERE, "results", f"multi-output-{stamp}.json")
    with open(out, "w") as f:
        json.dump(
            dict(
                created=stamp,
                settings=vars(args),
                machine=platform.platform(),
                cores=len(os.sched_getaffinity(0)),
                rows=rows,
            ),
            f,
            indent=1,
        )
    print(f"\nraw figures: {out}")


if __name__ == "__main__":
    main()
