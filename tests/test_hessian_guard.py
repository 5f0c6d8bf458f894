"""Hessians that cannot help are never used silently (issue 15, item 2).

Losses whose Hessian is zero almost everywhere, negative, or (K x K) indefinite: the
defaults train a useful model, and a ``jaxboost.HessianWarning`` says what happened.
"""

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
from jaxboost.engine.autodiff import apply_hessian_policy, hessian_census, not_psd
from jaxboost.errors import LossError

N, F = 300, 4
KW = dict(n_rounds=20, max_depth=3, verbose=False)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, F)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.normal(size=N)).astype(np.float32)
    out = rng.random(N) < 0.1  # a few gross outliers
    y_out = np.where(out, y + rng.normal(0, 10, N), y).astype(np.float32)
    return X, y, y_out


def train_warned(*args, **kwargs):
    """``(booster, [HessianWarning messages])``."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        bst = jaxboost.train(*args, **kwargs)
    return bst, [str(w.message) for w in seen if issubclass(w.category, jaxboost.HessianWarning)]


def absolute(y, f):
    return jnp.abs(y - f)


def tukey(y, f, c=1.5):
    r = f - y
    return jnp.where(jnp.abs(r) <= c, c**2 / 6 * (1 - (1 - (r / c) ** 2) ** 3), c**2 / 6)


def coupled(y, f):
    """Two outputs, bounded below, with an indefinite Hessian near f0 = f1 = 0."""
    return (f[0] - y) ** 2 + (f[1] - y) ** 2 + 3.0 * jnp.tanh(f[0] * f[1])


def test_hessian_warning_is_public():
    assert issubclass(jaxboost.HessianWarning, UserWarning)
    assert "HessianWarning" in jaxboost.__all__


def test_zero_hessian_loss_switches_to_constant_with_a_warning(data):
    X, y, _ = data
    bst, msgs = train_warned(absolute, X, y, **KW)
    assert len(msgs) == 1
    assert "is 0 on every row at the start margin" in msgs[0]
    assert 'hessian="constant" and refit="newton"' in msgs[0]
    pred = bst.predict(X)
    assert np.std(pred) > 0.5  # not a constant model
    assert np.mean(np.abs(pred - y)) < 0.6 * np.mean(np.abs(np.median(y) - y))
    assert bst.train_state["hessian"] == "constant"
    # asked for explicitly, the exact (zero) Hessian is kept, and the warning says why
    # the model is constant
    bst, msgs = train_warned(absolute, X, y, hessian="exact", **KW)
    assert np.ptp(bst.predict(X)) == 0.0
    assert len(msgs) == 1 and "no row had positive curvature at the start margin" in msgs[0]
    assert 'hessian="clip"' in msgs[0] and 'refit="quantile"' in msgs[0]


def test_tukey_negative_hessian_is_clipped_and_reported(data):
    X, y, y_out = data
    tr, te = slice(0, 200), slice(200, None)
    bst, msgs = train_warned(tukey, X[tr], y_out[tr], **KW)
    # the share of negative h, by hand, at the start margin
    base = np.float32(bst.base_margin)
    h = jax.jit(jax.vmap(jax.hessian(tukey, argnums=1)))(
        jnp.asarray(y_out[tr]), jnp.full(200, base, jnp.float32)
    )
    n_neg = int(np.sum(np.asarray(h) < 0))
    assert 0 < n_neg < 200
    assert len(msgs) == 1, msgs
    m = re.search(
        r"h is negative on (\d+) of (\d+) rows \(([\d.]+)%\) at the start margin", msgs[0]
    )
    assert m is not None, msgs[0]
    assert (int(m.group(1)), int(m.group(2))) == (n_neg, 200)
    assert float(m.group(3)) == round(100 * n_neg / 200, 1)
    assert "raised to hessian_floor" in msgs[0] and 'hessian="constant"' in msgs[0]
    pred = bst.predict(X[te])
    assert np.all(np.isfinite(pred))
    rmse = np.sqrt(np.mean((pred - y[te]) ** 2))
    const = np.sqrt(np.mean((np.median(y_out[tr]) - y[te]) ** 2))
    assert rmse < 0.5 * const, (rmse, const)
    # refit "auto" became Newton refit because h was negative at the start: with Newton
    # leaves kept (refit=None) the floored rows make worse leaves (0.378 vs 0.315)
    assert 'refit="newton", switched on because h was negative' in msgs[0]
    kept, kept_msgs = train_warned(tukey, X[tr], y_out[tr], refit=None, **KW)
    assert len(kept_msgs) == 1 and "switched on" not in kept_msgs[0]
    assert rmse < np.sqrt(np.mean((kept.predict(X[te]) - y[te]) ** 2))
    # the exact Hessian, asked for, is used as it is (and said so)
    _, msgs = train_warned(tukey, X[tr], y_out[tr], hessian="exact", **KW)
    assert len(msgs) == 1 and "used as they are" in msgs[0]


def test_convex_losses_give_no_warning_and_keep_the_exact_hessian(data):
    X, y, _ = data

    def logistic(t, f):
        return jnp.logaddexp(0.0, f) - t * f

    yb = (y > 0).astype(np.float32)
    bst, msgs = train_warned(logistic, X, yb, **KW)
    ref, ref_msgs = train_warned(logistic, X, yb, hessian="exact", **KW)
    assert msgs == [] and ref_msgs == []
    np.testing.assert_array_equal(bst.predict(X), ref.predict(X))


def test_indefinite_vector_hessian_is_guarded(data):
    X, y, _ = data
    H = jax.jit(jax.hessian(coupled, argnums=1))(jnp.float32(0.0), jnp.zeros(2, jnp.float32))
    lam = np.asarray(jnp.linalg.eigvalsh(H))
    assert lam[0] < 0 < lam[1]  # indefinite
    kw = dict(n_outputs=2, multi_strategy="multi_output_tree", **KW)
    const = float(jnp.mean(jax.vmap(coupled)(jnp.asarray(y), jnp.zeros((N, 2)))))
    for hessian in ("exact", "auto", "clip"):
        try:
            bst, msgs = train_warned(coupled, X, y, hessian=hessian, **kw)
        except LossError as e:  # never: the guard keeps g and h finite
            pytest.fail(f"hessian={hessian!r}: {e}")
        pred = bst.predict(X)
        assert np.all(np.isfinite(pred)), hessian
        loss = float(jnp.mean(jax.vmap(coupled)(jnp.asarray(y), jnp.asarray(pred))))
        assert loss <= const + 1e-3, (hessian, loss, const)
        if hessian == "clip":
            assert msgs == []
            continue
        assert len(msgs) == 1, (hessian, msgs)
        assert "not positive semi-definite (K x K) on 300 of 300 rows" in msgs[0]
        if hessian == "exact":  # leaves of indefinite Hessian sums take damped steps
            assert "take damped steps" in msgs[0]
        else:
            assert "raised to hessian_floor" in msgs[0]
            assert loss < 0.7 * const, loss


def test_policy_and_census_helpers():
    h = jnp.array(
        [
            [[2.0, 3.0], [3.0, 2.0]],
            [[2.0, 1.0], [1.0, 2.0]],
            [[1.0, 1.0], [1.0, 1.0]],
            [[0.0, 0.0], [0.0, 0.0]],
        ]
    )
    assert np.asarray(not_psd(h)).tolist() == [True, False, False, False]
    np.testing.assert_allclose(
        np.linalg.eigvalsh(
            np.asarray(apply_hessian_policy(None, None, None, h, "clip_negative", 0.5)[0])
        ),
        [0.5, 5.0],
        rtol=1e-5,
    )
    out = np.asarray(apply_hessian_policy(None, None, None, h, "clip_negative", 0.5))
    np.testing.assert_array_equal(out[1:], np.asarray(h[1:]))  # PSD rows untouched
    g = jnp.ones((4, 2))
    assert np.asarray(hessian_census(g, h, jnp.ones(4, bool))).tolist() == [0, 1, 1, 4, 2]
    # one tree per output reads the diagonal: only negative diagonal entries count
    assert np.asarray(hessian_census(g, h, jnp.ones(4, bool), diagonal=True)).tolist() == [
        0,
        0,
        1,
        4,
        3,
    ]
