"""What evaluation during training costs: W2-sized data, two eval sets, three metrics.

Trains the W2 problem (10k training rows of the W1 data, depth 6, 100 rounds, lr 0.1)
with and without evaluation, interleaved (plain, eval, plain, eval, ...), in one process
after a warm-up call of each (so compilation is excluded: it is W2's cold/warm story,
measured by run.py). Evaluation: ``eval_set`` = the training rows and 10k held-out rows,
``eval_metric`` = logloss, error and AUC, all computed on the device every round and
fetched once per 10-round chunk. A metric written ``host:NAME`` is scikit-learn's
``sklearn.metrics.NAME`` as a host metric (``jaxboost.metrics.host``, maximised): each
chunk's predictions are copied to the host and scored there, once per round. Prints the
median times and the ratio.

``--peer xgboost`` also times XGBoost ``hist`` (``QuantileDMatrix``, the same settings
and eval sets, the device metrics by their XGBoost names) with and without evaluation,
interleaved the same way in the same process, and prints both extras.

Run: ``python benchmarks/eval_overhead.py [--repeats 7] [--rows 10000]
[--metrics auc | host:roc_auc_score | host:average_precision_score ...] [--peer xgboost]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (data generation and caching shared with run.py)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument(
        "--metrics",
        default="logloss,error,auc",
        help="comma list of metric names, host:NAME for scikit-learn's "
        "sklearn.metrics.NAME as a host metric (default logloss,error,auc)",
    )
    ap.add_argument("--peer", choices=["xgboost"], help="also time XGBoost hist")
    args = ap.parse_args()

    spec = bench.dataset_spec("W2", args.rows)
    bench.ensure_dataset(spec["gen"])
    X, y, Xt, yt = bench.load_dataset(spec)
    Xv, yv = Xt[: args.rows], yt[: args.rows]

    import jax

    import jaxboost

    params = dict(
        n_rounds=args.rounds,
        learning_rate=bench.LEARNING_RATE,
        max_depth=bench.MAX_DEPTH,
        reg_lambda=bench.REG_LAMBDA,
        min_child_weight=bench.MIN_CHILD_WEIGHT,
        max_bin=bench.MAX_BIN,
        verbose=False,
    )

    def metric(name):
        if not name.startswith("host:"):
            return name
        import sklearn.metrics

        return jaxboost.metrics.host(getattr(sklearn.metrics, name[5:]), maximize=True)

    evals = dict(
        eval_set={"train": (X, y), "valid": (Xv, yv)},
        eval_metric=[metric(m) for m in args.metrics.split(",")],
    )

    def fit(with_eval: bool) -> float:
        t = time.perf_counter()
        bst = jaxboost.train("logistic", X, y, **params, **(evals if with_eval else {}))
        jax.block_until_ready(bst.trees)
        return time.perf_counter() - t

    fit(False), fit(True)  # compile both programs
    plain, with_eval = [], []
    for _ in range(args.repeats):
        plain.append(fit(False))
        with_eval.append(fit(True))
    peer = None
    if args.peer == "xgboost":
        names = [m for m in args.metrics.split(",") if not m.startswith("host:")]
        peer = xgboost_fit(X, y, Xv, yv, args.rounds, names)
        peer(False), peer(True)
    xplain, xwith = [], []
    if peer is not None:
        for _ in range(args.repeats):
            xplain.append(peer(False))
            xwith.append(peer(True))
    a, b = statistics.median(plain), statistics.median(with_eval)
    print(
        f"training rows {len(y):,}, {args.rounds} rounds, eval sets "
        f"{len(y):,} + {len(yv):,} rows, metrics {args.metrics}; median of "
        f"{args.repeats}, interleaved"
    )
    print(
        f"jaxboost without evaluation: {a:.3f} s   with evaluation: {b:.3f} s   "
        f"extra: {b - a:+.3f} s ({100 * (b / a - 1):+.1f} %)"
    )
    if peer is not None:
        xa, xb = statistics.median(xplain), statistics.median(xwith)
        print(
            f"xgboost  without evaluation: {xa:.3f} s   with evaluation: {xb:.3f} s   "
            f"extra: {xb - xa:+.3f} s ({100 * (xb / xa - 1):+.1f} %)"
        )
        print(f"jaxboost's extra / XGBoost's: {(b - a) / (xb - xa):.2f}")


def xgboost_fit(X, y, Xv, yv, rounds, metrics):
    """``fit(with_eval) -> seconds`` for XGBoost hist with ``run.py``'s settings: the
    ``QuantileDMatrix`` of the training rows (binning counted, as jaxboost's is) and,
    with evaluation, of the held-out rows, both evaluated every round."""
    import xgboost as xgb

    params = bench.xgboost_params(objective="binary:logistic")

    def fit(with_eval: bool) -> float:
        t = time.perf_counter()
        d = xgb.QuantileDMatrix(X, label=y, max_bin=bench.MAX_BIN)
        evals = []
        p = dict(params)
        if with_eval:
            dv = xgb.QuantileDMatrix(Xv, label=yv, ref=d)
            evals = [(d, "train"), (dv, "valid")]
            p["eval_metric"] = metrics
        xgb.train(p, d, num_boost_round=rounds, evals=evals, verbose_eval=False)
        return time.perf_counter() - t

    return fit


if __name__ == "__main__":
    main()
