"""What the split constraints cost: training time with each option against none.

Trains the same logistic model (``make_classification``, depth 6, 256 bins) without
constraints, with ``monotone_constraints`` on half the features, with
``interaction_constraints`` (features in sets of four), with ``min_samples_leaf`` and
with all three, and reports the median wall time of a warm ``train`` call (compile
excluded: one call first) and XGBoost ``hist``'s with the same monotone and interaction
constraints for scale; also the process CPU time of the jaxboost call and the fastest
run (less sensitive than the median to other load on the machine). The figures go to
stdout as a table; nothing is asserted.

    python benchmarks/constraints.py                    # 200k rows x 20, 50 rounds
    python benchmarks/constraints.py --rows 20000 --repeats 1
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import numpy as np


def data(rows, features):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=rows, n_features=features, n_informative=features // 2, random_state=0
    )
    return X.astype(np.float32), y.astype(np.float32)


def timed(fn, repeats):
    """``(median wall s, fastest wall s, median CPU s)`` of warm calls."""
    fn()  # compile / warm up
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), min(wall), statistics.median(cpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-xgboost", action="store_true")
    args = ap.parse_args()

    import jaxboost

    X, y = data(args.rows, args.features)
    F = args.features
    mono = tuple(1 if f % 2 == 0 else 0 for f in range(F))
    sets = [list(range(i, min(i + 4, F))) for i in range(0, F, 4)]
    options = {
        "none": {},
        "monotone": dict(monotone_constraints=mono),
        "interaction": dict(interaction_constraints=sets),
        "min_samples_leaf=20": dict(min_samples_leaf=20),
        "all three": dict(
            monotone_constraints=mono, interaction_constraints=sets, min_samples_leaf=20
        ),
    }
    base = dict(n_rounds=args.rounds, max_depth=args.depth, learning_rate=0.1, verbose=False)
    print(
        f"{args.rows} rows x {F} features, {args.rounds} rounds, depth {args.depth}; "
        f"median of {args.repeats} warm runs"
    )
    print(
        f"{'option':<22}{'wall s':>8}{'fastest':>9}{'CPU s':>8}{'CPU vs none':>13}"
        f"{'xgboost hist s':>16}"
    )
    ref = None
    for name, kw in options.items():
        t, fastest, cpu = timed(
            functools.partial(jaxboost.train, "logistic", X, y, **base, **kw), args.repeats
        )
        ref = cpu if ref is None else ref
        tx = ""
        if not args.no_xgboost and "min_samples_leaf" not in " ".join(kw):
            import xgboost as xgb

            p = dict(
                objective="binary:logistic",
                tree_method="hist",
                max_bin=256,
                max_depth=args.depth,
                eta=0.1,
            )
            if "monotone_constraints" in kw:
                p["monotone_constraints"] = "(" + ",".join(map(str, mono)) + ")"
            if "interaction_constraints" in kw:
                p["interaction_constraints"] = str(sets)
            d = xgb.QuantileDMatrix(X, label=y, max_bin=256)
            tx = f"{timed(functools.partial(xgb.train, p, d, args.rounds), args.repeats)[0]:16.2f}"
        print(f"{name:<22}{t:8.2f}{fastest:9.2f}{cpu:8.2f}{cpu / ref:13.2f}{tx}")


if __name__ == "__main__":
    main()
