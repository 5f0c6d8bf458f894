"""Figures of one trained model: evaluation history, feature importance and a tree.

Trains the logistic loss on the shipped Wisconsin breast cancer data with a held-out
set watched by early stopping, then writes three PNG files with ``jaxboost.plotting``:

* ``history.png``: logloss and AUC per round on both sets, the best round marked;
* ``importance.png``: the features ranked by mean split gain;
* ``tree.png``: the first tree, its splits, missing-value directions and leaves.

    python examples/plots.py [--out plots_output] [--rounds 300] [--tree 0]

Needs matplotlib (the ``plot`` extra: ``pip install ".[plot]"`` from a checkout).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import jaxboost
import objectives
from jaxboost.datasets import load_breast_cancer


def holdout(n, fraction, seed):
    """Row indices ``(train, valid)``: a seeded shuffle cut at ``fraction``."""
    order = np.random.default_rng(seed).permutation(n)
    cut = int(round(n * (1 - fraction)))
    return np.sort(order[:cut]), np.sort(order[cut:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="plots_output", help="folder for the PNG files")
    ap.add_argument("--rounds", type=int, default=300, help="most boosting rounds")
    ap.add_argument("--tree", type=int, default=0, help="which tree tree.png shows")
    ap.add_argument("--seed", type=int, default=0, help="seed of the train/valid split")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    try:
        from jaxboost import plotting

        plotting._matplotlib()
    except ImportError as e:
        print(f"cannot draw: {e}", file=sys.stderr)
        return 1

    X, y, names = load_breast_cancer()
    tr, va = holdout(len(y), 0.25, args.seed)
    bst = jaxboost.train(
        objectives.logistic,
        X[tr],
        y[tr],
        n_rounds=args.rounds,
        max_depth=3,
        learning_rate=0.1,
        feature_names=names,
        eval_set={"train": (X[tr], y[tr]), "valid": (X[va], y[va])},
        eval_metric=["auc", "logloss"],
        early_stopping_rounds=20,
        early_stopping_data="valid",
        early_stopping_metric="logloss",
        verbose=False,
    )
    accuracy = float(np.mean((bst.predict(X[va]) > 0.5) == (y[va] > 0.5)))
    print(f"breast cancer: train {len(tr)} rows, valid {len(va)} rows, {X.shape[1]} features")
    print(bst)
    print(
        f"early stopping kept {len(bst)} of {len(bst.history['valid']['logloss'])} "
        f"rounds: valid logloss {bst.best_score:.4f}, accuracy {accuracy:.3f}"
    )

    os.makedirs(args.out, exist_ok=True)
    figures = {
        "history.png": lambda p: plotting.plot_history(bst, p),
        "importance.png": lambda p: plotting.plot_importance(bst, p, max_features=15),
        "tree.png": lambda p: plotting.plot_tree(bst, args.tree, p),
    }
    for filename, draw in figures.items():
        path = os.path.join(args.out, filename)
        draw(path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
