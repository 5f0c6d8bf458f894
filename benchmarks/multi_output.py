"""Vector leaves: jaxboost's ``multi_strategy="multi_output_tree"`` against XGBoost's.

Two workloads, each trained on 75 % of its rows and scored on the rest, every fit
warm (the median of ``--repeats`` after one fit that compiles) and in this process:

* digits (1,797 x 64, 10 classes), softmax, depth 6: jaxboost with the full ``K x K``
  Hessian (its default, ``multi_hessian="full"``) and with its diagonal (XGBoost's
  rule), and one tree per class; XGBoost ``hist`` ``multi:softprob`` with
  ``multi_strategy="multi_output_tree"`` and with one tree per class.
* 4 classes, 100,000 x 10 uniform features (the class from a noisy sum of two), the
  same fits: a K small enough that the full Hessian's solves are cheap.
* ``make_regression`` with 3 targets (20,000 x 20 and 200,000 x 10), depth 6: the
  built-in ``squared`` on the 2-D targets (``objectives.multi_target``) with one tree
  per target and with vector leaves, a squared error summed over the targets written
  as a loss of your own with vector leaves (H = I, so full and diagonal are the same
  model), and XGBoost ``hist`` with either strategy.

Same settings on both sides: learning rate 0.3, 256 bins, ``reg_lambda=1``, 2 threads
(``--threads``). The ratio is jaxboost's time over XGBoost's ``multi_output_tree`` on
the same workload, and over XGBoost's fit of the same strategy (one tree per class or
target, or vector leaves). The figures go to stdout and to a JSON file; nothing is
asserted.

    python benchmarks/multi_output.py                     # 30 rounds
    python benchmarks/multi_output.py --rounds 100 --out results.json
    python benchmarks/multi_output.py --workloads regression
    python benchmarks/multi_output.py --workloads digits,classes4,regression
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _timing import timed, write_results  # noqa: E402  (benchmarks/_timing.py)


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
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return classification_rows(args, "digits", X, y)


def classes4_rows(args):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(100_000, 10))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.2 * rng.normal(size=len(X)), [0.5, 0.9, 1.2])
    return classification_rows(args, "4 classes", X, y)


def classification_rows(args, workload, X, y):
    """Softmax fits of one data set: jaxboost's vector leaves (full and diagonal
    Hessian) and trees per class, XGBoost's two strategies."""
    import xgboost as xgb

    import jaxboost

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
                workload=workload,
                fit=label,
                seconds=secs,
                mlogloss=mlogloss(model.predict(Xte), yte),
            )
        )
    params = dict(
        objective="multi:softprob",
        num_class=int(y.max()) + 1,
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
        rows.append(dict(workload=workload, fit=label, seconds=secs, mlogloss=mlogloss(p, yte)))
    return rows


def regression_rows(args):
    """Multi-target regression, 3 targets, on two sizes: the built-in ``squared`` with a
    2-D ``Y`` (``objectives.multi_target``) one tree per target and with vector leaves,
    a summed loss of your own with vector leaves, and XGBoost with either strategy."""
    import xgboost as xgb
    from sklearn.datasets import make_regression

    rows = []
    for n, m in ((20_000, 20), (200_000, 10)):
        X, Y = make_regression(n_samples=n, n_features=m, n_targets=3, noise=5.0, random_state=0)
        Xtr, Ytr, Xte, Yte = split(X.astype(np.float32), Y.astype(np.float32))
        for name, fit in _regression_fits(Xtr, Ytr, args).items():
            secs, model = timed(fit, args.repeats)
            pred = model.predict(xgb.DMatrix(Xte) if name.startswith("xgb") else Xte)
            workload = f"regr-3 {n // 1000}k"
            rows.append(dict(workload=workload, fit=name, seconds=secs, rmse=rmse(pred, Yte)))
    return rows


def _regression_fits(Xtr, Ytr, args) -> dict:
    """The fits of one regression workload, by name."""
    import jax.numpy as jnp
    import xgboost as xgb

    import jaxboost

    def squares(y, f):
        return 0.5 * jnp.sum((y - f) ** 2)

    kw = dict(
        n_rounds=args.rounds,
        max_depth=6,
        learning_rate=0.3,
        max_bin=256,
        verbose=False,
        n_jobs=args.threads,
    )
    vector = dict(multi_strategy="multi_output_tree")

    def xgboost_fit(strategy):
        def fit():
            d = xgb.QuantileDMatrix(Xtr, Ytr, max_bin=256)
            params = dict(
                tree_method="hist",
                max_depth=6,
                eta=0.3,
                max_bin=256,
                nthread=args.threads,
                multi_strategy=strategy,
            )
            return xgb.train(params, d, args.rounds)

        return fit

    return {
        "jaxboost squared, tree per target": lambda: jaxboost.train("squared", Xtr, Ytr, **kw),
        "jaxboost squared multi_output_tree": lambda: jaxboost.train(
            "squared", Xtr, Ytr, **vector, **kw
        ),
        "jaxboost summed loss multi_output_tree": lambda: jaxboost.train(
            squares, Xtr, Ytr, n_outputs=3, **vector, **kw
        ),
        "xgboost tree per target": xgboost_fit("one_output_per_tree"),
        "xgboost multi_output_tree": xgboost_fit("multi_output_tree"),
    }


def table(rows):
    """One line per fit: warm seconds, the ratio to XGBoost's ``multi_output_tree`` and
    to XGBoost's fit of the same strategy (one tree per class or target, or vector
    leaves), and the held-out quality."""

    def xgb_of(workload, vector):
        name = "xgboost multi_output_tree" if vector else None
        for r in rows:
            if r["workload"] == workload and r["fit"].startswith("xgboost"):
                if (r["fit"] == name) if vector else ("multi_output_tree" not in r["fit"]):
                    return r["seconds"]
        return float("nan")

    head = (
        f"{'workload':13s} {'fit':40s} {'warm s':>8s} {'/XGB mot':>9s} {'/XGB same':>10s}  quality"
    )
    lines = [head]
    for r in rows:
        q = f"mlogloss {r['mlogloss']:.4f}" if "mlogloss" in r else f"rmse {r['rmse']:.3f}"
        r["ratio"] = r["seconds"] / xgb_of(r["workload"], True)
        vector = "multi_output_tree" in r["fit"] or "full H" in r["fit"] or "diagonal" in r["fit"]
        r["ratio_same"] = r["seconds"] / xgb_of(r["workload"], vector)
        lines.append(
            f"{r['workload']:13s} {r['fit']:40s} {r['seconds']:8.3f} {r['ratio']:9.2f} "
            f"{r['ratio_same']:10.2f}  {q}"
        )
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/)")
    ap.add_argument(
        "--workloads", default="digits,classes4,regression", help="digits, classes4, regression"
    )
    args = ap.parse_args(argv)
    chosen = args.workloads.split(",")
    rows = []
    for name, rows_of in (
        ("digits", digits_rows),
        ("classes4", classes4_rows),
        ("regression", regression_rows),
    ):
        if name in chosen:
            rows += rows_of(args)
    print(table(rows))
    write_results("multi-output", args, rows, cores=len(os.sched_getaffinity(0)))


if __name__ == "__main__":
    main()
