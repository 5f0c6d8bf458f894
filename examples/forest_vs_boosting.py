"""Newton boosting vs plain gradient boosting vs a random forest, on handwritten digits.

Seed 004 compares XGBoost, gradient boosting and random forests on the Olivetti faces
(a download); this runs the same comparison on scikit-learn's digits (1,797 8x8 images
of 10 classes, shipped with scikit-learn), all three with jaxboost and the softmax loss:

* Newton boosting (XGBoost's way): each tree fits the gradient g and Hessian h of the
  loss, leaves -G / (H + lambda);
* plain gradient boosting: the same, with ``hessian="constant"`` (h = 1: each leaf is a
  gradient step, -G / (n + lambda));
* a random forest: ``num_parallel_tree`` trees in one round at learning rate 1, each on
  its own bootstrap sample of the rows and a random subset of features per split.

It prints a table of held-out accuracy and training time (the first fit includes
compiling the program; "again" is a second, compiled fit).

    python examples/forest_vs_boosting.py            # 100 rounds, 100 trees per class
    python examples/forest_vs_boosting.py --small    # 5 rounds, 5 trees per class
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import jaxboost


def models(rounds: int, trees: int, depth: int, forest_depth: int) -> dict:
    """The three configurations: ``{name: train() arguments}``. The forest's trees are
    deeper than the boosted ones (averaging tames deep trees; boosting prefers shallow
    ones)."""
    boost = dict(n_rounds=rounds, learning_rate=0.3, max_depth=depth)
    return {
        "Newton boosting": boost,
        "gradient boosting": dict(boost, hessian="constant"),
        "random forest": dict(
            n_rounds=1,
            learning_rate=1.0,
            max_depth=forest_depth,
            num_parallel_tree=trees,
            bootstrap=True,
            colsample_bynode=0.25,
            reg_lambda=1e-5,
            min_child_weight=1e-3,
        ),
    }


def data():
    """Digits split 80/20 as the seed splits the faces: ``(X_train, X_test, y_train,
    y_test)``, float32 pixels and class labels 0..9."""
    X, y = load_digits(return_X_y=True)
    return train_test_split(
        X.astype(np.float32), y.astype(np.float32), test_size=0.2, random_state=1
    )


def fit(kwargs, X, y):
    return jaxboost.train("softmax", X, y, verbose=False, seed=1, **kwargs)


def accuracy(booster, X, y) -> float:
    return float(np.mean(np.argmax(booster.predict(X), axis=1) == y))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--small",
        action="store_true",
        help="5 rounds of depth 3, 5 forest trees per class of depth 4, one "
        "fit each (what the test suite runs)",
    )
    ap.add_argument("--rounds", type=int, default=None, help="boosting rounds (100)")
    ap.add_argument("--trees", type=int, default=None, help="forest trees per class (100)")
    ap.add_argument("--depth", type=int, default=None, help="depth of the boosted trees (4)")
    ap.add_argument(
        "--forest-depth", type=int, default=None, help="depth of the forest's trees (6)"
    )
    args = ap.parse_args()
    rounds = args.rounds or (5 if args.small else 100)
    trees = args.trees or (5 if args.small else 100)
    depth = args.depth or (3 if args.small else 4)
    forest_depth = args.forest_depth or (4 if args.small else 6)
    X_train, X_test, y_train, y_test = data()
    print(
        f"digits: {len(X_train)} training and {len(X_test)} test images, 64 pixels, "
        f"10 classes (chance: 10 % accuracy)"
    )
    print(f"{'model':<20}{'trees':>7}{'accuracy':>10}{'fit s':>8}{'again s':>9}")
    for name, kw in models(rounds, trees, depth, forest_depth).items():
        t0 = time.perf_counter()
        bst = fit(kw, X_train, y_train)
        first = time.perf_counter() - t0
        again = "-"
        if not args.small:  # a second fit, compiled: the training time itself
            t0 = time.perf_counter()
            fit(kw, X_train, y_train)
            again = f"{time.perf_counter() - t0:.2f}"
        print(
            f"{name:<20}{bst.trees.n_trees:>7}{accuracy(bst, X_test, y_test):>10.4f}"
            f"{first:>8.2f}{again:>9}"
        )
    print(
        "trees: 10 per boosting round (one per class); the forest is one round of "
        "10 x num_parallel_tree trees"
    )


if __name__ == "__main__":
    main()
