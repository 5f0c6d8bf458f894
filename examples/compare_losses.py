"""Eight losses at once: one compiled program trains them all (``jaxboost.train_many``).

On the shipped Wisconsin breast cancer data (one seeded, stratified 70/30 split), eight
losses that can read a 0/1 label - three classification losses and five regression
losses whose margin is read as a probability - are trained with the same trees and
rounds by ``jaxboost.compare``, which hands them to ``train_many``: the data is binned
once and one program grows the eight models' trees together. The table shows each
model's test metrics (final and best round); the figure, its test AUC and log loss
round by round.

    python examples/compare_losses.py [--rounds 150] [--out compare_output] [--check]

``--check`` also trains the eight models one ``train`` call at a time, and prints both
wall times and the largest difference between the two ways' test predictions.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import jaxboost
import objectives as O
from jaxboost.datasets import load_breast_cancer

LOSSES = {
    "logistic": O.logistic,
    "exponential": O.exponential,
    "focal(gamma=2)": O.focal(gamma=2.0),
    "squared": O.squared,
    "huber(delta=0.5)": O.huber(delta=0.5),
    "pseudo_huber": O.pseudo_huber,
    "log_cosh": O.log_cosh,
    "absolute": O.absolute,
}
METRICS = ["auc", "logloss", "accuracy"]
TREES = dict(max_depth=3, learning_rate=0.1)


def split(y, test_fraction=0.3, seed=0):
    """Stratified ``(train, test)`` indices."""
    rng = np.random.default_rng(seed)
    parts = [rng.permutation(np.flatnonzero(y == c)) for c in np.unique(y)]
    n_test = [int(round(test_fraction * p.size)) for p in parts]
    test = np.sort(np.concatenate([p[:k] for p, k in zip(parts, n_test)]))
    train = np.sort(np.concatenate([p[k:] for p, k in zip(parts, n_test)]))
    return train, test


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=150)
    ap.add_argument("--out", default="compare_output", help="folder for the figure")
    ap.add_argument(
        "--check", action="store_true", help="also train the models one train() call at a time"
    )
    args = ap.parse_args(argv)

    X, y, _ = load_breast_cancer()
    tr, te = split(y)
    print(
        f"{len(LOSSES)} losses, {tr.size} training rows, {te.size} test rows, "
        f"{args.rounds} rounds, depth {TREES['max_depth']}"
    )

    t0 = time.perf_counter()
    cmp = jaxboost.compare(
        LOSSES,
        X[tr],
        y[tr],
        eval_set={"test": (X[te], y[te])},
        metrics=METRICS,
        n_rounds=args.rounds,
        **TREES,
    )
    together = time.perf_counter() - t0
    print(cmp)
    print(f"\ntrained together (train_many) and evaluated in {together:.1f} s")

    if args.check:
        t0 = time.perf_counter()
        diff = 0.0
        for label, obj in LOSSES.items():
            alone = jaxboost.train(obj, X[tr], y[tr], n_rounds=args.rounds, verbose=False, **TREES)
            diff = max(
                diff,
                float(
                    np.max(
                        np.abs(
                            alone.predict(X[te], output_margin=True)
                            - cmp.boosters[label].predict(X[te], output_margin=True)
                        )
                    )
                ),
            )
        print(
            f"one train() call per loss: {time.perf_counter() - t0:.1f} s; largest "
            f"difference of test margins: {diff:.1e}"
        )

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed: figure skipped")
        return 0
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "eight_losses.png")
    cmp.plot(path, metrics=["auc", "logloss"], data="test")
    print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
