"""Leaf-wise trees: jaxboost's ``grow_policy="lossguide"`` against XGBoost and LightGBM.

Trains the same logistic model (``make_classification``, 256 bins, learning rate 0.1,
2 threads unless ``--threads``) leaf-wise with ``max_leaves`` leaves at several
``max_depth`` bounds, and reports the median wall time of warm fits (one fit first:
compile excluded), beside XGBoost ``hist`` lossguide with the same depth and with no
depth bound (``max_depth=0``) and LightGBM with ``num_leaves`` and no depth bound
(``max_depth=-1``, its default), all in this process. Every fit starts from the float32
matrix, binning included (XGBoost's ``QuantileDMatrix``, LightGBM's ``Dataset``), as
in ``benchmarks/everyday.py``. The ratio is jaxboost over XGBoost at the same depth.
The figures go to stdout; nothing is asserted.

    python benchmarks/lossguide.py                        # 100k x 20, 31 leaves, 100 rounds
    python benchmarks/lossguide.py --rows 1000000 --features 28 --rounds 30 --depths 6,10
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import numpy as np


def data(rows, features):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=rows, n_features=features, random_state=1)
    return X.astype(np.float32), y.astype(np.float32)


def timed(fn, repeats):
    """Median wall seconds of ``repeats`` warm calls (one call first)."""
    fn()
    wall = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t)
    return statistics.median(wall)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--leaves", type=int, default=31)
    ap.add_argument("--depths", default="6,8,10,12")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import jaxboost

    X, y = data(args.rows, args.features)
    depths = [int(d) for d in args.depths.split(",")]
    common = dict(learning_rate=0.1, max_bin=256)

    def ours(depth):
        return functools.partial(
            jaxboost.train,
            "logistic",
            X,
            y,
            n_rounds=args.rounds,
            max_depth=depth,
            grow_policy="lossguide",
            max_leaves=args.leaves,
            n_jobs=args.threads,
            verbose=False,
            **common,
        )

    xgb_times = {}
    try:
        import xgboost as xgb

        def xgb_fit(p):
            return xgb.train(p, xgb.QuantileDMatrix(X, label=y, max_bin=256), args.rounds)

        for depth in [0, *depths]:
            p = dict(
                objective="binary:logistic",
                tree_method="hist",
                grow_policy="lossguide",
                max_leaves=args.leaves,
                max_depth=depth,
                eta=0.1,
                max_bin=256,
                nthread=args.threads,
            )
            xgb_times[depth] = timed(functools.partial(xgb_fit, p), args.repeats)
    except ImportError:
        pass
    lgb_time = None
    try:
        import lightgbm as lgb

        def lgb_fit(p):
            ds = lgb.Dataset(X, label=y, params=dict(max_bin=255, verbose=-1))
            return lgb.train(p, ds, args.rounds)

        p = dict(
            objective="binary",
            num_leaves=args.leaves,
            learning_rate=0.1,
            num_threads=args.threads,
            verbose=-1,
        )
        lgb_time = timed(functools.partial(lgb_fit, p), args.repeats)
    except ImportError:
        pass

    print(
        f"{args.rows} rows x {args.features} features, {args.leaves} leaves, "
        f"{args.rounds} rounds, {args.threads} threads; median of {args.repeats} warm fits"
    )
    if 0 in xgb_times:
        print(f"XGBoost lossguide, max_depth=0 (no bound): {xgb_times[0]:.3f} s")
    if lgb_time is not None:
        print(f"LightGBM num_leaves={args.leaves}, no depth bound: {lgb_time:.3f} s")
    print(f"{'max_depth':>9}{'jaxboost s':>12}{'XGBoost s':>11}{'ratio':>8}")
    for depth in depths:
        t = timed(ours(depth), args.repeats)
        tx = xgb_times.get(depth)
        ratio = f"{t / tx:8.2f}" if tx else ""
        print(f"{depth:>9}{t:12.3f}{tx or float('nan'):11.3f}{ratio}")


if __name__ == "__main__":
    main()
