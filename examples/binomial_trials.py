"""Successes out of trials: a binomial loss that reads the number of trials from y.

Synthetic batches (no real data set of this shape ships with an installed package):
each row is a batch of n trials (1 to 40: a seed tray, a clinic's patients, an ad's
impressions) of which k succeeded, with a success probability that depends on 4
features. A row's loss is the binomial negative log-likelihood at logit f,

    loss((k, n), f) = n * log(1 + e^f) - k * f,

and y is an (N, 2) array of (successes, trials), of which the loss receives one row.
Compared with:

* weighted: ``objectives.logistic`` on the proportion k / n with ``sample_weight=n``,
  the same loss written as a weighted one (the two models agree: the features have
  fewer distinct values than bins, so the weights, which move quantile bins, do not);
* unweighted: ``objectives.logistic`` on k / n, every batch counting the same whatever
  its number of trials.

It prints the held-out binomial deviance per trial of each.

Run: python examples/binomial_trials.py [--rounds 60] [--rows 4000]
"""

import argparse

import jax.numpy as jnp
import numpy as np

import jaxboost
import objectives


def batches(rng, n):
    # one decimal: fewer distinct values than bins, so bins do not depend on the weights
    X = rng.normal(size=(n, 4)).round(1).astype(np.float32)
    logit = 1.2 * X[:, 0] - 0.8 * np.abs(X[:, 1]) + 0.5 * X[:, 2] * (X[:, 3] > 0)
    # large batches where the success rate is low: ignoring n misleads
    trials = np.where(logit < 0, rng.integers(20, 41, size=n), rng.integers(1, 5, size=n))
    k = rng.binomial(trials, 1.0 / (1.0 + np.exp(-logit)))
    return X, np.stack([k, trials], axis=1).astype(np.float32), logit


def binomial(y, f):
    """Binomial NLL of one row's y = (successes, trials) at logit f."""
    k, n = y[0], y[1]
    return n * jnp.logaddexp(0.0, f) - k * f


def deviance_per_trial(y, p):
    k, n = np.float64(y[:, 0]), np.float64(y[:, 1])
    p = np.clip(np.float64(p), 1e-12, 1 - 1e-12)
    ll = k * np.log(p) + (n - k) * np.log1p(-p)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = k / n
        best = np.where(k > 0, k * np.log(q), 0.0) + np.where(n > k, (n - k) * np.log1p(-q), 0.0)
    return 2.0 * (best - ll).sum() / n.sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60, help="boosting rounds")
    ap.add_argument("--rows", type=int, default=4000, help="batches (half for training)")
    args = ap.parse_args()
    X, y, logit = batches(np.random.default_rng(1), args.rows)
    half = args.rows // 2
    tr, te = slice(0, half), slice(half, None)
    kw = dict(n_rounds=args.rounds, learning_rate=0.2, max_depth=3, verbose=False)
    print(
        f"{args.rows} batches, {y[:, 1].sum():.0f} trials, "
        f"{y[:, 0].sum() / y[:, 1].sum():.3f} success rate"
    )

    trials = jaxboost.train(binomial, X[tr], y[tr], link="sigmoid", **kw)
    share = y[:, 0] / y[:, 1]
    weighted = jaxboost.train(objectives.logistic, X[tr], share[tr], sample_weight=y[tr, 1], **kw)
    unweighted = jaxboost.train(objectives.logistic, X[tr], share[tr], **kw)
    truth = 1.0 / (1.0 + np.exp(-logit[te]))
    for name, bst in (("trials", trials), ("weighted", weighted), ("unweighted", unweighted)):
        p = bst.predict(X[te])  # probabilities: the sigmoid link
        print(
            f"{name:10s} held-out binomial deviance per trial: {deviance_per_trial(y[te], p):.5f}"
        )
    print(
        f"{'truth':10s} held-out binomial deviance per trial: "
        f"{deviance_per_trial(y[te], truth):.5f}"
    )
    gap = np.abs(trials.predict(X[te]) - weighted.predict(X[te])).max()
    print(f"trials vs weighted: max |probability difference| {gap:.2e}")


if __name__ == "__main__":
    main()
