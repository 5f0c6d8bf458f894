"""Table-driven checks of the ``objectives`` catalogue.

For every entry (and a few hyperparameter variants): the loss runs jitted and vmapped;
autodiff g and h match finite differences and closed forms written here independently
of the catalogue; h has the sign the entry claims; the expected Hessian is positive and
agrees with the mean exact Hessian under the model (Fisher identity); label checks,
hashing and links behave.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import objectives

N = 48
EPS = 1e-5
METRICS = {
    "rmse",
    "mae",
    "logloss",
    "error",
    "auc",
    "mlogloss",
    "merror",
    "poisson_nll",
    "gamma_deviance",
    "objective",
}
REQUIRED = {
    "squared",
    "logistic",
    "exponential",
    "absolute",
    "huber",
    "pseudo_huber",
    "log_cosh",
    "quantile",
    "poisson",
    "gamma",
    "tweedie",
    "focal",
    "cauchy",
    "softmax",
    "gaussian_nll",
    "aft",
}


def sig(f):
    return 1.0 / (1.0 + np.exp(-f))


# --- samplers: valid (y, pred) rows on each loss's domain, away from kinks -------------------


def residual_rows(rng, lo_hi_pairs):
    """y ~ N(0, 2); pred = y + r with |r| drawn from the given [lo, hi] bands."""
    y = rng.normal(0.0, 2.0, N)
    bands = [rng.uniform(lo, hi, N) for lo, hi in lo_hi_pairs]
    pick = rng.integers(0, len(bands), N)
    mag = np.choose(pick, bands)
    r = mag * rng.choice([-1.0, 1.0], N)
    return y, y + r


def binary_rows(rng, fractional, span=6.0):
    y = rng.integers(0, 2, N).astype(np.float64)
    if fractional:
        y[::5] = rng.uniform(0.05, 0.95, y[::5].shape)
    return y, rng.uniform(-span, span, N)


def s_squared(rng, hp, k):
    return residual_rows(rng, [(0.0, 4.0)])


def s_kinked(rng, hp, k):  # absolute / quantile: stay away from r = 0
    return residual_rows(rng, [(0.05, 4.0)])


def s_huber(rng, hp, k):  # both regions, away from r = 0 and |r| = delta
    d = hp["delta"]
    return residual_rows(rng, [(0.05 * d, 0.99 * d), (1.01 * d, 4.0 * d)])


def s_scaled(key):
    def sample(rng, hp, k):
        s = hp[key]
        return residual_rows(rng, [(0.0, s), (s, 5.0 * s)])

    return sample


def s_logistic(rng, hp, k):
    return binary_rows(rng, fractional=True)


def s_exponential(rng, hp, k):
    return binary_rows(rng, fractional=False, span=4.0)


def s_focal(rng, hp, k):
    return binary_rows(rng, fractional=True, span=8.0)


def s_poisson(rng, hp, k):
    y = rng.poisson(3.0, N).astype(np.float64)
    return y, rng.uniform(-2.0, 3.0, N)


def s_gamma(rng, hp, k):
    return rng.uniform(0.1, 5.0, N), rng.uniform(-2.0, 2.0, N)


def s_tweedie(rng, hp, k):
    y = rng.gamma(2.0, 1.5, N) * (rng.uniform(size=N) < 0.6)
    return y, rng.uniform(-2.0, 2.0, N)


def s_aft(rng, hp, k):
    """Event times (one label per row): log T within a few sigma of the margin."""
    f = rng.uniform(-1.0, 1.5, N)
    return np.exp(f + hp["sigma"] * rng.uniform(-2.0, 2.0, N)), f


def s_softmax(rng, hp, k):
    return rng.integers(0, k, N).astype(np.float64), rng.normal(0.0, 2.0, (N, k))


def s_gaussian(rng, hp, k):
    y = rng.normal(0.0, 2.0, N)
    pred = np.stack([rng.normal(0.0, 2.0, N), rng.uniform(-1.0, 1.0, N)], axis=1)
    return y, pred


# --- closed forms (loss, g, h), written from the docstrings (numpy, float64) ---------------


def c_squared(y, f):
    return 0.5 * (y - f) ** 2, f - y, np.ones_like(f)


def c_logistic(y, f):
    p = sig(f)
    return -y * np.log(p) - (1 - y) * np.log(1 - p), p - y, p * (1 - p)


def c_exponential(y, f):
    yt = 2 * y - 1
    e = np.exp(-yt * f)
    return e, -yt * e, e  # y in {0, 1}: yt^2 = 1


def c_absolute(y, f):
    return np.abs(f - y), np.sign(f - y), np.zeros_like(f)


def c_huber(y, f, delta):
    r = f - y
    inside = np.abs(r) < delta
    loss = np.where(inside, 0.5 * r**2, delta * (np.abs(r) - 0.5 * delta))
    return loss, np.clip(r, -delta, delta), inside.astype(float)


def c_pseudo_huber(y, f, delta):
    r = f - y
    u = 1 + (r / delta) ** 2
    return delta**2 * (np.sqrt(u) - 1), r / np.sqrt(u), u**-1.5


def c_log_cosh(y, f):
    t = np.tanh(f - y)
    return np.log(np.cosh(f - y)), t, 1 - t * t


def c_quantile(y, f, alpha):
    u = y - f
    loss = np.where(u >= 0, alpha * u, (alpha - 1) * u)
    return loss, np.where(f > y, 1 - alpha, -alpha), np.zeros_like(f)


def c_cauchy(y, f, scale):
    r = f - y
    u = (r / scale) ** 2
    return 0.5 * scale**2 * np.log(1 + u), r / (1 + u), (1 - u) / (1 + u) ** 2


def c_poisson(y, f, max_delta_step=0.0):  # h: XGBoost's count:poisson curvature
    return np.exp(f) - y * f, np.exp(f) - y, np.exp(f + max_delta_step)


def c_gamma(y, f):
    return y * np.exp(-f) + f, 1 - y * np.exp(-f), y * np.exp(-f)


def c_tweedie(y, f, power):
    p = power
    loss = -y * np.exp((1 - p) * f) / (1 - p) + np.exp((2 - p) * f) / (2 - p)
    g = -y * np.exp((1 - p) * f) + np.exp((2 - p) * f)
    h = (p - 1) * y * np.exp((1 - p) * f) + (2 - p) * np.exp((2 - p) * f)
    return loss, g, h


def c_aft(y, f, sigma, distribution, clip):
    """An event at y: -log of T's density, z = (log y - f) / sigma (clip leaves these
    rows alone: |g| and h stay below 15)."""
    z = (np.log(y) - f) / sigma
    if distribution == "normal":
        nll_z, dz, dzz = 0.5 * z * z + 0.5 * np.log(2 * np.pi), z, np.ones_like(z)
    elif distribution == "logistic":
        F = sig(z)
        nll_z, dz, dzz = z + 2 * np.log1p(np.exp(-z)), 2 * F - 1, 2 * F * (1 - F)
    else:  # extreme: log p = z - e^z
        nll_z, dz, dzz = np.exp(z) - z, np.exp(z) - 1, np.exp(z)
    return nll_z + np.log(sigma * y), -dz / sigma, dzz / sigma**2


def c_focal(y, f, gamma):
    g_, p = gamma, sig(f)
    q = 1 - p
    lp, lq = np.log(p), np.log(q)
    loss = -y * q**g_ * lp - (1 - y) * p**g_ * lq
    g1 = q**g_ * (g_ * p * lp - q)
    g0 = p**g_ * (p - g_ * q * lq)
    h1 = p * q**g_ * (g_ * lp * (q - g_ * p) + (2 * g_ + 1) * q)
    h0 = q * p**g_ * (g_ * lq * (p - g_ * q) + (2 * g_ + 1) * p)
    return loss, y * g1 + (1 - y) * g0, y * h1 + (1 - y) * h0


def c_softmax(y, f, n_classes=None, curvature="exact"):
    p = np.exp(f) / np.exp(f).sum(axis=1, keepdims=True)
    onehot = np.eye(f.shape[1])[y.astype(int)]
    H = np.einsum("nk,kl->nkl", p, np.eye(f.shape[1])) - np.einsum("nk,nl->nkl", p, p)
    return -np.log((p * onehot).sum(axis=1)), p - onehot, H


def e_softmax(y, f, n_classes=None, curvature="exact"):
    """The h the trees see under ``curvature`` (exact: the Hessian itself)."""
    _, g, H = c_softmax(y, f)
    if curvature == "exact":
        return H
    p = g + np.eye(f.shape[1])[y.astype(int)]
    d = 2 * p * (1 - p) if curvature == "xgboost" else np.abs(g)
    return np.einsum("nk,kl->nkl", np.maximum(d, 1e-16), np.eye(f.shape[1]))


def c_gaussian(y, f):
    mu, s = f[:, 0], f[:, 1]
    sigma = np.exp(s)
    z = (y - mu) / sigma
    loss = -np.log(np.exp(-0.5 * z * z) / (np.sqrt(2 * np.pi) * sigma))  # the Gaussian NLL
    g = np.stack([-z / sigma, 1 - z * z], axis=1)
    H = np.empty((len(y), 2, 2))
    H[:, 0, 0] = 1 / sigma**2
    H[:, 0, 1] = H[:, 1, 0] = 2 * z / sigma
    H[:, 1, 1] = 2 * z * z
    return loss, g, H


# --- draws of y from the model at a margin (for the Fisher identity) -----------------------


def m_poisson(rng, f, hp, n):
    return rng.poisson(np.exp(f), n).astype(np.float64)


def m_gamma(rng, f, hp, n):
    return rng.gamma(2.0, np.exp(f) / 2.0, n)


def m_tweedie(rng, f, hp, n):
    p, mu = hp["power"], np.exp(f)
    lam = mu ** (2 - p) / (2 - p)  # dispersion 1
    shape, scale = (2 - p) / (p - 1), (p - 1) * mu ** (p - 1)
    counts = rng.poisson(lam, n)
    return np.where(counts > 0, rng.gamma(np.maximum(counts, 1) * shape, scale), 0.0)


def m_cauchy(rng, f, hp, n):
    return f + hp["scale"] * rng.standard_cauchy(n)


def m_gaussian(rng, f, hp, n):
    return rng.normal(f[0], np.exp(f[1]), n)


@dataclasses.dataclass(frozen=True)
class Spec:
    sample: Callable
    closed: Callable
    good: Optional[list] = None  # labels the check accepts (None: no check)
    bad: Optional[list] = None  # one bad label at row 2 among good ones
    model: Optional[Callable] = None  # y ~ model(margin), for expected_hessian
    model_margin: object = 0.5
    engine_h: Optional[Callable] = None  # the entry's grad_hess h, when not the Hessian


SPECS = {
    "squared": Spec(s_squared, c_squared),
    "logistic": Spec(s_logistic, c_logistic, [0, 1, 0.3, 1], [0, 1, 1.5, 0]),
    "exponential": Spec(s_exponential, c_exponential, [0, 1, 1, 0], [0, 1, 0.5, 0]),
    "absolute": Spec(s_kinked, c_absolute),
    "huber": Spec(s_huber, c_huber),
    "pseudo_huber": Spec(s_scaled("delta"), c_pseudo_huber),
    "log_cosh": Spec(s_squared, c_log_cosh),
    "quantile": Spec(s_kinked, c_quantile),
    "cauchy": Spec(s_scaled("scale"), c_cauchy, model=m_cauchy, model_margin=0.7),
    "poisson": Spec(s_poisson, c_poisson, [0, 3, 0.5, 7], [0, 3, -1, 7], model=m_poisson),
    "gamma": Spec(s_gamma, c_gamma, [0.1, 3, 0.5, 7], [0.1, 3, 0.0, 7], model=m_gamma),
    "tweedie": Spec(s_tweedie, c_tweedie, [0, 3, 0.5, 7], [0, 3, -0.5, 7], model=m_tweedie),
    "focal": Spec(s_focal, c_focal, [0, 1, 0.3, 1], [0, 1, -0.2, 0]),
    "softmax": Spec(s_softmax, c_softmax, [0, 1, 2, 2], [0, 1, 1.5, 2], engine_h=e_softmax),
    "gaussian_nll": Spec(s_gaussian, c_gaussian, model=m_gaussian, model_margin=(0.3, -0.4)),
    "aft": Spec(s_aft, c_aft, [0.5, 3, 1, 7], [0.5, 3, 0.0, 7]),
}

VARIANTS = [
    objectives.huber(delta=0.5),
    objectives.pseudo_huber(delta=3.0),
    objectives.quantile(alpha=0.9),
    objectives.cauchy(scale=2.0),
    objectives.tweedie(power=1.2),
    objectives.focal(gamma=0.0),
    objectives.softmax(n_classes=4),
    objectives.softmax(curvature="xgboost"),
    objectives.softmax(n_classes=3, curvature="abs_residual"),
    objectives.aft(distribution="logistic", sigma=0.7),
    objectives.aft(distribution="extreme", sigma=1.5, clip=False),
]
CASES = list(objectives.CATALOGUE.values()) + VARIANTS


def case_id(obj):
    return repr(obj).removeprefix("objectives.")


def n_out(obj):
    return obj.outputs if obj.outputs is not None else 3


def rows(obj, seed=0):
    hp = obj.hyperparameters
    y, f = SPECS[obj.name].sample(np.random.default_rng(seed), hp, n_out(obj))
    return np.asarray(y, np.float64), np.asarray(f, np.float64)


def closed(obj, y, f):
    return SPECS[obj.name].closed(y, f, **obj.hyperparameters)


def expect_negative_h(obj):
    """An ``"any"`` entry must show a negative h somewhere (focal only when gamma > 0)."""
    return obj.h_sign == "any" and not (obj.name == "focal" and obj.hyperparameters["gamma"] == 0)


@functools.lru_cache(maxsize=None)
def derivatives_fn(obj):
    """One jitted, vmapped ``(y, f) -> (loss, g, h)`` per objective (h is (K, K) per row
    for vector outputs); float64 when called under ``jax.enable_x64``."""

    def one(y, f):
        return obj(y, f), jax.grad(obj, argnums=1)(y, f), jax.hessian(obj, argnums=1)(y, f)

    return jax.jit(jax.vmap(one))


def autodiff64(obj, y, f):
    """Loss, g and h in float64."""
    with jax.enable_x64(True):
        out = derivatives_fn(obj)(jnp.asarray(y, jnp.float64), jnp.asarray(f, jnp.float64))
        return tuple(np.asarray(a) for a in out)


@functools.lru_cache(maxsize=None)
def domain_derivatives(obj):
    """``rows(obj)`` and their autodiff loss, g, h (cached: several tests use them)."""
    y, f = rows(obj)
    return y, f, *autodiff64(obj, y, f)


def finite_differences(obj, y, f):
    """Central differences of the loss (-> g) and of the autodiff g (-> h), float64."""
    n = f.shape[0]
    steps = [EPS] if f.ndim == 1 else list(EPS * np.eye(f.shape[1]))
    fs = np.concatenate([f + s for s in steps] + [f - s for s in steps])
    ys = np.tile(y, 2 * len(steps))
    lo, gr, _ = autodiff64(obj, ys, fs)
    lo = lo.reshape(2, len(steps), n)
    gr = gr.reshape((2, len(steps)) + f.shape)
    g = (lo[0] - lo[1]) / (2 * EPS)  # (K or 1, N)
    h = (gr[0] - gr[1]) / (2 * EPS)  # (K or 1, N, [K])
    if f.ndim == 1:
        return g[0], h[0]
    return g.T, np.moveaxis(h, 0, 2)  # (N, K), (N, K, K): h[n, i, j] = dg_i / df_j


def diagonal(h):
    return h if h.ndim == 1 else np.diagonal(h, axis1=1, axis2=2)


# --- the catalogue itself ------------------------------------------------------------------


def test_catalogue_is_complete_and_consistent():
    cat = objectives.CATALOGUE
    assert REQUIRED <= set(cat)
    assert set(SPECS) == set(cat), "every catalogue entry needs a spec in this test"
    for name, obj in cat.items():
        assert isinstance(obj, objectives.Objective)
        assert obj.name == name
        assert getattr(objectives, name) is obj and name in objectives.__all__
        assert obj.metric in METRICS
        doc = obj.loss.__doc__ or ""
        assert ">>> " in doc, name
        assert f'hessian="{obj.hessian}"' in doc, name
        if obj.refit is not None:
            assert f'refit="{obj.refit}"' in doc, name
        if obj.h_sign == "any":
            assert "negative" in doc, name
        assert name in objectives.__doc__  # the module's table lists it
    for link in ("identity", "sigmoid", "softmax_link"):
        assert callable(getattr(objectives, link))


# --- 1. jit(vmap) on the domain, float32 and finite, also at extreme margins ---------------


@pytest.mark.parametrize("obj", CASES, ids=case_id)
def test_loss_runs_jitted_vmapped_and_finite(obj):
    y, f = rows(obj)
    out = jax.jit(jax.vmap(obj))(y.astype(np.float32), f.astype(np.float32))
    assert out.shape == (N,) and out.dtype == jnp.float32
    assert np.all(np.isfinite(np.asarray(out)))
    # Extreme margins (float32): loss, g and h stay finite.
    sign = np.random.default_rng(1).choice([-30.0, 30.0], f.shape)
    f32, y32 = jnp.asarray(sign, jnp.float32), jnp.asarray(y, jnp.float32)
    for name, a in zip(("loss", "g", "h"), derivatives_fn(obj)(y32, f32)):
        assert a.dtype == jnp.float32 and np.all(np.isfinite(np.asarray(a))), name


# --- 2. autodiff equals finite differences (float64) ----------------------------------------


@pytest.mark.parametrize("obj", CASES, ids=case_id)
def test_autodiff_matches_finite_differences(obj):
    y, f, _, g, h = domain_derivatives(obj)
    g_fd, h_fd = finite_differences(obj, y, f)
    np.testing.assert_allclose(g, g_fd, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h, h_fd, rtol=1e-5, atol=1e-5)


# --- 3. closed forms (from the docstrings, written here): loss values, g and h --------------------


@pytest.mark.parametrize("obj", CASES, ids=case_id)
def test_closed_forms_match_autodiff(obj):
    y, f, loss, g, h = domain_derivatives(obj)
    loss_c, g_c, h_c = closed(obj, y, f)
    assert loss.shape == y.shape and g.shape == f.shape and h.shape == f.shape + f.shape[1:]
    np.testing.assert_allclose(loss, loss_c, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g, g_c, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h, h_c, rtol=1e-6, atol=1e-6)
    if obj.grad_hess is not None:  # the entry's own closed form (float32, engine use)
        gh = jax.jit(jax.vmap(obj.row_grad_hess()))
        g32, h32 = gh(jnp.asarray(y, jnp.float32), jnp.asarray(f, jnp.float32))
        f32 = f.astype(np.float32).astype(np.float64)
        loss_c, g_c, h_c = closed(obj, y, f32)
        engine_h = SPECS[obj.name].engine_h
        if engine_h is not None:  # a documented curvature other than the Hessian
            h_c = engine_h(y, f32, **obj.hyperparameters)
        np.testing.assert_allclose(np.asarray(g32), g_c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(h32), h_c, rtol=1e-5, atol=1e-6)


# --- 4. h has the claimed sign ------------------------------------------------------------


@pytest.mark.parametrize("obj", CASES, ids=case_id)
def test_hessian_sign_is_as_claimed(obj):
    *_, h = domain_derivatives(obj)
    d = diagonal(h)
    if obj.h_sign == "positive":
        assert np.all(d > 0)
    elif obj.h_sign == "nonnegative":
        assert np.all(d >= 0)
        # (aft: h = 0 only on the interval (0, inf], not an event time; test_aft.py)
        if obj.name not in ("gaussian_nll", "aft"):
            assert np.any(d == 0), "claims only nonnegative: some sampled h should be 0"
    else:
        assert obj.h_sign == "any"
    if expect_negative_h(obj):
        assert np.any(d < 0), "h_sign 'any' but no negative h on the domain sample"


def test_focal_with_gamma_zero_is_logistic():
    y, f = rows(objectives.logistic)
    a = autodiff64(objectives.focal(gamma=0.0), y, f)
    b = autodiff64(objectives.logistic, y, f)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
    assert np.all(a[2] > 0)


def test_quantile_at_one_half_is_half_the_absolute_loss():
    y, f = rows(objectives.absolute)
    a = autodiff64(objectives.quantile(alpha=0.5), y, f)
    b = autodiff64(objectives.absolute, y, f)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, 0.5 * v, rtol=1e-12, atol=1e-12)


def test_subgradients_at_zero_residual():
    # XGBoost's conventions: absolute error sign(0) = 0; quantile g = 1 - alpha at f = y
    # (reg:quantileerror's pred - y >= 0 branch); huber and the smooth ones: h = 1 at r = 0
    for obj, g0, h0 in (
        (objectives.absolute, 0.0, 0.0),
        (objectives.quantile, 0.5, 0.0),
        (objectives.quantile(alpha=0.9), 0.1, 0.0),
        (objectives.huber, 0.0, 1.0),
        (objectives.log_cosh, 0.0, 1.0),
        (objectives.pseudo_huber, 0.0, 1.0),
    ):
        _, g, h = autodiff64(obj, np.array([2.0]), np.array([2.0]))
        assert g[0] == pytest.approx(g0) and h[0] == pytest.approx(h0), obj


# --- 5. expected Hessian: positive (definite) and the mean exact h under the model --------

EXPECTED = [o for o in CASES if o.expected_hessian is not None]


def test_expected_hessian_entries():
    names = {o.name for o in EXPECTED}
    assert {"cauchy", "gaussian_nll"} <= names
    assert all(o.hessian != "expected" or o.expected_hessian is not None for o in CASES)


@pytest.mark.parametrize("obj", EXPECTED, ids=case_id)
def test_expected_hessian_positive_and_fisher_identity(obj):
    y, f = rows(obj)
    with jax.enable_x64(True):
        e = np.asarray(jax.vmap(obj.row_expected_hessian())(jnp.asarray(y), jnp.asarray(f)))
    k = obj.outputs
    if k == 1:
        assert e.shape == (N,) and np.all(e > 0)
    else:
        assert e.shape == (N, k, k)
        np.testing.assert_allclose(e, np.swapaxes(e, 1, 2))
        assert np.all(np.linalg.eigvalsh(e) > 0)
    # Fisher identity: E_y[h(y, f)] = expected_hessian(f) for y drawn from the model at f.
    spec = SPECS[obj.name]
    f0 = np.asarray(spec.model_margin, np.float64)
    ys = spec.model(np.random.default_rng(7), f0, obj.hyperparameters, 40_000)
    fs = np.broadcast_to(f0, (len(ys),) + f0.shape)
    _, _, h = autodiff64(obj, ys, fs)
    with jax.enable_x64(True):
        e0 = np.asarray(obj.row_expected_hessian()(jnp.float64(0.0), jnp.asarray(f0)))
    np.testing.assert_allclose(h.mean(axis=0), e0, rtol=0.05, atol=0.03)


# --- 6. label checks --------------------------------------------------------------------


@pytest.mark.parametrize("obj", CASES, ids=case_id)
def test_label_checks(obj):
    spec = SPECS[obj.name]
    y, _ = rows(obj)
    if spec.good is None:
        assert obj.check_labels is None  # any finite label: nothing to check
        obj.validate_labels(y)
        return
    obj.validate_labels(y)  # the domain sample is valid
    obj.validate_labels(np.asarray(spec.good, np.float32))
    with pytest.raises(ValueError) as err:
        obj.validate_labels(np.asarray(spec.bad, np.float32))
    msg = str(err.value)
    assert obj.name in msg and "1 label(s)" in msg and "row 2" in msg, msg
    assert str(np.float32(spec.bad[2])) in msg, msg


def test_softmax_label_checks():
    sm = objectives.softmax
    for bad in ([0, 1, -1.0], [0, 2, 0.5]):
        with pytest.raises(ValueError, match="softmax"):
            sm.validate_labels(np.array(bad))
    sm.validate_labels(np.array([0.0, 5.0, 3.0]))  # n_classes None: any class index
    with pytest.raises(ValueError, match=r"softmax.*2 label\(s\).*row 1: 3\.0"):
        sm(n_classes=3).validate_labels(np.array([0.0, 3.0, 2.0, 4.0]))
    sm(n_classes=3).validate_labels(np.array([0.0, 1.0, 2.0]))


def test_hyperparameter_domains():
    bad = [
        (objectives.huber, "delta", 0.0),
        (objectives.pseudo_huber, "delta", -1.0),
        (objectives.quantile, "alpha", 1.0),
        (objectives.cauchy, "scale", 0.0),
        (objectives.tweedie, "power", 2.0),
        (objectives.focal, "gamma", -1.0),
    ]
    for entry, key, value in bad:
        with pytest.raises(ValueError, match=entry.name):  # refused when made ...
            entry(**{key: value})
        with pytest.raises(ValueError, match=entry.name):  # ... and by the loss itself
            entry.loss(1.0, 0.0, **{key: value})
    with pytest.raises(ValueError, match="tweedie"):
        objectives.tweedie.check_labels(np.ones(3), power=1.0)
    with pytest.raises(ValueError, match="softmax"):
        objectives.softmax(n_classes=4)(1.0, jnp.zeros(3))  # 3 margins for 4 classes


# --- 7. hashing and variants --------------------------------------------------------------


def test_variants_hash_by_value():
    a, b = objectives.huber(delta=2.0), objectives.huber(delta=2.0)
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != objectives.huber and a != objectives.huber(delta=3.0)
    assert a.hyperparameters == {"delta": 2.0} and repr(a) == "objectives.huber(delta=2.0)"
    assert objectives.huber.hyperparameters == {"delta": 1.0}
    with pytest.raises(TypeError, match="huber"):
        objectives.huber(dleta=2.0)
    with pytest.raises(TypeError, match="squared"):
        objectives.squared(alpha=0.5)
    for obj in CASES:
        assert hash(obj) == hash(dataclasses.replace(obj))
        assert obj.with_params() == obj

    traces = []

    def f(obj, x):
        traces.append(obj)
        return obj(x, x + 1.0)

    jf = jax.jit(f, static_argnums=0)
    jf(objectives.huber(delta=2.0), 1.0)
    jf(objectives.huber(delta=2.0), 2.0)  # an equal object: no new trace
    assert len(traces) == 1
    jf(objectives.huber(delta=2.5), 1.0)
    assert len(traces) == 2


def test_outputs():
    assert all(o.outputs == 1 for o in CASES if o.name not in ("softmax", "gaussian_nll"))
    assert objectives.gaussian_nll.outputs == 2
    assert objectives.softmax.outputs is None
    assert objectives.softmax(n_classes=4).outputs == 4
    resolved = objectives.softmax.resolve_outputs(np.array([0.0, 2.0, 1.0]))
    assert resolved.outputs == 3 and resolved == objectives.softmax(n_classes=3)


# --- 8. links -----------------------------------------------------------------------------


def test_links():
    o = objectives
    m = jnp.array([np.log(3.0), 0.0, -1.0], jnp.float32)
    np.testing.assert_allclose(o.squared.link(m), m)
    np.testing.assert_allclose(o.absolute.link(m), m)
    np.testing.assert_allclose(o.logistic.link(m), [0.75, 0.5, sig(-1.0)], rtol=1e-6)
    np.testing.assert_allclose(o.focal.link(m), o.logistic.link(m))
    np.testing.assert_allclose(o.exponential.link(m / 2), o.logistic.link(m), rtol=1e-6)
    for glm in (o.poisson, o.gamma, o.tweedie):
        np.testing.assert_allclose(glm.link(m), [3.0, 1.0, np.exp(-1.0)], rtol=1e-6)
    p = np.asarray(o.softmax.link(jnp.asarray(np.random.default_rng(0).normal(size=(5, 4)))))
    assert p.shape == (5, 4) and np.all(p > 0)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-6)
    r = np.asarray(o.gaussian_nll.link(jnp.array([[1.0, np.log(2.0)], [-3.0, 0.0]])))
    np.testing.assert_allclose(r, [[1.0, 2.0], [-3.0, 1.0]], rtol=1e-6)
    assert o.gaussian_nll.link(jnp.zeros((7, 2))).shape == (7, 2)


def test_hyperparameters_of_a_loss_that_cannot_be_hashed():
    """A loss's keyword defaults are read once per loss (a cache keyed by the loss);
    a callable without a hash still has its hyperparameters and variants."""

    class Scaled:
        __hash__ = None  # defines __eq__ and no hash, as some callable classes do

        def __eq__(self, other):
            return isinstance(other, Scaled)

        def __call__(self, y, p, *, scale=2.0):
            return scale * (y - p) ** 2

    obj = dataclasses.replace(objectives.squared, name="scaled", loss=Scaled())
    assert obj.hyperparameters == {"scale": 2.0}
    assert obj.with_params(scale=3.0).hyperparameters == {"scale": 3.0}
    assert obj.traced_split()[1] == {"scale": 2.0}
