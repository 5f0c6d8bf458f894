"""Interval-censored times: an accelerated-failure-time (AFT) loss on (lower, upper].

Synthetic follow-up data (no real interval-censored data set ships with an installed
package): an event time T has log T = f(x) + sigma * e with e standard normal (a
log-normal AFT model), but T is only seen between two visits, lower < T <= upper. A
subject whose event came before the first visit has lower = 0 (left-censored); one
still event-free at the last visit has upper = inf (right-censored). The loss of a row
is the negative log-probability of its interval,

    loss(y, f) = -log( Phi((log upper - f) / sigma) - Phi((log lower - f) / sigma) ),

written in JAX below on log-CDFs (accurate in both tails), the open ends as limits, and
y is a dict {"lower": ..., "upper": ...} of which the loss receives one row. sigma is a
traced hyperparameter (``loss_params``). Compared with a naive squared loss on the log
of each interval's midpoint (the lower bound when open above), it prints the held-out
RMSE of each model's log time against the true log T, the interval negative
log-likelihood, and XGBoost's ``survival:aft`` (normal) when xgboost is installed.
The catalogue's ``objectives.aft`` is the same likelihood ready-made (normal, logistic
or extreme noise, XGBoost's clipping of g and h, accurate far in the tails); this
example writes it out as a loss of your own would be.

Run: python examples/interval_censored.py [--rounds 100] [--rows 4000]
"""

import argparse
import importlib.util

import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import norm

import jaxboost
import objectives

SIGMA = 0.5


def follow_up(rng, n):
    """Features, (lower, upper] intervals from visits, and the true log times."""
    X = rng.uniform(-2, 2, size=(n, 4)).astype(np.float32)
    log_t = 1.0 + 0.6 * X[:, 0] - 0.4 * np.sin(2 * X[:, 1]) + 0.3 * X[:, 2] * X[:, 3]
    T = np.exp(log_t + SIGMA * rng.normal(size=n))
    visits = np.cumsum(rng.uniform(0.5, 1.5, size=(n, 6)), axis=1)  # 6 visits each
    after = (visits < T[:, None]).sum(axis=1)  # visits before the event
    lower = np.where(after > 0, visits[np.arange(n), np.maximum(after - 1, 0)], 0.0)
    upper = np.where(after < 6, visits[np.arange(n), np.minimum(after, 5)], np.inf)
    return X, lower.astype(np.float32), upper.astype(np.float32), log_t


def interval_nll(y, f, *, sigma):
    """-log P(lower < T <= upper) for log T ~ Normal(f, sigma^2), one row.

    P = Phi(b) - Phi(a) with a, b the standardised log bounds, or, for an interval in the
    upper half (a > 0), the same mass as Phi(-a) - Phi(-b): the difference is always
    taken where Phi is small, so its log stays accurate in both tails. Open ends
    (lower = 0, upper = inf) enter as the limits Phi = 0 and 1, without a log of 0 or
    inf, so g and h stay finite.
    """
    lo, hi = y["lower"], y["upper"]
    has_lo, has_hi = lo > 0, jnp.isfinite(hi)
    a = (jnp.log(jnp.where(has_lo, lo, 1.0)) - f) / sigma
    b = (jnp.log(jnp.where(has_hi, hi, 1.0)) - f) / sigma
    flip = has_lo & (a > 0)
    top, top_open = jnp.where(flip, -a, b), jnp.where(flip, False, ~has_hi)
    bottom, bottom_open = jnp.where(flip, -b, a), jnp.where(flip, ~has_hi, ~has_lo)
    log_top = jnp.where(top_open, 0.0, norm.logcdf(jnp.where(top_open, 0.0, top)))
    log_bottom = jnp.where(bottom_open, -jnp.inf, norm.logcdf(jnp.where(bottom_open, 0.0, bottom)))
    return -(log_top + jnp.log1p(-jnp.exp(log_bottom - log_top)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100, help="boosting rounds")
    ap.add_argument("--rows", type=int, default=4000, help="subjects (half for training)")
    args = ap.parse_args()
    X, lo, hi, log_t = follow_up(np.random.default_rng(2), args.rows)
    half = args.rows // 2
    tr, te = slice(0, half), slice(half, None)
    print(
        f"{args.rows} subjects: {np.mean(lo == 0):.0%} left-censored, "
        f"{np.mean(np.isinf(hi)):.0%} right-censored, the rest in a visit interval"
    )
    kw = dict(n_rounds=args.rounds, learning_rate=0.1, max_depth=3, verbose=False)
    y = {"lower": lo, "upper": hi}
    y_tr, y_te = ({k: v[s] for k, v in y.items()} for s in (tr, te))
    aft = jaxboost.train(
        interval_nll,
        X[tr],
        y_tr,
        loss_params={"sigma": SIGMA},
        eval_set={"test": (X[te], y_te)},
        **kw,
    )
    mid = np.where(np.isinf(hi), lo, 0.5 * (lo + hi))
    naive = jaxboost.train(objectives.squared, X[tr], np.log(np.maximum(mid, 0.25))[tr], **kw)

    def report(name, f):
        rmse = np.sqrt(np.mean((f - log_t[te]) ** 2))
        nll = float(np.mean(interval_nll(y_te, jnp.asarray(f, jnp.float32), sigma=SIGMA)))
        print(f"{name:18s} held-out RMSE of log time {rmse:.4f}, interval NLL {nll:.4f}")

    report("aft (interval)", aft.predict(X[te]))
    report("naive (midpoint)", naive.predict(X[te]))
    report("true log time", log_t[te])
    print(f"aft: held-out mean loss after the last round {aft.history['test']['loss'][-1]:.4f}")
    if importlib.util.find_spec("xgboost") is None:
        print("xgboost not installed: survival:aft comparison skipped")
        return
    import xgboost as xgb

    d = xgb.DMatrix(X[tr])
    d.set_float_info("label_lower_bound", lo[tr])
    d.set_float_info("label_upper_bound", hi[tr])
    ref = xgb.train(
        dict(
            objective="survival:aft",
            aft_loss_distribution="normal",
            aft_loss_distribution_scale=SIGMA,
            eta=0.1,
            max_depth=3,
            tree_method="hist",
            nthread=1,
        ),
        d,
        args.rounds,
    )
    report("xgboost survival:aft", np.log(ref.predict(xgb.DMatrix(X[te]))))


if __name__ == "__main__":
    main()
