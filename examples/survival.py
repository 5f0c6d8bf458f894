"""Survival analysis with the Cox proportional-hazards loss on censored times.

Synthetic patients: the log hazard is a non-linear function of 5 features, event times
are exponential with that hazard and about a third are censored (labels as XGBoost's
``survival:cox``: y > 0 an event at time y, y < 0 censored at time -y). A Cox model
trains on half the rows with the ``cox-nloglik`` and ``cindex`` metrics on the other
half; Harrell's C-index is printed next to XGBoost's ``survival:cox`` when xgboost is
installed, and a figure of the learning curves is written under ``--out`` when
matplotlib is.

Run: python examples/survival.py [--rounds 100] [--rows 4000] [--out survival_output]
"""

import argparse
import importlib.util
from pathlib import Path

import numpy as np
from jaxboost.survival import concordance_index

import jaxboost
import objectives


def patients(rng, n):
    X = rng.normal(size=(n, 5)).astype(np.float32)
    log_hazard = X[:, 0] + 0.5 * np.sin(2 * X[:, 1]) + 0.3 * X[:, 2] * X[:, 3]
    t = rng.exponential(size=n) * np.exp(-log_hazard)
    c = rng.exponential(size=n) * 1.5  # censoring times
    return X, np.where(t <= c, t, -c).astype(np.float32), log_hazard


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100, help="boosting rounds")
    ap.add_argument("--rows", type=int, default=4000, help="rows (half for training)")
    ap.add_argument("--out", default=None, help="folder for the figure (default: none)")
    args = ap.parse_args()
    X, y, log_hazard = patients(np.random.default_rng(0), args.rows)
    half = args.rows // 2
    tr, te = slice(0, half), slice(half, None)
    print(f"{args.rows} rows, {np.mean(y < 0):.0%} censored")
    print(f"true log hazard: held-out C-index {concordance_index(y[te], log_hazard[te]):.4f}")
    bst = jaxboost.train(
        objectives.cox,
        X[tr],
        y[tr],
        n_rounds=args.rounds,
        max_depth=3,
        learning_rate=0.1,
        eval_set={"test": (X[te], y[te])},
        eval_metric=["cox-nloglik", "cindex"],
        verbose=False,
    )
    c = concordance_index(y[te], bst.predict(X[te]))  # hazard ratios e^f
    print(
        f"jaxboost cox: held-out C-index {c:.4f}, cox-nloglik "
        f"{bst.history['test']['cox-nloglik'][-1]:.4f}"
    )
    if importlib.util.find_spec("xgboost") is not None:
        import xgboost as xgb

        ref = xgb.train(
            dict(objective="survival:cox", max_depth=3, eta=0.1, tree_method="hist"),
            xgb.DMatrix(X[tr], y[tr]),
            args.rounds,
        )
        c_ref = concordance_index(y[te], ref.predict(xgb.DMatrix(X[te])))
        print(f"xgboost survival:cox: held-out C-index {c_ref:.4f}")
    else:
        print("xgboost not installed: survival:cox skipped")
    if args.out is None:
        return
    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib not installed: figure skipped")
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, name in zip(axes, ("cox-nloglik", "cindex")):
        ax.plot(bst.history["test"][name])
        ax.set_xlabel("round")
        ax.set_title(f"held-out {name}")
    fig.tight_layout()
    fig.savefig(out / "survival_curves.png", dpi=100)
    print(f"figure written to {out / 'survival_curves.png'}")


if __name__ == "__main__":
    main()
