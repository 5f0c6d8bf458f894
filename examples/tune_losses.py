"""Tune a loss's hyperparameter by its gradient, against a grid search.

A robust regression loss has a scale: the pseudo-Huber loss is quadratic for residuals
below ``delta`` and linear above. Which ``delta`` (and which ``reg_lambda``) gives the
smallest mean absolute error on held-out rows? A grid search answers with one full
training per grid point. ``jaxboost.tune`` answers with a few trainings: between them
it follows the gradient of the validation error in ``delta`` and ``reg_lambda``,
computed through the boosting run with its trees' splits held fixed
(``jaxboost.hypergrad``), and it retrains every ``regrow_every`` steps so that the
splits follow.

Data: scikit-learn's diabetes set (442 patients, 10 features, a disease-progression
score, shipped with scikit-learn), the score in standard units, split 60/20/20 into
training, validation and test rows.

    python examples/tune_losses.py            # 100 rounds, a 6 x 6 grid, 20 steps
    python examples/tune_losses.py --small    # 10 rounds, a 3 x 3 grid, 4 steps

``benchmarks/tuning.py`` runs the same comparison on larger real data sets, with
random and TPE search beside the grid.
"""

import argparse
import itertools
import time

import numpy as np
import optax
from sklearn.datasets import load_diabetes

import jaxboost
import objectives


def data(seed: int = 0):
    """``(train, val, test)`` pairs ``(X, y)``: float32, the score standardised."""
    X, y = load_diabetes(return_X_y=True)
    y = (y - y.mean()) / y.std()
    idx = np.random.default_rng(seed).permutation(len(y))
    a, b = int(0.6 * len(y)), int(0.8 * len(y))
    return [
        (X[i].astype(np.float32), y[i].astype(np.float32)) for i in (idx[:a], idx[a:b], idx[b:])
    ]


def mae(booster, X, y):
    return float(np.mean(np.abs(booster.predict(X) - y)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="a quick run (a few seconds)")
    small = ap.parse_args().small
    # refit=None: Newton leaf values, the models tune differentiates (the loss's default
    # refit would re-solve every leaf exactly, which the replay does not follow)
    train_kw = dict(
        n_rounds=10 if small else 100,
        max_depth=2 if small else 3,
        learning_rate=0.3 if small else 0.1,
        refit=None,
    )
    deltas = [0.1, 0.5, 2.0] if small else [0.1, 0.2, 0.5, 1.0, 2.0, 4.0]
    lambdas = [0.1, 1.0, 10.0] if small else [0.03, 0.1, 0.3, 1.0, 3.0, 10.0]
    steps, regrow_every = (4, 2) if small else (20, 5)
    (X, y), (X_val, y_val), (X_test, y_test) = data()
    print(f"diabetes: {len(y)} training, {len(y_val)} validation, {len(y_test)} test rows")

    # compile the training program once, outside the timings (both methods train)
    jaxboost.train(objectives.pseudo_huber, X, y, verbose=False, **train_kw)

    # the grid search: one full training per point
    t0 = time.perf_counter()
    grid = []
    for delta, lam in itertools.product(deltas, lambdas):
        bst = jaxboost.train(
            objectives.pseudo_huber.with_params(delta=delta),
            X,
            y,
            reg_lambda=lam,
            verbose=False,
            **train_kw,
        )
        grid.append((mae(bst, X_val, y_val), delta, lam, bst))
    grid_s = time.perf_counter() - t0
    g_val, g_delta, g_lam, g_bst = min(grid, key=lambda t: t[0])

    # tune: follow the hypergradient from delta = 1, reg_lambda = 1
    t0 = time.perf_counter()
    res = jaxboost.tune(
        objectives.pseudo_huber,
        X,
        y,
        X_val,
        y_val,
        params={"delta": 1.0, "reg_lambda": 1.0},
        val_loss="mae",
        steps=steps,
        regrow_every=regrow_every,
        optimizer=optax.adam(0.3),
        **train_kw,
    )
    tune_s = time.perf_counter() - t0
    start_val = res.history[0]["value"]

    print(
        f"\n{'method':8s} {'trainings':>9s} {'val MAE':>8s} {'test MAE':>8s} "
        f"{'seconds':>8s}  parameters"
    )
    print(
        f"{'grid':8s} {len(grid):9d} {g_val:8.4f} {mae(g_bst, X_test, y_test):8.4f} "
        f"{grid_s:8.2f}  delta={g_delta:.3g}, reg_lambda={g_lam:.3g}"
    )
    print(
        f"{'tune':8s} {res.n_trainings:9d} {mae(res.booster, X_val, y_val):8.4f} "
        f"{mae(res.booster, X_test, y_test):8.4f} {tune_s:8.2f}  "
        f"delta={res.params['delta']:.3g}, reg_lambda={res.params['reg_lambda']:.3g}"
    )
    print(f"\ntune's own value of its best run (the replay's): val MAE {res.value:.6f}")
    print(
        f"tune started at val MAE {start_val:.4f} (delta=1, reg_lambda=1) and took "
        f"{len(res.history)} gradient steps; its seconds include compiling its replay program "
        f"once (the training program was compiled before both timings)."
    )


if __name__ == "__main__":
    main()
