"""jaxboost demo: three losses on the Wisconsin breast cancer data (run by ``make demo``).

Trains the logistic, squared and exponential (AdaBoost) losses with the same tree
settings on one seeded, stratified 70/30 split of the shipped data set with
``jaxboost.compare``, prints its table of test metrics, and draws the test-set learning
curves and margin histograms.

    python examples/demo.py [--out demo_output] [--rounds 200]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import jaxboost
import objectives
from jaxboost.datasets import load_breast_cancer

LOSSES = {  # label -> (objective, how its margin f is read as a probability)
    "logistic": (objectives.logistic, "sigmoid(f)"),
    "squared": (objectives.squared, "f"),
    "exponential": (objectives.exponential, "sigmoid(2f)"),
}
METRICS = ["logloss", "auc", "accuracy", "brier"]


def stratified_split(y, test_fraction=0.3, seed=0):
    """Indices ``(train, test)``: each class shuffled and cut at ``test_fraction``."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        n_test = int(round(test_fraction * idx.size))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def plot_margins(path, comparison, X_test, y_test):
    """Histograms of each model's test margins, by class."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.2 * len(LOSSES), 3.8))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(LOSSES))
    for i, (ax, (name, bst)) in enumerate(zip(axes, comparison.boosters.items())):
        m = bst.predict(X_test, output_margin=True)
        bins = np.linspace(m.min(), m.max(), 31)
        ax.hist(m[y_test == 0], bins=bins, alpha=0.6, color="tab:gray", label="benign (y=0)")
        ax.hist(m[y_test == 1], bins=bins, alpha=0.6, color=f"C{i}", label="malignant (y=1)")
        ax.set_title(f"{name}: p = {LOSSES[name][1]}")
        ax.set_xlabel("test margin f")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("test rows")
    fig.suptitle("How each loss shapes the margins (same tree settings, same data)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="demo_output", help="folder for the figures")
    ap.add_argument("--rounds", type=int, default=200, help="boosting rounds per loss")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")

    X, y, _ = load_breast_cancer()
    tr, te = stratified_split(y, 0.3, seed=0)
    settings = dict(learning_rate=0.1, max_depth=3)
    print(
        f"Wisconsin breast cancer: {X.shape[0]} rows, {X.shape[1]} features; "
        f"train {len(tr)} / test {len(te)} (stratified, seed 0); "
        f"positive class = malignant ({int(y[te].sum())} of the test rows)"
    )
    print(
        f"settings: n_rounds={args.rounds}, "
        + ", ".join(f"{k}={v}" for k, v in settings.items())
        + "; everything else default\n"
    )

    comparison = jaxboost.compare(
        {name: obj for name, (obj, _) in LOSSES.items()},
        X[tr],
        y[tr],
        eval_set={"test": (X[te], y[te])},
        metrics=METRICS,
        n_rounds=args.rounds,
        **settings,
    )
    print(comparison)
    print(
        "\nprobabilities: "
        + ", ".join(f"{k} {how}" for k, (_, how) in LOSSES.items())
        + "; logloss clips them to [1e-7, 1 - 1e-7] and brier to [0, 1], so squared's "
        "unbounded response still scores"
    )

    os.makedirs(args.out, exist_ok=True)
    written = []
    try:
        path = os.path.join(args.out, "learning_curves.png")
        comparison.plot(path, title=f"Breast cancer: test metrics vs rounds (max {args.rounds})")
        written.append(path)
        path = os.path.join(args.out, "margins.png")
        plot_margins(path, comparison, X[te], y[te])
        written.append(path)
    except ImportError as e:
        print(f"\nfigures skipped: {e} (or `make demo`, which installs it)")
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
