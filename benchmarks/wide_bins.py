"""``max_bin`` above 256 (issue 31, item 2): what 16-bit bins cost.

Data: continuous features (``make_friedman1``-like, every value distinct), squared
error, 50 rounds, learning rate 0.3: 100,000 x 10 at depth 6, 20,000 x 10 at depth 10,
100,000 x 20 leaf-wise (31 leaves, depth at most 12), and a sparse CSR matrix of
100,000 x 2,000 with 20 stored values a row (1 %, about 1,000 a column, absent entries
missing: the native sparse kernel's row, a linear target). jaxboost at ``max_bin`` 256
(uint8 bins) and 512 or 1024 (uint16 bins; the native CPU kernels take up to 4,096 bins
a feature), and XGBoost 3.2 ``hist`` at the same ``max_bin`` (``nthread`` = all cores),
each fit once to compile/warm, then ``--repeats`` times (median reported); binning is
inside every timed fit. Also the training RMSE of each model.

    .venv/bin/python benchmarks/wide_bins.py

Raw figures go to ``benchmarks/results/wide_bins-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import timed  # noqa: E402  (benchmarks/_timing.py)


def data(n=100_000, f=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, f)).astype(np.float32)
    y = (
        10 * np.sin(np.pi * X[:, 0] * X[:, 1])
        + 20 * (X[:, 2] - 0.5) ** 2
        + 10 * X[:, 3]
        + 5 * X[:, 4]
        + rng.normal(size=n)
    ).astype(np.float32)
    return X, y


def sparse_data(n=100_000, f=2_000, per_row=20, seed=0):
    """CSR ``(n, f)`` with ``per_row`` stored uniform values a row (TF-IDF-like)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = sp.csr_matrix(
        (
            rng.uniform(size=n * per_row).astype(np.float32),
            rng.integers(0, f, size=n * per_row),
            np.arange(0, n * per_row + 1, per_row),
        ),
        shape=(n, f),
    )
    X.sum_duplicates()
    y = (X @ rng.normal(size=f) + 0.3 * rng.normal(size=n)).astype(np.float32)
    return X, y


WORKLOADS = (
    # name, rows, features, max_bins, jaxboost's and XGBoost's tree settings
    ("depth 6", 100_000, 10, (256, 512, 1024), dict(max_depth=6), dict(max_depth=6)),
    ("depth 10", 20_000, 10, (1024,), dict(max_depth=10), dict(max_depth=10)),
    (
        "lossguide 31",
        100_000,
        20,
        (256, 1024),
        dict(max_depth=12, grow_policy="lossguide", max_leaves=31),
        dict(max_depth=12, grow_policy="lossguide", max_leaves=31),
    ),
    ("sparse 1 %", 100_000, 2_000, (256, 1024), dict(max_depth=6), dict(max_depth=6)),
)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=50)
    args = ap.parse_args()
    import xgboost as xgb

    import jaxboost

    rows = []
    for name, n, f, max_bins, ours, theirs in WORKLOADS:
        X, y = sparse_data(n, f) if name.startswith("sparse") else data(n, f)
        for max_bin in max_bins:

            def fit_ours(mb=max_bin, X=X, y=y, ours=ours):
                return jaxboost.train(
                    "squared", X, y, n_rounds=args.rounds, max_bin=mb, verbose=False, **ours
                )

            def fit_xgb(mb=max_bin, X=X, y=y, theirs=theirs):
                d = xgb.QuantileDMatrix(X, label=y, max_bin=mb)
                params = dict(tree_method="hist", eta=0.3, max_bin=mb, **theirs)
                return xgb.train(params, d, args.rounds)

            t_jb, bst = timed(fit_ours, args.repeats)
            rmse_jb = float(np.sqrt(np.mean((bst.predict(X) - y) ** 2)))

            t_xgb, ref = timed(fit_xgb, args.repeats)
            rmse_xgb = float(np.sqrt(np.mean((ref.predict(xgb.DMatrix(X)) - y) ** 2)))
            print(f"{name} {max_bin}: {t_jb:.3f} s against {t_xgb:.3f} s", flush=True)
            rows.append(
                dict(
                    workload=f"{name}, {n:,} x {f}",
                    max_bin=max_bin,
                    bins_per_feature=int(bst.bin_edges.n_bins),
                    jaxboost_s=t_jb,
                    xgboost_s=t_xgb,
                    ratio=t_jb / t_xgb,
                    rmse_jaxboost=rmse_jb,
                    rmse_xgboost=rmse_xgb,
                )
            )
    print(f"{args.rounds} rounds, warm medians of {args.repeats}, {os.cpu_count()} cores")
    print(
        f"{'workload':<28} {'max_bin':>7} {'B':>5} {'jaxboost s':>10} {'XGBoost s':>9} "
        f"{'ratio':>6} {'RMSE jb':>8} {'RMSE xgb':>8}"
    )
    for r in rows:
        print(
            f"{r['workload']:<28} {r['max_bin']:>7} {r['bins_per_feature']:>5} "
            f"{r['jaxboost_s']:10.3f} {r['xgboost_s']:9.3f} {r['ratio']:6.2f} "
            f"{r['rmse_jaxboost']:8.4f} {r['rmse_xgboost']:8.4f}"
        )
    out = Path(__file__).parent / "results" / f"wide_bins-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(
        json.dumps({"command": "python benchmarks/wide_bins.py", "rows": rows}, indent=1)
    )
    print(out)


if __name__ == "__main__":
    main()
