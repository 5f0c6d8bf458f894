"""Catalogue objectives beyond the everyday table: jaxboost against XGBoost ``hist``.

The objectives a user reaches for after squared and logistic error, each trained by both
libraries in this process on the same data with the same settings (depth 6, learning
rate 0.1, 256 bins, 2 threads, 100 rounds; XGBoost through ``QuantileDMatrix``, binning
included on both sides): absolute error and a 0.9 quantile (leaves refit to quantiles),
pseudo-Huber (jaxboost's default Newton refit, and XGBoost's formulation: exact
Hessian, no refit; also on ``make_friedman1``'s 10 features, with held-out MAE),
Poisson, gamma, Tweedie, Cox, AFT (normal, a quarter each of events, right-, left- and
interval-censored rows), and learning to rank: LambdaRank and
RankNet on queries of 20 rows (every pair on both sides: XGBoost
``lambdarank_pair_method="topk"`` with ``lambdarank_num_pair_per_sample`` 20), and
LambdaRank@10 on 2,000 queries of 2-384 rows (XGBoost ``rank:ndcg`` with its defaults,
which takes fewer pairs on queries of more than 32 rows). Times are medians of warm fits
(one fit first: compile excluded); the ratio is jaxboost's over XGBoost's. Prints a
table and writes ``benchmarks/results/catalogue-<timestamp>.json``; nothing is
asserted.

    python benchmarks/catalogue.py                      # 100,000 x 20
    python benchmarks/catalogue.py --only absolute,cox --rows 20000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def timed(fn, repeats):
    """``(first, median of warm)`` wall seconds: one call, then ``repeats`` more."""
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    wall = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t)
    return first, statistics.median(wall)


def workloads(rows, features, seed=0):
    """``{name: (jaxboost kwargs, XGBoost params, X, y, xgb extras)}``."""
    import objectives as O

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features)).astype(np.float32)
    lin = X[:, 0] - 0.5 * X[:, 1] + 0.3 * X[:, 2] * X[:, 3] + 0.2 * rng.normal(size=rows)
    yreg = lin.astype(np.float32)
    ypos = np.exp(0.3 * lin).astype(np.float32)
    ycount = rng.poisson(np.exp(0.3 * lin)).astype(np.float32)
    time_ = np.round(rng.exponential(np.exp(-0.5 * lin)) * 20 + 1)
    ycox = np.where(rng.random(rows) < 0.7, time_, -time_).astype(np.float32)
    # AFT: a quarter each events, right-, left- and interval-censored times
    kind = np.arange(rows) % 4
    t = time_.astype(np.float32)
    yaft = {
        "lower": np.select([kind == 0, kind == 1, kind == 2], [t, 0.7 * t, 0 * t], 0.8 * t),
        "upper": np.select([kind == 0, kind == 1, kind == 2], [t, np.inf + t, 1.3 * t], 1.5 * t),
    }
    yrank = np.clip(np.round(lin + 2), 0, 4).astype(np.float32)
    q20 = np.repeat(np.arange(rows // 20 + 1), 20)[:rows]
    sizes = np.clip(rng.lognormal(3.5, 0.8, 2000).astype(int), 2, 384)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), rows, side="right")]
    n_var = int(sizes.sum())
    all_pairs = {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": 20}
    out = {
        "absolute": (dict(objective=O.absolute), {"objective": "reg:absoluteerror"}, yreg),
        "quantile_0.9": (
            dict(objective=O.quantile(alpha=0.9)),
            {"objective": "reg:quantileerror", "quantile_alpha": 0.9},
            yreg,
        ),
        "pseudo_huber": (
            dict(objective=O.pseudo_huber),
            {"objective": "reg:pseudohubererror"},
            yreg,
        ),
        "pseudo_huber_exact": (
            dict(objective=O.pseudo_huber, hessian="exact", refit=None),
            {"objective": "reg:pseudohubererror"},
            yreg,
        ),
        "poisson": (dict(objective=O.poisson), {"objective": "count:poisson"}, ycount),
        "gamma": (dict(objective=O.gamma), {"objective": "reg:gamma"}, ypos),
        "tweedie": (dict(objective=O.tweedie), {"objective": "reg:tweedie"}, ypos),
        "cox": (dict(objective=O.cox), {"objective": "survival:cox"}, ycox),
        "aft": (dict(objective=O.aft), {"objective": "survival:aft"}, yaft),
        "lambdarank_q20": (
            dict(objective=O.lambdarank, group=q20),
            {"objective": "rank:ndcg", "ndcg_exp_gain": True, **all_pairs},
            yrank,
        ),
        "ranknet_q20": (
            dict(objective=O.ranknet, group=q20),
            {"objective": "rank:pairwise", **all_pairs},
            yrank,
        ),
        "lambdarank10_q2-384": (
            dict(objective=O.lambdarank(k=10), group=np.repeat(np.arange(sizes.size), sizes)),
            {"objective": "rank:ndcg", "ndcg_exp_gain": True},
            yrank,
        ),
    }
    out = {
        name: (kw, p, X[:n_var] if "q2-384" in name else X, y[:n_var] if "q2-384" in name else y)
        for name, (kw, p, y) in out.items()
    }
    # pseudo-Huber on friedman1 (10 features, targets in the tens): the refit's cost
    # grows with the rows and the residuals
    from sklearn.datasets import make_friedman1

    Xf, yf = make_friedman1(n_samples=rows, n_features=10, noise=1.0, random_state=seed)
    Xf, yf = Xf.astype(np.float32), yf.astype(np.float32)
    for name, kw in (
        ("pseudo_huber_friedman1", dict(objective=O.pseudo_huber)),
        (
            "pseudo_huber_exact_friedman1",
            dict(objective=O.pseudo_huber, hessian="exact", refit=None),
        ),
    ):
        out[name] = (kw, {"objective": "reg:pseudohubererror"}, Xf, yf)
    return out, sizes


def xgb_labels(y) -> dict:
    """XGBoost's DMatrix label arguments: ``label``, or an AFT entry's interval bounds."""
    if isinstance(y, dict):
        return dict(label_lower_bound=y["lower"], label_upper_bound=y["upper"])
    return dict(label=y)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

    import xgboost as xgb

    import jaxboost

    cases, sizes = workloads(args.rows, args.features)
    only = [s for s in args.only.split(",") if s]
    rows = []
    print(f"{'workload':22s} {'jaxboost s':>11s} {'xgboost s':>10s} {'ratio':>6s}  first fits")
    for name, (kw, params, X, y) in cases.items():
        if only and name not in only:
            continue
        kw = dict(kw)
        objective, group = kw.pop("objective"), kw.pop("group", None)

        def ours(objective=objective, group=group, kw=kw, X=X, y=y):
            return jaxboost.train(
                objective, X, y, group=group, n_rounds=args.rounds, max_depth=6,
                learning_rate=0.1, max_bin=256, n_jobs=args.threads, verbose=False, **kw,
            )  # fmt: skip

        def theirs(params=params, group=group, X=X, y=y, name=name):
            d = xgb.QuantileDMatrix(X, max_bin=256, **xgb_labels(y))
            if group is not None:
                d.set_group(sizes if "q2-384" in name else np.bincount(group))
            p = dict(tree_method="hist", max_depth=6, eta=0.1, nthread=args.threads, **params)
            return xgb.train(p, d, args.rounds)

        j_first, j = timed(ours, args.repeats)
        x_first, x = timed(theirs, args.repeats)
        rows.append(
            dict(workload=name, jaxboost_s=j, xgboost_s=x, ratio=j / x, rows=len(X),
                 jaxboost_first_s=j_first, xgboost_first_s=x_first)
        )  # fmt: skip
        score = ""
        if "friedman1" in name:  # held-out MAE on a fresh draw of 20,000 rows
            from sklearn.datasets import make_friedman1

            Xt, yt = make_friedman1(n_samples=20_000, n_features=10, noise=1.0, random_state=1)
            Xt = Xt.astype(np.float32)
            mae_j = float(np.mean(np.abs(np.asarray(ours().predict(Xt)) - yt)))
            mae_x = float(np.mean(np.abs(theirs().predict(xgb.DMatrix(Xt)) - yt)))
            rows[-1].update(jaxboost_mae=mae_j, xgboost_mae=mae_x)
            score = f"  held-out MAE {mae_j:.3g} / {mae_x:.3g}"
        print(
            f"{name:22s} {j:11.3f} {x:10.3f} {j / x:6.2f}  {j_first:.2f} / {x_first:.2f}{score}",
            flush=True,
        )

    record = dict(
        command=" ".join(["python", "benchmarks/catalogue.py"] + sys.argv[1:]),
        machine=dict(
            cores=os.cpu_count(), cpu=platform.processor(), python=platform.python_version()
        ),
        xgboost=xgb.__version__,
        args=vars(args),
        rows=rows,
    )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else HERE / "results" / f"catalogue-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
