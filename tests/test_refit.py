"""Leaf refit (jaxboost.engine.refit) against closed forms computed in NumPy.

One tree shape (depth 2: nodes 0 and 1 split, leaves 2, 3, 4 hold rows, leaves 5 and 6
hold none) and 40 rows everywhere.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxboost.engine.refit import refit_newton, refit_quantile
from jaxboost.engine.split import TreeHyper

N, M = 40, 7
IS_LEAF = np.array([False, False, True, True, True, True, True])
START = np.array([9.0, 9.0, 0.3, -0.2, 0.1, 0.7, -0.4], np.float32)  # values before refit


def dyn(eta=1.0, lam=0.0, mds=0.0):
    return TreeHyper(*(np.float32(v) for v in (eta, lam, 0.0, 0.0, 0.0, mds)))


def squared(y, f):
    return 0.5 * (y - f) ** 2


def poisson(y, f):  # exp(f) - y f: the leaf minimiser is log(sum w y / sum w exp(f))
    return jnp.exp(f) - y * f


_newton = {loss: jax.jit(functools.partial(refit_newton, loss=loss)) for loss in (squared, poisson)}
_quantile = {alpha: jax.jit(functools.partial(refit_quantile, alpha=alpha)) for alpha in (0.5, 0.2)}


def rows(seed):
    rng = np.random.default_rng(seed)
    leaf = rng.choice([2, 3, 4], size=N).astype(np.int32)
    y = rng.normal(size=N).astype(np.float32)
    margin = rng.normal(scale=0.5, size=N).astype(np.float32)
    w = (rng.integers(1, 9, size=N) / 4).astype(np.float32)  # dyadic: exact sums
    w[:3] = 0.0  # padding rows
    return leaf, y, margin, w


def tree():
    return dict(value=START.copy(), is_leaf=IS_LEAF.copy())


def newton(loss, leaf, y, margin, w, d):
    out = _newton[loss](tree(), leaf, y=y, margin=margin, w=w, dyn=d)
    return np.asarray(out["value"])


def test_newton_refit_of_squared_error_is_the_regularised_mean_residual():
    leaf, y, margin, w = rows(0)
    r = (y - margin).astype(np.float64)
    lam, eta = 2.0, 0.5
    # One Newton step solves the quadratic exactly: v = sum w r / (sum w + lambda).
    v = np.array(
        [(w[leaf == k] * r[leaf == k]).sum() / (w[leaf == k].sum() + lam) for k in (2, 3, 4)]
    )
    got = newton(squared, leaf, y, margin, w, dyn(eta=eta, lam=lam))
    np.testing.assert_allclose(got[[2, 3, 4]], eta * v, rtol=1e-5, atol=1e-6)
    # Split nodes and leaves without rows keep their values.
    np.testing.assert_array_equal(got[[0, 1, 5, 6]], START[[0, 1, 5, 6]])
    # max_delta_step clips v before the learning rate.
    got = newton(squared, leaf, y, margin, w, dyn(eta=eta, lam=lam, mds=0.1))
    assert np.abs(v).max() > 0.1  # the clip matters for at least one leaf
    np.testing.assert_allclose(got[[2, 3, 4]], eta * np.clip(v, -0.1, 0.1), rtol=1e-5, atol=1e-6)


def test_newton_refit_converges_on_a_non_quadratic_loss():
    leaf, y, margin, w = rows(1)
    y = np.abs(y) + 0.5  # counts-like labels
    e = np.exp(margin.astype(np.float64))
    v = np.array(
        [
            np.log((w[leaf == k] * y[leaf == k]).sum() / (w[leaf == k] * e[leaf == k]).sum())
            for k in (2, 3, 4)
        ]
    )
    assert np.abs(v - START[[2, 3, 4]]).max() > 0.3  # far enough to need several steps
    got = newton(poisson, leaf, y, margin, w, dyn())
    # Plain Newton from these starts is within 1e-8 after 4 steps; the refit stops near
    # 1.6e-4 (see the xfail test below), so the tolerance here is loose.
    np.testing.assert_allclose(got[[2, 3, 4]], v, atol=5e-4)
    np.testing.assert_array_equal(got[[0, 1, 5, 6]], START[[0, 1, 5, 6]])


@pytest.mark.xfail(
    strict=True,
    reason="refit_newton's step search compares leaf losses "
    "summed from float32 per-row losses; below ~1e-4 from the optimum the "
    "differences are rounding noise and the leaf stops improving",
)
def test_newton_refit_reaches_newton_precision():
    leaf, y, margin, w = rows(1)
    y = np.abs(y) + 0.5
    e = np.exp(margin.astype(np.float64))
    v = np.array(
        [
            np.log((w[leaf == k] * y[leaf == k]).sum() / (w[leaf == k] * e[leaf == k]).sum())
            for k in (2, 3, 4)
        ]
    )
    got = newton(poisson, leaf, y, margin, w, dyn())
    np.testing.assert_allclose(got[[2, 3, 4]], v, rtol=1e-5)


def ref_quantile(r, w, alpha):
    """The smallest residual whose cumulative weight (sorted) reaches alpha * W."""
    order = np.argsort(r, kind="stable")
    cw = np.cumsum(w[order].astype(np.float64))
    return r[order][np.argmax(cw >= alpha * cw[-1])]


def pinball(q, r, w, alpha):
    d = r - q
    return float((w * np.where(d >= 0, alpha * d, (alpha - 1) * d)).sum())


@pytest.mark.parametrize("alpha", [0.5, 0.2])
def test_quantile_refit_is_the_weighted_quantile_of_each_leaf(alpha):
    eta = 0.5
    for seed in (2, 3):
        leaf, y, margin, w = rows(seed)
        if seed == 3:  # equal weights (exact hits of alpha * W), tied residuals
            w[3:] = 1.0
            y[5] = y[6] - margin[6] + margin[5]
            leaf[5] = leaf[6]
            for k in (2, 3, 4):  # even counts: alpha = 0.5 hits a cumulative weight
                if (w[leaf == k] > 0).sum() % 2:
                    w[np.flatnonzero((leaf == k) & (w > 0) & (np.arange(N) > 6))[0]] = 0.0
        r = y - margin
        out = _quantile[alpha](tree(), leaf, y=y, margin=margin, w=w, dyn=dyn(eta=eta))
        got = np.asarray(out["value"])
        for k in (2, 3, 4):
            sel = leaf == k
            q = ref_quantile(r[sel], w[sel], alpha)
            np.testing.assert_allclose(got[k], eta * q, rtol=1e-6)
            # ... which minimises the leaf's pinball loss over its own residuals.
            losses = [pinball(c, r[sel], w[sel], alpha) for c in r[sel]]
            assert pinball(q, r[sel], w[sel], alpha) <= min(losses) + 1e-6
        np.testing.assert_array_equal(got[[0, 1, 5, 6]], START[[0, 1, 5, 6]])


def xgboost_quantile(v, alpha):
    """XGBoost's unweighted ``common::Quantile``: interpolated between the sorted values,
    ``(n + 1) alpha`` convention, in float64 with the difference taken in float32."""
    v = np.sort(v.astype(np.float32))
    n = float(v.size)
    if alpha <= 1 / (n + 1):
        return v[0]
    if alpha >= n / (n + 1):
        return v[-1]
    x = alpha * (n + 1)
    k = int(np.floor(x) - 1)
    d = (x - 1) - k
    return np.float32(np.float64(v[k]) + d * np.float64(np.float32(v[k + 1] - v[k])))


_unweighted = jax.jit(functools.partial(refit_quantile, weighted=False))


@pytest.mark.parametrize("alpha", [0.5, 0.2, 0.03, 0.97])
def test_unweighted_quantile_refit_interpolates_as_xgboost(alpha):
    """Without sample weights each leaf gets XGBoost's interpolated quantile of its
    rows' residuals (an even count's median is the mean of the middle two); rows of
    weight 0 (padding) take no part, and leaves without rows keep their values.
    alpha 0.03 and 0.97 fall below 1/(n+1) and above n/(n+1) in the small leaf."""
    eta = 0.5
    leaf, y, margin, _ = rows(4)
    w = np.ones(N, np.float32)
    w[:3] = 0.0  # padding
    leaf[3:8] = 4  # leaf 4: rows 3..7 and whatever else the draw gave it
    r = (y - margin).astype(np.float32)
    out = _unweighted(tree(), leaf, y=y, margin=margin, w=w, dyn=dyn(eta=eta), alpha=alpha)
    got = np.asarray(out["value"])
    counts = []
    for k in (2, 3, 4):
        sel = (leaf == k) & (w > 0)
        counts.append(int(sel.sum()))
        np.testing.assert_array_equal(got[k], np.float32(xgboost_quantile(r[sel], alpha) * eta))
    assert {c % 2 for c in counts} == {0, 1}  # odd and even counts both seen
    np.testing.assert_array_equal(got[[0, 1, 5, 6]], START[[0, 1, 5, 6]])


def test_rows_sorted_by_leaf_and_residual_as_lexsort_does():
    """``sort_by_leaf``'s packed integer keys order rows as ``jnp.lexsort((r, leaf))``
    (ties in row order, -0.0 with 0.0, infinities at the ends), with the row packed into
    the key and, for many leaves, beside it."""
    from jaxboost.engine.refit import sort_by_leaf

    rng = np.random.default_rng(0)
    n = 3000
    r = rng.choice(np.float32([-np.inf, -2.5, -1e-30, -0.0, 0.0, 1e-30, 0.75, 3.0, np.inf]), n)
    r = np.where(rng.random(n) < 0.5, rng.normal(size=n).astype(np.float32), r)
    for n_leaves in (7, 2**22):  # 3 + 12 bits packed; 23 + 12 > 32 bits: beside
        leaf = rng.integers(0, min(n_leaves, 64), n).astype(np.int32) * (n_leaves // 64 or 1)
        with jax.enable_x64(True):
            got = np.asarray(jax.jit(sort_by_leaf, static_argnums=2)(leaf, r, n_leaves))
        want = np.lexsort((np.where(r == 0, 0.0, r), leaf))
        np.testing.assert_array_equal(got, want)
