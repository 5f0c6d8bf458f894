"""jaxboost demo: three losses on the Wisconsin breast cancer data (run by ``make demo``).

Trains the logistic, squared and exponential (AdaBoost) losses with the same tree
settings on one seeded, stratified 70/30 split of the shipped data set, prints a table
of test metrics, and draws test-set learning curves and margin histograms.

    python examples/demo.py [--out demo_output] [--rounds 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import jaxboost
import objectives
from jaxboost.datasets import load_breast_cancer

EPS = 1e-6  # probabilities are clipped to [EPS, 1 - EPS] before the log loss
LOSSES = {  # name -> (objective, how its margin is read as a probability)
    "logistic": (objectives.logistic, "sigmoid(f)"),
    "squared": (objectives.squared, "clip(f)"),
    "exponential": (objectives.exponential, "sigmoid(2f)"),
}


# --- data ---------------------------------------------------------------------------
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


# --- metrics (NumPy only) -------------------------------------------------------------
def as_probability(p):
    return np.clip(np.asarray(p, np.float64), EPS, 1.0 - EPS)


def logloss(y, p):
    p = as_probability(p)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log1p(-p)))


def auc(y, score):
    """Area under the ROC curve by ranks (Mann-Whitney U), ties get average ranks."""
    y = np.asarray(y) > 0.5
    score = np.asarray(score, np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, inverse, counts = np.unique(score, return_inverse=True, return_counts=True)
    first_rank = np.cumsum(counts) - counts + 1  # 1-based rank of each distinct value
    ranks = (first_rank + (counts - 1) / 2.0)[inverse]
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def accuracy(y, p):
    return float(np.mean((np.asarray(p) > 0.5) == (y > 0.5)))


def brier(y, p):
    return float(np.mean((as_probability(p) - y) ** 2))


# --- figures --------------------------------------------------------------------------
def plot(out_dir, grid, curves, margins, y_test, rounds):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: figures skipped "
              "(pip install matplotlib, or `make demo`, to get them)")
        return []
    os.makedirs(out_dir, exist_ok=True)
    colors = {"logistic": "tab:blue", "squared": "tab:orange", "exponential": "tab:green"}
    written = []

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, curve in curves.items():
        ax.plot(grid, curve, marker="o", ms=3, color=colors[name],
                label=f"{name} ({LOSSES[name][1]})")
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("boosting rounds k (model bst[:k])")
    ax.set_ylabel("test log loss")
    ax.set_title(f"Breast cancer, test log loss vs rounds (max {rounds})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = os.path.join(out_dir, "learning_curves.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)

    fig, axes = plt.subplots(1, len(margins), figsize=(4.2 * len(margins), 3.8))
    for ax, (name, m) in zip(np.atleast_1d(axes), margins.items()):
        bins = np.linspace(m.min(), m.max(), 31)
        ax.hist(m[y_test == 0], bins=bins, alpha=0.6, color="tab:gray", label="benign (y=0)")
        ax.hist(m[y_test == 1], bins=bins, alpha=0.6, color=colors[name],
                label="malignant (y=1)")
        ax.set_title(f"{name}: p = {LOSSES[name][1]}")
        ax.set_xlabel("test margin f")
        ax.legend(fontsize=8)
    np.atleast_1d(axes)[0].set_ylabel("test rows")
    fig.suptitle("How each loss shapes the margins (same tree settings, same data)")
    fig.tight_layout()
    path = os.path.join(out_dir, "margins.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)
    return written


# --- main -----------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="demo_output", help="folder for the figures")
    ap.add_argument("--rounds", type=int, default=200, help="boosting rounds per loss")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")

    X, y, names = load_breast_cancer()
    tr, te = stratified_split(y, 0.3, seed=0)
    X_tr, y_tr, X_te, y_te = X[tr], y[tr], X[te], y[te]
    settings = dict(n_rounds=args.rounds, learning_rate=0.1, max_depth=3)
    print(f"Wisconsin breast cancer: {X.shape[0]} rows, {X.shape[1]} features; "
          f"train {len(tr)} / test {len(te)} (stratified, seed 0); "
          f"positive class = malignant ({int(y_te.sum())} of the test rows)")
    print("settings: " + ", ".join(f"{k}={v}" for k, v in settings.items())
          + "; everything else default\n")

    k_grid = np.unique(np.round(np.geomspace(1, args.rounds, 20)).astype(int))
    k_grid = np.concatenate([[0], k_grid])  # k = 0: the fitted constant alone
    rows, curves, margins = [], {}, {}
    for name, (objective, _) in LOSSES.items():
        t0 = time.perf_counter()
        bst = jaxboost.train(objective, X_tr, y_tr, **settings)
        seconds = time.perf_counter() - t0
        t0 = time.perf_counter()  # the same fit again: compiled program reused
        bst = jaxboost.train(objective, X_tr, y_tr, **settings)
        refit_seconds = time.perf_counter() - t0
        p = bst.predict(X_te)
        margins[name] = bst.predict(X_te, output_margin=True)
        curves[name] = [logloss(y_te, bst[:k].predict(X_te)) for k in k_grid]
        rows.append((name, logloss(y_te, p), auc(y_te, p), accuracy(y_te, p),
                     brier(y_te, p), seconds, refit_seconds, bst.base_margin))

    head = (f"{'loss':<12}{'logloss':>9}{'AUC':>8}{'accuracy':>10}{'Brier':>8}"
            f"{'fit s':>7}{'refit s':>9}{'base margin':>13}")
    print(head)
    print("-" * len(head))
    for name, ll, a, acc, b, s, s2, base in rows:
        print(f"{name:<12}{ll:>9.4f}{a:>8.4f}{acc:>10.4f}{b:>8.4f}{s:>7.2f}{s2:>9.2f}"
              f"{base:>13.4f}")
    print(f"\n(test set; probabilities are sigmoid(f), clip(f, {EPS:g}, 1-{EPS:g}) and "
          f"sigmoid(2f) for logistic, squared and exponential, clipped to "
          f"[{EPS:g}, 1-{EPS:g}] for the log loss and Brier score;\n fit s = first training "
          f"run, including compilation; refit s = the same training run again, "
          f"compiled program reused)")
    best = {name: int(k_grid[int(np.argmin(c))]) for name, c in curves.items()}
    print("rounds k with the lowest test log loss: "
          + ", ".join(f"{n} {k}" for n, k in best.items()))

    written = plot(args.out, k_grid, curves, margins, y_te, args.rounds)
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
