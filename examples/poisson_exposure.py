"""Claim counts over exposure: Poisson regression with an offset, three ways.

Synthetic motor-insurance policies (no real data set with exposures ships with an
installed package, and downloads are not used here): each policy was insured for a
part of a year (its exposure t, in years) and filed c claims, Poisson with mean
``t * rate(x)``; the annual claim rate depends on the driver's age, the vehicle's power,
the area's density class and a bonus-malus level (all whole numbers, so jaxboost's bins
and XGBoost's exact splits coincide).

* offset: ``objectives.poisson`` with ``base_margin=np.log(t)``, margins per row that
  start each policy at its log exposure (XGBoost's ``count:poisson`` with
  ``base_margin``); ``predict(X)`` without offsets gives the annual rate;
* side data: a loss of your own, ``t * exp(f) - c * f``, that receives each policy's
  exposure in ``y``, a dict ``{"label": claims, "exposure": years}``;
* naive: ``objectives.poisson`` on the counts alone, as if every policy ran a full year.

It prints the held-out Poisson deviance per policy of each (the two exposure-aware
models agree; the naive one is worse), and, when xgboost is installed, the largest
difference between the offset model's training margins and XGBoost's.

Run: python examples/poisson_exposure.py [--rounds 100] [--rows 6000]
"""

import argparse
import importlib.util

import jax.numpy as jnp
import numpy as np

import jaxboost
import objectives


def policies(rng, n):
    """Features, claim counts, exposures (years) and the true annual rate."""
    age = rng.integers(18, 86, size=n)
    power = rng.integers(4, 16, size=n)
    density = rng.integers(0, 10, size=n)
    bonus = 50 + 5 * rng.integers(0, 21, size=n)
    X = np.stack([age, power, density, bonus], axis=1).astype(np.float32)
    log_rate = (
        -2.2
        + 0.9 * np.exp(-(age - 18) / 8.0)
        + 0.04 * (power - 4)
        + 0.07 * density
        + 0.012 * (bonus - 50)
    )
    years = rng.uniform(0.05, 1.0, size=n).astype(np.float32)
    claims = rng.poisson(years * np.exp(log_rate)).astype(np.float32)
    return X, claims, years, np.exp(log_rate)


def poisson_exposure(y, f):
    """Poisson NLL of one policy's claims at annual log rate f over its exposure."""
    return y["exposure"] * jnp.exp(f) - y["label"] * f


def deviance(c, mu):
    """Mean Poisson deviance of counts ``c`` at means ``mu``."""
    c, mu = np.float64(c), np.float64(mu)
    return 2.0 * np.mean(np.where(c > 0, c * np.log(np.where(c > 0, c, 1.0) / mu), 0.0) - (c - mu))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100, help="boosting rounds")
    ap.add_argument("--rows", type=int, default=6000, help="policies (2/3 for training)")
    args = ap.parse_args()
    X, c, t, rate = policies(np.random.default_rng(0), args.rows)
    n_train = 2 * args.rows // 3
    tr, te = slice(0, n_train), slice(n_train, None)
    o = np.log(t)
    kw = dict(
        n_rounds=args.rounds, learning_rate=0.1, max_depth=3, max_delta_step=0.0, verbose=False
    )
    print(f"{args.rows} policies, {c.sum():.0f} claims over {t.sum():.0f} policy-years")

    offset = jaxboost.train(
        objectives.poisson,
        X[tr],
        c[tr],
        base_margin=o[tr],
        eval_set={"test": (X[te], c[te])},
        eval_base_margin={"test": o[te]},
        **kw,
    )
    # base_margin=0.0 starts at log rate 0, as the offset model does (left out, the
    # intercept is fitted on the side data: the log of claims per policy-year).
    side = jaxboost.train(
        poisson_exposure,
        X[tr],
        {"label": c[tr], "exposure": t[tr]},
        link="exp",
        base_margin=0.0,
        **kw,
    )
    naive = jaxboost.train(objectives.poisson, X[tr], c[tr], **kw)

    rows = [
        ("offset", offset.predict(X[te], base_margin=o[te])),
        ("side data", t[te] * side.predict(X[te])),  # annual rate x exposure
        ("naive", naive.predict(X[te])),
    ]
    for name, mu in rows:
        print(f"{name:10s} held-out Poisson deviance per policy: {deviance(c[te], mu):.5f}")
    print(
        f"true rate  held-out Poisson deviance per policy: {deviance(c[te], t[te] * rate[te]):.5f}"
    )
    # offsets of 0 (exposure 1): the annual rate (without base_margin= the model warns
    # that it was trained with offsets and predicts at 0)
    annual = offset.predict(X[te], base_margin=np.zeros_like(o[te]))
    print(
        f"offset model: mean predicted annual rate {annual.mean():.4f} (true {rate[te].mean():.4f})"
    )
    gap = np.abs(
        offset.predict(X[tr], output_margin=True, base_margin=o[tr])
        - (side.predict(X[tr], output_margin=True) + o[tr])
    ).max()
    print(f"offset vs side-data model: max |training margin difference| {gap:.2e}")

    if importlib.util.find_spec("xgboost") is None:
        print("xgboost not installed: count:poisson comparison skipped")
        return
    import xgboost as xgb

    d = xgb.DMatrix(X[tr], label=c[tr], base_margin=o[tr])
    ref = xgb.train(
        dict(
            objective="count:poisson",
            tree_method="exact",
            eta=0.1,
            max_depth=3,
            max_delta_step=0.0,
            nthread=1,
        ),
        d,
        args.rounds,
    )
    diff = np.abs(
        ref.predict(d, output_margin=True)
        - offset.predict(X[tr], output_margin=True, base_margin=o[tr])
    ).max()
    print(f"xgboost count:poisson with base_margin: max |training margin difference| {diff:.2e}")


if __name__ == "__main__":
    main()
